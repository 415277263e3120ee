//===--- UnscaledSumCheck.cpp - mpnanny ------------------------------------===//
#include "UnscaledSumCheck.h"

#include "utils/HalfData.h"
#include "utils/ValueUses.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void UnscaledSumCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (knowledgeBase())
    Finder->addMatcher(knowledgeBaseCall().bind("call"), this);
}

// Owned through the knowledge base (`check: mpnanny-unscaled-sum`): sum, nansum,
// cumsum, cumsum_. Without shapes, "large" is decided by the spelling: a sum with no
// dimension adds every element of the tensor, and a running sum stores every prefix;
// a sum over one or two named dimensions of unknown size is left alone.
void UnscaledSumCheck::check(const MatchFinder::MatchResult &Result) {
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
