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
  std::optional<bool> CacheDisabled;
  llvm::SmallPtrSet<const Stmt *, 4> Reported; ///< loops already reported
};

} // namespace clang::tidy::mpnanny

#endif
