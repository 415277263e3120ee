//===--- ClipBeforeUnscaleCheck.cpp - mpnanny ------------------------------===//
#include "ClipBeforeUnscaleCheck.h"

#include "utils/TorchCalls.h"
#include "utils/TrainingStep.h"

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

/// A number the code shows for E: a literal or constant expression, or a local
/// `const float scale = 1024.f;` followed to its initializer.
static std::optional<double> visibleNumber(const Expr *E, ASTContext &Ctx) {
  if (auto V = evaluateNumber(E, Ctx))
    return V;
  const auto *Ref = dyn_cast_or_null<DeclRefExpr>(ignoreConversions(E));
  const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  if (Var && Var->getType().isConstQualified() && Var->getInit() &&
      !Var->getType()->isReferenceType())
    return evaluateNumber(Var->getInit(), Ctx);
  return std::nullopt;
}

/// The static loss scale the backward's loss is multiplied by, when the code shows it as
/// a number: `(loss * 1024).backward()`, `loss.mul(scale)` with `const float scale = 1024`,
/// through locals initialized from such a product. std::nullopt for a scaler's scale.
static std::optional<double> visibleLossScale(const Expr *Loss, ASTContext &Ctx, int Depth = 0) {
  if (!Loss || Depth > 8)
    return std::nullopt;
  Loss = ignoreConversions(Loss);
  auto Factor = [&](const Expr *X) -> std::optional<double> {
    if (isTensorType(ignoreConversions(X)->getType()))
      return std::nullopt;
    auto V = visibleNumber(X, Ctx);
    return V && *V > 1 ? V : std::nullopt;
  };
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Loss)) {
    if (Op->getNumArgs() != 2 || (Op->getOperator() != OO_Star && Op->getOperator() != OO_Slash))
      return std::nullopt;
    if (Op->getOperator() == OO_Star)
      for (unsigned I = 0; I < 2; ++I)
        if (auto V = Factor(Op->getArg(I)))
          return V;
    for (unsigned I = 0; I < (Op->getOperator() == OO_Star ? 2u : 1u); ++I)
      if (isTensorType(Op->getArg(I)->getType()))
        if (auto V = visibleLossScale(Op->getArg(I), Ctx, Depth + 1))
          return V;
    return std::nullopt;
  }
  if (const auto *Call = dyn_cast<CallExpr>(Loss)) {
    auto TC = classifyTorchCall(*Call);
    if (!TC || TC->Kind != Spelling::Method || !TC->Self)
      return std::nullopt;
    if ((TC->Name == "mul" || TC->Name == "mul_") && !TC->Args.empty())
      if (auto V = Factor(TC->Args[0]))
        return V;
    return visibleLossScale(TC->Self, Ctx, Depth + 1);
  }
  if (const auto *Ref = dyn_cast<DeclRefExpr>(Loss))
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
        Var && Var->isLocalVarDecl() && Var->getInit())
      return visibleLossScale(Var->getInit(), Ctx, Depth + 1);
  return std::nullopt;
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
  // The scale the code shows (a static scale of 1024), else GradScaler's default.
  std::optional<double> Scale = visibleLossScale(*BackwardLoss, Ctx);
  std::string ScaleText = Scale ? formatNumber(*Scale) + " here" : std::string("65536 by default");
  Subject About{Clip, nullptr, kb::RiskKind::PrecisionLoss, kb::Severity::Warning,
                kb::toString(Why.Value)};
  report(Ctx, About, Clip->getExprLoc(),
         Spelled + " clips gradients that are still multiplied by the loss scale (" + ScaleText +
             "): the threshold is compared with scaled values, so the clip "
             "shrinks every step or never applies",
         "unscale first: scaler.unscale_(optimizer) (or divide the gradients by the scale) "
         "before " +
             Spelled + ", then scaler.step(optimizer)",
         Why);
}

} // namespace clang::tidy::mpnanny
