//===--- RiskyOpCheck.h - mpnanny --------------------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_RISKYOPCHECK_H
#define MPNANNY_CHECKS_RISKYOPCHECK_H

#include "utils/MpnannyCheck.h"
#include "utils/RangeAnalysis.h"

namespace clang::tidy::mpnanny {

/// Flags a call of an op the knowledge base lists as risky in the format the call
/// computes in, given the precision context and autocast's policy for the op.
///
/// For the user-facing documentation see: knowledge/mpnanny-risky-op.md
class RiskyOpCheck : public MpnannyCheck {
public:
  using MpnannyCheck::MpnannyCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
  void onStartOfTranslationUnit() override;

private:
  /// Built on the first call of each translation unit.
  std::unique_ptr<RangeAnalysis> Ranges;
};

} // namespace clang::tidy::mpnanny

#endif
