//===--- AutocastCacheCheck.h - mpnanny --------------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_AUTOCASTCACHECHECK_H
#define MPNANNY_CHECKS_AUTOCASTCACHECHECK_H

#include "utils/MpnannyCheck.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <vector>

namespace clang::tidy::mpnanny {

/// Flags an optimizer step (or an in-place weight update) inside a training loop
/// that runs its forward under autocast and never calls at::autocast::clear_cache():
/// the cache of half weights outlives the update and the forward reuses stale weights.
/// Also flags a switch that turns autocast off without clearing the cache, in a unit that
/// updates weights and where nothing clears it: Python's autocast exit clears, C++'s does not.
///
/// For the user-facing documentation see: knowledge/mpnanny-autocast-cache.md
class AutocastCacheCheck : public MpnannyCheck {
public:
  using MpnannyCheck::MpnannyCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
  void onStartOfTranslationUnit() override;

private:
  bool calledInUnclearedLoop(const FunctionDecl &F, ASTContext &Ctx);
  bool cacheDisabled(ASTContext &Ctx);
  void checkSwitchOff(const CallExpr &Off, ASTContext &Ctx);
  std::optional<bool> CacheDisabled;
  std::optional<const CallExpr *> WeightUpdate; ///< the unit's first, once searched
  llvm::SmallPtrSet<const Stmt *, 4> Reported;  ///< loops already reported
};

} // namespace clang::tidy::mpnanny

#endif
