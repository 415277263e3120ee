//===--- MasterWeightsCheck.cpp - mpnanny ----------------------------------===//
#include "MasterWeightsCheck.h"

#include "utils/TorchCalls.h"
#include "utils/TrainingStep.h"
#include "utils/ValueFlow.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void MasterWeightsCheck::registerCheckMatchers(MatchFinder *Finder) {
  auto Optimizer = cxxRecordDecl(isSameOrDerivedFrom(hasName("::torch::optim::Optimizer")));
  Finder->addMatcher(cxxConstructExpr(unless(isExpansionInSystemHeader()),
                                      hasDeclaration(cxxConstructorDecl(ofClass(Optimizer))))
                         .bind("construct"),
                     this);
  Finder->addMatcher(
      callExpr(unless(isExpansionInSystemHeader()),
               callee(functionDecl(hasAnyName("::std::make_shared", "::std::make_unique"))))
          .bind("make"),
      this);
}

void MasterWeightsCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  const Expr *Construction = Result.Nodes.getNodeAs<CXXConstructExpr>("construct");
  if (!Construction)
    Construction = Result.Nodes.getNodeAs<CallExpr>("make");
  const Expr *Params = constructedOptimizerParameters(Construction);
  if (!Params)
    return;
  const PrecisionContext &Context = precisionContext(Ctx);
  const FunctionDecl *F = Context.enclosingFunction(*Construction);
  if (!F || !F->getBody() || replacedLater(*Construction, F, Ctx))
    return;
  auto Format = parameterFormat(Params, *F, Context, Ctx);
  if (!Format)
    return;
  std::string Optimizer = "optimizer";
  QualType T = Construction->getType();
  if (const auto *Make = dyn_cast<CallExpr>(Construction))
    if (const auto *Args = Make->getDirectCallee()->getTemplateSpecializationArgs())
      T = Args->get(0).getAsType();
  if (const auto *RD = T->getAsCXXRecordDecl())
    Optimizer = RD->getQualifiedNameAsString();
  bool Bf16 = Format->Value == kb::Format::BF16;
  const char *Name = kb::toString(Format->Value);
  Subject About{Construction, nullptr, kb::RiskKind::PrecisionLoss, kb::Severity::Warning, Name};
  PrecisionReason Why{Bf16 ? kb::Precision::BF16 : kb::Precision::FP16, Format->Where, Format->Why};
  report(Ctx, About, Construction->getBeginLoc(),
         Optimizer + " updates " + Name +
             " parameters in place with no fp32 master copy: an update smaller than half an "
             "ulp of the weight (" +
             (Bf16 ? "0.2-0.4 %" : "0.02-0.05 %") + " of |w| in " + Name +
             ") rounds away, so small learning rates stop training",
         "keep fp32 master weights: give the optimizer fp32 copies "
         "(p.detach().to(torch::kFloat).requires_grad_()), copy the half gradients into them "
         "before step() and the updated values back after it; or keep the model in fp32 and "
         "use autocast",
         Why);
}

} // namespace clang::tidy::mpnanny
