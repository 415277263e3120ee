//===--- GradScalerConfigCheck.h - mpnanny -----------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_GRADSCALERCONFIGCHECK_H
#define MPNANNY_CHECKS_GRADSCALERCONFIGCHECK_H

#include "utils/MpnannyCheck.h"

namespace clang::tidy::mpnanny {

/// Flags loss-scaler settings out of sane bounds (growth factor <= 1, backoff
/// outside (0, 1), init scale above 2^24 or below 1, growth interval below 100), a
/// static loss scale above 65504 multiplied into an fp16 loss, and
/// mpnanny::GradScaler unscaling the gradients of a model converted to fp16.
///
/// For the user-facing documentation see: knowledge/mpnanny-grad-scaler-config.md
class GradScalerConfigCheck : public MpnannyCheck {
public:
  using MpnannyCheck::MpnannyCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
  void onStartOfTranslationUnit() override;

private:
  void checkSetting(llvm::StringRef Name, const Expr *Value, const Stmt &At, ASTContext &Ctx);
  void checkStaticScale(const Expr &Product, const Expr *Tensor, const Expr *Factor,
                        ASTContext &Ctx);
  void checkUnscale(const CXXMemberCallExpr &Call, ASTContext &Ctx);
  bool mixedPrecision(ASTContext &Ctx);
  std::optional<bool> MixedPrecisionTU;
};

/// A product that scales a loss by hand (`loss * 131072.0`, `x * loss_scale`, a product fed
/// to backward()): the static loss scales this check reports, and others leave to it.
} // namespace clang::tidy::mpnanny

#endif
