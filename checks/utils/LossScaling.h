//===--- LossScaling.h - mpnanny ---------------------------------*- C++ -*-===//
//
// Loss scaling as a training step writes it: a scale factor, a loss scaled on its
// way to backward() (by a scaler, a multiplication, a rescaled local or a scaled
// gradient seed), and gradients unscaled before they are used. LibTorch has no
// GradScaler, so this recognizes the hand-rolled idioms too. Used by the
// training-loop checks and the constant checks (a product that scales a loss).
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_LOSSSCALING_H
#define MPNANNY_CHECKS_LOSSSCALING_H

#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"

namespace clang::tidy::mpnanny {

/// A loss scale factor: a constant above 1, or a value whose name says scale
/// (`scale`, `loss_scale_`, `scaler.get_scale()`), through local variables.
/// A scalar of unknown value also counts: better to miss a warning than to
/// report a scaled loss as unscaled.
bool isScaleFactor(const Expr *E, ASTContext &Ctx);
/// Whether the loss reaching a backward() was scaled on its way there: by a
/// scaler's scale(), by a multiplication with a scale factor, through locals
/// defined or rescaled (`loss *= scale`) before the backward in the same function,
/// or by a scaled gradient argument (`loss.backward(scale_tensor)`).
bool isScaledBackward(const CallExpr &Backward, const Expr *Loss, ASTContext &Ctx);

/// Unscaling of gradients: a scaler's unscale_(), a call whose name says unscale
/// (at::_amp_foreach_non_finite_check_and_unscale_, unscale_grads(...)), or a
/// division of gradients (`p.grad().div_(scale)`, `p.mutable_grad() /= scale`,
/// `p.grad().mul_(inv_scale)`); also a user function that does one of these.
bool unscalesGradients(const Stmt &S, ASTContext &Ctx);

/// A product that scales a loss: the tensor is named as a loss, the factor as a scale, or
/// the product is fed to backward().
bool isLossScaling(const Expr &Product, const Expr *Tensor, const Expr *Factor, ASTContext &Ctx);

} // namespace clang::tidy::mpnanny

#endif
