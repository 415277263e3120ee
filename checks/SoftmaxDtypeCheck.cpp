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
void SoftmaxDtypeCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  if (auto Found = ownedRisk(*Call, *Result.Context))
    reportOwned(*Found, *Result.Context);
}

} // namespace clang::tidy::mpnanny
