//===--- UnscaledSumCheck.h - mpnanny ----------------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_UNSCALEDSUMCHECK_H
#define MPNANNY_CHECKS_UNSCALEDSUMCHECK_H

#include "utils/OwnedOpCheck.h"

namespace clang::tidy::mpnanny {

/// Flags large reductions whose result is stored in half: sum() over all elements and
/// cumsum (and nansum, cumsum_) without an fp32 dtype or upcast: past 2048 (fp16) or
/// 256 (bf16) integers are no longer exact, and an fp16 total above 65504 is inf. Also
/// gradients accumulated over several backward passes into the .grad of half parameters.
///
/// For the user-facing documentation see: knowledge/mpnanny-unscaled-sum.md
class UnscaledSumCheck : public OwnedOpCheck {
public:
  using OwnedOpCheck::OwnedOpCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void checkGradientAccumulation(const CallExpr &Backward, ASTContext &Ctx);
};

} // namespace clang::tidy::mpnanny

#endif
