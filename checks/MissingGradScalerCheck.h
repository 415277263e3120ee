//===--- MissingGradScalerCheck.h - mpnanny ----------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_MISSINGGRADSCALERCHECK_H
#define MPNANNY_CHECKS_MISSINGGRADSCALERCHECK_H

#include "utils/MpnannyCheck.h"
#include <optional>

namespace clang::tidy::mpnanny {

/// Flags backward() on a loss computed in fp16 (a half model or fp16 autocast)
/// with no loss scaling on its way there, and backward() called while autocast is
/// still enabled. bf16 needs no scaling and is not flagged.
///
/// For the user-facing documentation see: knowledge/mpnanny-missing-grad-scaler.md
class MissingGradScalerCheck : public MpnannyCheck {
public:
  using MpnannyCheck::MpnannyCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
  void onStartOfTranslationUnit() override;

private:
  /// unitOnlyDiscardsGradients, worked out once per translation unit.
  std::optional<bool> OnlyDiscardsGradients;
};

} // namespace clang::tidy::mpnanny

#endif
