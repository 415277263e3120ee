//===--- MasterWeightsCheck.h - mpnanny --------------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_MASTERWEIGHTSCHECK_H
#define MPNANNY_CHECKS_MASTERWEIGHTSCHECK_H

#include "utils/MpnannyCheck.h"

namespace clang::tidy::mpnanny {

/// Flags an optimizer built over fp16/bf16 parameters with no fp32 master copy:
/// updates below half an ulp of a weight round away.
///
/// For the user-facing documentation see: knowledge/mpnanny-master-weights.md
class MasterWeightsCheck : public MpnannyCheck {
public:
  using MpnannyCheck::MpnannyCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
};

} // namespace clang::tidy::mpnanny

#endif
