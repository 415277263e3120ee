//===--- ClipBeforeUnscaleCheck.cpp - mpnanny ------------------------------===//
#include "ClipBeforeUnscaleCheck.h"

#include "TorchCalls.h"
#include "TrainingStep.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void ClipBeforeUnscaleCheck::registerCheckMatchers(MatchFinder *Finder) {
  Finder->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()),
               callee(functionDecl(hasAnyName("::torch::nn::utils::clip_grad_norm_",
                                              "::torch::nn::utils::clip_grad_value_"))))
          .bind("clip"),
      this);
}

void ClipBeforeUnscaleCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Clip = Result.Nodes.getNodeAs<CallExpr>("clip");
  ASTContext &Ctx = *Result.Context;
  if (!isClipGradCall(*Clip))
    return;
  const PrecisionContext &Context = precisionContext(Ctx);
  const FunctionDecl *F = Context.enclosingFunction(*Clip);
  if (!F || !F->getBody() || !usesMixedPrecision(*F, Context))
    return;
  const SourceManager &SM = Ctx.getSourceManager();
  unsigned ClipAt = orderOf(*Clip, SM);

  // The last backward() before the clip, and whether it was scaled.
  const CallExpr *Backward = nullptr;
  std::optional<const Expr *> BackwardLoss;
  forEachStatement(*F, [&](const Stmt &S) {
    const auto *Call = dyn_cast<CallExpr>(&S);
    if (!Call || orderOf(S, SM) >= ClipAt)
      return;
    if (auto Loss = backwardLoss(*Call))
      if (!Backward || orderOf(*Backward, SM) < orderOf(S, SM)) {
        Backward = Call;
        BackwardLoss = Loss;
      }
  });
  if (!Backward || !isScaledBackward(*Backward, *BackwardLoss, Ctx))
    return;
  unsigned BackwardAt = orderOf(*Backward, SM);

  // Any unscaling between the backward and the clip: statements that start in
  // between, at the top of each statement so that a helper is entered once.
  bool Unscaled = false;
  visitDescendants(F->getBody(), [&](const Stmt *S) {
    if (Unscaled)
      return false;
    unsigned At = orderOf(*S, SM);
    unsigned End = SM.getFileOffset(SM.getExpansionLoc(S->getEndLoc()));
    if (End >= ClipAt)
      return true; // holds the clip: look inside, before it
    if (At > BackwardAt && unscalesGradients(*S, Ctx)) {
      Unscaled = true;
      return false;
    }
    return true;
  });
  if (Unscaled)
    return;

  const auto *Callee = Clip->getDirectCallee();
  std::string Spelled = "torch::nn::utils::" + Callee->getNameAsString();
  PrecisionReason Why = Context.at(*Backward);
  if (Why.Value == kb::Precision::FP32)
    Why = Context.at(*Clip);
  Subject About{Clip, nullptr, "precision-loss", "warning", kb::toString(Why.Value)};
  report(Ctx, About, Clip->getExprLoc(),
         Spelled + " clips gradients that are still multiplied by the loss scale (65536 by "
                   "default): the threshold is compared with scaled values, so the clip "
                   "shrinks every step or never applies",
         "unscale first: scaler.unscale_(optimizer) (or divide the gradients by the scale) "
         "before " + Spelled + ", then scaler.step(optimizer)",
         Why);
}

} // namespace clang::tidy::mpnanny
