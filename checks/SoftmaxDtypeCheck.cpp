//===--- SoftmaxDtypeCheck.cpp - mpnanny -----------------------------------===//
#include "SoftmaxDtypeCheck.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void SoftmaxDtypeCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (knowledgeBase())
    Finder->addMatcher(knowledgeBaseCall().bind("call"), this);
}

// The knowledge base decides which ops are this check's (`check: mpnanny-softmax-dtype`:
// softmax, log_softmax, softmin, prod, cumprod, norm, linalg_vector_norm,
// linalg_matrix_norm) and what each risks in which format.
// A vector norm over named dimensions of unknown size is left alone, as the unscaled-sum
// check leaves such a sum: ATen accumulates it in float, and a row of d elements passes
// 65504 only when its RMS passes 65504 / sqrt(d) (1023 for d = 4096), where the values
// themselves are already at fp16's limit. The whole-tensor norm (the gradient norm) is
// the one that overflows.
void SoftmaxDtypeCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  auto Found = ownedRisk(*Call, *Result.Context);
  if (!Found)
    return;
  llvm::StringRef Name = Found->Call.Name;
  bool VectorNorm = Name == "norm" || Name == "linalg_vector_norm" || Name == "vector_norm";
  if (VectorNorm && namesDimensions(Found->Call))
    return;
  reportOwned(*Found, *Result.Context);
}

} // namespace clang::tidy::mpnanny
