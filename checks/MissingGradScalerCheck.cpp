//===--- MissingGradScalerCheck.cpp - mpnanny ------------------------------===//
#include "MissingGradScalerCheck.h"

#include "utils/TorchCalls.h"
#include "utils/TrainingStep.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void MissingGradScalerCheck::registerCheckMatchers(MatchFinder *Finder) {
  Finder->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()), callee(functionDecl(hasName("backward"))))
          .bind("backward"),
      this);
}

/// A tensor some other code computed and left where this function reads it, like a parameter:
/// a global, an entry of a container (`storage[name]`, a binding's table of named tensors), or
/// a reference local bound to one. A member is the class's own state and is not among them.
static bool readFromStorage(const Expr *E, int Depth = 0) {
  E = ignoreConversions(E);
  if (!E || Depth > 4)
    return false;
  if (const auto *Subscript = dyn_cast<CXXOperatorCallExpr>(E))
    return Subscript->getOperator() == OO_Subscript && Subscript->getNumArgs() == 2 &&
           !isTensorType(Subscript->getArg(0)->getType());
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E))
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl())) {
      if (Var->hasGlobalStorage() && !Var->isStaticLocal())
        return true;
      return Var->getType()->isReferenceType() && !isa<ParmVarDecl>(Var) && Var->getInit() &&
             readFromStorage(Var->getInit(), Depth + 1);
    }
  return false;
}

static bool isFp16(kb::Precision P) {
  return P == kb::Precision::FP16 || P == kb::Precision::AutocastFP16;
}

void MissingGradScalerCheck::onStartOfTranslationUnit() {
  MpnannyCheck::onStartOfTranslationUnit();
  OnlyDiscardsGradients.reset();
}

void MissingGradScalerCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("backward");
  ASTContext &Ctx = *Result.Context;
  auto Loss = backwardLoss(*Call);
  if (!Loss)
    return;
  // Both findings are about the gradients an update uses: a unit that only throws its gradients
  // away (a benchmark of backward, a test of an op's gradient) loses nothing to either.
  if (!OnlyDiscardsGradients)
    OnlyDiscardsGradients = unitOnlyDiscardsGradients(Ctx);
  if (*OnlyDiscardsGradients)
    return;
  const PrecisionContext &Context = precisionContext(Ctx);
  std::string Spelled =
      isa<CXXMemberCallExpr>(Call) ? "Tensor::backward" : "torch::autograd::backward";

  PrecisionReason AtBackward = Context.at(*Call);
  // Only a switch seen in the code (here or in another file) says that autocast is still on
  // at the backward; a project that declares autocast says how its forwards run, not where
  // its regions end.
  bool SwitchedOnInCode = AtBackward.Where.isValid() || AtBackward.Elsewhere.valid();
  if (kb::isAutocast(AtBackward.Value) && SwitchedOnInCode) {
    Subject About{Call, nullptr, kb::RiskKind::PrecisionLoss, kb::Severity::Warning,
                  kb::toString(AtBackward.Value)};
    report(Ctx, About, Call->getExprLoc(),
           Spelled + "() runs while " + kb::toString(AtBackward.Value) +
               " is still enabled: PyTorch recommends leaving autocast before backward, whose "
               "ops already run in the dtype autocast chose for their forward ops",
           "call at::autocast::set_enabled(false) and at::autocast::clear_cache() after the "
           "loss is computed and before backward()",
           AtBackward);
  }

  if (isScaledBackward(*Call, *Loss, Ctx))
    return;
  // A loss handed in by the caller, or read from where other code stored it, may have been
  // scaled there: not provable here.
  const Expr *LossExpr = ignoreConversions(*Loss);
  if (readFromStorage(LossExpr))
    return;
  const Stmt *Origin = LossExpr;
  if (const auto *Ref = dyn_cast<DeclRefExpr>(LossExpr)) {
    const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
    if (!Var || isa<ParmVarDecl>(Var) || !Var->isLocalVarDecl())
      return;
    if (Var->getInit())
      Origin = Var->getInit();
  }
  PrecisionReason Producer = Context.at(*Origin);
  if (!isFp16(Producer.Value)) {
    if (Producer.Value != kb::Precision::FP32)
      return; // bf16 has fp32's range: no scaling needed
    // The loss may be fp32 while the forward before it ran in fp16 (autocast left
    // before the loss): its gradients flow back through fp16 activations.
    const FunctionDecl *F = Context.enclosingFunction(*Call);
    if (!F || !F->getBody())
      return;
    const SourceManager &SM = Ctx.getSourceManager();
    unsigned Before = orderOf(*Call, SM);
    bool SawBf16 = false;
    std::optional<PrecisionReason> Fp16;
    visitDescendants(F->getBody(), [&](const Stmt *S) {
      if (isa<CallExpr>(S) && orderOf(*S, SM) < Before) {
        PrecisionReason R = Context.at(*S);
        if (isFp16(R.Value) && !Fp16)
          Fp16 = R;
        SawBf16 |= R.Value == kb::Precision::BF16 || R.Value == kb::Precision::AutocastBF16;
      }
      return true;
    });
    if (!Fp16 || SawBf16)
      return;
    Producer = *Fp16;
  }
  Subject About{Call, nullptr, kb::RiskKind::Underflow, kb::Severity::Warning,
                kb::toString(kb::Format::FP16)};
  report(Ctx, About, Call->getExprLoc(),
         Spelled + "() on a loss whose forward ran in " + kb::toString(Producer.Value) +
             " with no loss scaling: gradients below 2.98e-8 (half of fp16's smallest "
             "subnormal, 5.96e-8) flush to 0 and those below 6.1e-5 lose precision, so small "
             "updates vanish",
         "scale the loss and unscale before the step: mpnanny::GradScaler "
         "scaler; scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update(); "
         "or train in bf16, which needs no loss scaling",
         Producer);
}

} // namespace clang::tidy::mpnanny
