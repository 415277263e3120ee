//===--- KernelHalfAtomicCheck.cpp - mpnanny -------------------------------===//
#include "KernelHalfAtomicCheck.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

using namespace kernel;

void KernelHalfAtomicCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (!knowledgeBase())
    return;
  Finder->addMatcher(callExpr(unless(cxxOperatorCallExpr()), unless(isExpansionInSystemHeader()),
                              hasArgument(0, expr(hasType(pointerType()))))
                         .bind("call"),
                     this);
}

void KernelHalfAtomicCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  if (!Call || !rule(*Call, "atomic-add"))
    return;
  // The destination as the code names it: `&out[i]` of a `scalar_t *out`.
  QualType Destination = Call->getArg(0)->IgnoreParenImpCasts()->getType();
  std::optional<kb::Format> Format = halfPointeeFormatOf(Destination, *knowledgeBase());
  if (!Format)
    return;
  const char *Name = kb::toString(*Format);
  reportOnce(*Result.Context, *Call, Call->getBeginLoc(), *Format, kb::RiskKind::PrecisionLoss,
             Destination->getPointeeType(),
             Call->getDirectCallee()->getName().str() + " into " +
                 (*Format == kb::Format::BF16 ? "a " : "an ") + Name +
                 " buffer: the additions of all threads form a running sum in " + Name +
                 ", which stops growing at " + std::to_string(lastExactInteger(*Format)) +
                 "x its addend",
             "add into a float buffer (at::acc_type<scalar_t, true>) and convert it after the "
             "kernel, or reduce in float within the block and add once");
}

} // namespace clang::tidy::mpnanny
