//===--- TrainingStep.h - mpnanny --------------------------------*- C++ -*-===//
//
// What a training step does, in statement order within one function: backward(),
// gradient clipping, optimizer steps and in-place weight updates, autocast cache
// clears; and which parameters an optimizer is built over. How a loss is scaled and
// its gradients unscaled is LossScaling.h's. LibTorch has no GradScaler
// (pytorch/pytorch#44710), so most of this recognizes the hand-rolled idioms as
// well as mpnanny::GradScaler. Used by the training-loop checks.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_TRAININGSTEP_H
#define MPNANNY_CHECKS_TRAININGSTEP_H

#include "LossScaling.h"
#include "PrecisionContext.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include <functional>
#include <optional>
#include <string>

namespace clang::tidy::mpnanny {

/// What the compiler adds around an expression stripped, but not the constructions the
/// user wrote (unlike ignoreConversions, which sees through one-argument ones).
const Expr *stripImplicit(const Expr *E);
/// The variable at the root of `p`, `p.data()`, `kv.value()`, `*opt`, `model->x`.
const VarDecl *rootVariable(const Expr *E);
/// The same, where the root may also be a member of `this` (`_encoder->parameters()`).
const ValueDecl *rootDeclaration(const Expr *E);

/// Whether S calls grad() or mutable_grad() anywhere.
bool mentionsGrad(const Stmt *S);
/// Whether D is declared in a system header (LibTorch, the standard library).
bool inSystemHeader(const Decl &D);

/// Statement order: the file offset of the statement's start after macro expansion.
unsigned orderOf(const Stmt &S, const SourceManager &SM);

/// Calls Fn on every statement of the function's body (lambdas included).
void forEachStatement(const FunctionDecl &F, const std::function<void(const Stmt &)> &Fn);

/// A loss scaler: mpnanny::GradScaler, or a user class whose name says so
/// (LossScaler, AmpScaler, DynamicScaler...).
bool isScalerRecord(const CXXRecordDecl *RD);
/// The scaler method a call invokes (scale, unscale_, step, update), if any.
std::optional<std::string> scalerMethod(const CallExpr &Call);

/// torch::optim::Optimizer and every class derived from it.
bool isOptimizerRecord(const CXXRecordDecl *RD);

/// The loss of `loss.backward(...)` or `torch::autograd::backward({loss})`.
std::optional<const Expr *> backwardLoss(const CallExpr &Call);
/// torch::nn::utils::clip_grad_norm_ / clip_grad_value_.
bool isClipGradCall(const CallExpr &Call);
/// `optimizer.step()`, `optimizer->step()`, `scaler.step(optimizer)`.
bool isOptimizerStep(const CallExpr &Call);
/// at::autocast::clear_cache().
bool isAutocastCacheClear(const CallExpr &Call);
/// An in-place update of a parameter's value outside the optimizer:
/// `p.data().add_(...)`, or `p.sub_(lr * p.grad())` on a parameter under NoGradGuard.
bool isInPlaceWeightUpdate(const CallExpr &Call, ASTContext &Ctx);

/// Whether running S clears the autocast cache: at::autocast::clear_cache(), a
/// user function that calls it, or an object whose destructor calls it (a guard).
bool clearsAutocastCache(const Stmt &S);

/// Whether the translation unit's user code computes gradients only to throw them away: it
/// resets them (zero_grad(), `p.mutable_grad() = torch::Tensor()`, `p.grad().zero_()`) and
/// never steps an optimizer, updates a weight, clips, unscales, or reads a gradient. Such a
/// unit measures or tests backward(); it does not train.
bool unitOnlyDiscardsGradients(ASTContext &Ctx);

/// The first optimizer step or in-place weight update in the unit's user code, if any.
const CallExpr *firstWeightUpdate(ASTContext &Ctx);

/// Whether user code anywhere in the translation unit switches the autocast cache
/// off (`at::autocast::set_autocast_cache_enabled(false)`).
bool autocastCacheDisabled(ASTContext &Ctx);

/// The format of the parameters an optimizer is built over, and why: a model
/// converted with `->to(torch::kHalf)` in the same function, or a list of tensors
/// known to be half. std::nullopt when unknown or fp32.
struct ParameterFormat {
  kb::Format Value;
  SourceLocation Where;
  std::string Why;
};
std::optional<ParameterFormat> parameterFormat(const Expr *Params, const FunctionDecl &F,
                                               const PrecisionContext &Context, ASTContext &Ctx);
/// The parameters argument of an optimizer's construction that `Optimizer` names
/// (a local built from `torch::optim::Adam(params, ...)` or std::make_shared<Adam>).
const Expr *optimizerParameters(const Expr *Optimizer);
/// The format of the parameters of the optimizer `Optimizer` names (a local, or a member
/// built anywhere in the unit), when every construction of it agrees.
std::optional<ParameterFormat>
optimizerParameterFormat(const Expr *Optimizer, const PrecisionContext &Context, ASTContext &Ctx);
/// The parameters argument of an optimizer construction expression.
const Expr *constructedOptimizerParameters(const Expr *Construction);
/// The constructions of the optimizer `Optimizer` names: a local's initializer, or every value
/// the unit assigns a member, less one made in a constructor's member initializer and replaced
/// later (`init()` rebuilds it after converting the model: the later one trains).
std::vector<const Expr *> optimizerConstructions(const Expr *Optimizer,
                                                 const PrecisionContext &Context, ASTContext &Ctx);
/// Whether Construction is made in constructor F's member initializer of a member that the unit
/// assigns again.
bool replacedLater(const Expr &Construction, const FunctionDecl *F, ASTContext &Ctx);

/// The training loop around a statement of its function: the innermost loop that is not the
/// loop over the parameters (`for (auto &p : model->parameters())`, the update inside a step).
const Stmt *trainingLoopAround(const Stmt &S, ASTContext &Ctx);
/// Whether Region clears gradients that the objects Owners name accumulate: a zero_grad() of one
/// of them (an optimizer, a module) or of an object it cannot name, or any use of a tensor's
/// grad().
bool clearsGradients(const Stmt &Region, llvm::ArrayRef<const ValueDecl *> Owners);

/// Whether any code of the function, or any code of the translation unit, runs in
/// a precision other than plain fp32 (the checks report nothing in fp32 code).
bool usesMixedPrecision(const FunctionDecl &F, const PrecisionContext &Context);
bool translationUnitUsesMixedPrecision(ASTContext &Ctx, const PrecisionContext &Context);

} // namespace clang::tidy::mpnanny

#endif
