//===--- UnscaledSumCheck.cpp - mpnanny ------------------------------------===//
#include "UnscaledSumCheck.h"

#include "utils/HalfData.h"
#include "utils/TrainingStep.h"
#include "utils/ValueUses.h"
#include "clang/Basic/SourceManager.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void UnscaledSumCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (knowledgeBase())
    Finder->addMatcher(knowledgeBaseCall().bind("call"), this);
  Finder->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()), callee(functionDecl(hasName("backward"))))
          .bind("backward"),
      this);
}

/// The objects whose zero_grad() clears what an optimizer steps with: the optimizer and the
/// modules whose parameters() it was built over.
static std::vector<const ValueDecl *>
gradientOwners(const Expr *Optimizer, const std::vector<const Expr *> &Constructions) {
  std::vector<const ValueDecl *> Owners{rootDeclaration(Optimizer)};
  for (const Expr *Construction : Constructions)
    visitDescendants(constructedOptimizerParameters(Construction), [&](const Stmt *S) {
      if (const auto *Call = dyn_cast<CXXMemberCallExpr>(S))
        if (const CXXMethodDecl *M = Call->getMethodDecl();
            M && M->getIdentifier() && M->getName() == "parameters")
          Owners.push_back(rootDeclaration(Call->getImplicitObjectArgument()));
      return true;
    });
  return Owners;
}

// `for (b = 0; b < virtual_batch; ++b) { ...; loss.backward(); } optimizer->step();` over bf16
// parameters: autograd adds each pass's gradient into .grad, which has the parameter's dtype
// (AccumulateGrad: variable.grad += new_grad), so the passes are summed in half, a running sum
// that rounds at every addition.
void UnscaledSumCheck::checkGradientAccumulation(const CallExpr &Backward, ASTContext &Ctx) {
  if (!backwardLoss(Backward))
    return;
  const PrecisionContext &Context = precisionContext(Ctx);
  const FunctionDecl *F = Context.enclosingFunction(Backward);
  const Stmt *Loop = trainingLoopAround(Backward, Ctx);
  if (!F || !F->getBody() || !Loop)
    return;
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation LoopEndLoc = SM.getExpansionRange(Loop->getEndLoc()).getEnd();
  std::optional<ParameterFormat> Format;
  visitDescendants(F->getBody(), [&](const Stmt *S) {
    const auto *Call = dyn_cast<CXXMemberCallExpr>(S);
    if (Format || !Call || !isOptimizerStep(*Call) ||
        !SM.isBeforeInTranslationUnit(LoopEndLoc, SM.getExpansionLoc(Call->getBeginLoc())))
      return !Format;
    const Expr *Optimizer =
        scalerMethod(*Call) ? Call->getArg(0) : Call->getImplicitObjectArgument();
    auto Found = optimizerParameterFormat(Optimizer, Context, Ctx);
    if (!Found || Found->Value == kb::Format::FP32 ||
        clearsGradients(*Loop,
                        gradientOwners(Optimizer, optimizerConstructions(Optimizer, Context, Ctx))))
      return true;
    Format = Found;
    return false;
  });
  if (!Format)
    return;
  bool Bf16 = Format->Value == kb::Format::BF16;
  const char *Name = kb::toString(Format->Value);
  Subject About{&Backward, nullptr, kb::RiskKind::PrecisionLoss, kb::Severity::Warning, Name};
  PrecisionReason Why{Bf16 ? kb::Precision::BF16 : kb::Precision::FP16, Format->Where, Format->Why};
  report(Ctx, About, Backward.getBeginLoc(),
         std::string("backward() runs on every pass of this loop and the optimizer steps only "
                     "after it: each pass adds its gradient into the ") +
             Name + " .grad of " + Name + " parameters, a running sum rounded at every addition (" +
             (Bf16 ? "8 significant bits: a share below 1/256 of the total"
                   : "11 significant bits: a share below 1/2048 of the total") +
             " rounds away)",
         "accumulate in fp32: keep fp32 master parameters (train them and copy into the half "
         "model), or add each pass's gradients into fp32 buffers and copy them into .grad "
         "before step()",
         Why);
}

// Owned through the knowledge base (`check: mpnanny-unscaled-sum`): sum, nansum,
// cumsum, cumsum_. Without shapes, "large" is decided by the spelling: a sum with no
// dimension adds every element of the tensor, and a running sum stores every prefix;
// a sum over one or two named dimensions of unknown size is left alone.
void UnscaledSumCheck::check(const MatchFinder::MatchResult &Result) {
  if (const auto *Backward = Result.Nodes.getNodeAs<CallExpr>("backward")) {
    checkGradientAccumulation(*Backward, *Result.Context);
    return;
  }
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  auto Found = ownedRisk(*Call, *Result.Context);
  if (!Found)
    return;
  bool Running = llvm::StringRef(Found->Call.Name).starts_with("cum");
  if (!Running && !sumsAWholeSample(Found->Call, *Result.Context))
    return;
  // `x.sum().item<float>() == 0`: only the total's sign is read, and half keeps it.
  if (!Running && onlyComparedWithZero(*Call, *Result.Context))
    return;
  reportOwned(*Found, *Result.Context);
}

} // namespace clang::tidy::mpnanny
