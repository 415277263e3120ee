//===--- ClipBeforeUnscaleCheck.h - mpnanny ----------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_CLIPBEFOREUNSCALECHECK_H
#define MPNANNY_CHECKS_CLIPBEFOREUNSCALECHECK_H

#include "utils/MpnannyCheck.h"

namespace clang::tidy::mpnanny {

/// Flags gradient clipping (torch::nn::utils::clip_grad_norm_ / clip_grad_value_)
/// after a scaled backward() and before the gradients are unscaled: the clip then
/// compares scaled gradients with an unscaled threshold.
///
/// For the user-facing documentation see: knowledge/mpnanny-clip-before-unscale.md
class ClipBeforeUnscaleCheck : public MpnannyCheck {
public:
  using MpnannyCheck::MpnannyCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
};

} // namespace clang::tidy::mpnanny

#endif
