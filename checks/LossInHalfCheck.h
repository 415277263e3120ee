//===--- LossInHalfCheck.h - mpnanny -----------------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_LOSSINHALFCHECK_H
#define MPNANNY_CHECKS_LOSSINHALFCHECK_H

#include "utils/OwnedOpCheck.h"

namespace clang::tidy::mpnanny {

/// Flags losses computed on half data where the kernels let a value leave the format: the
/// built-in losses whose rule carries a warning (mse_loss squares in half), those called with
/// a sum reduction or label smoothing (a sum stored in half), binary_cross_entropy (refused
/// under autocast, -inf logs in half), and hand-written losses in fp16 that square their
/// errors or sum them (a mean of unsquared terms accumulates in float and is not reported).
///
/// For the user-facing documentation see: knowledge/mpnanny-loss-in-half.md
class LossInHalfCheck : public OwnedOpCheck {
public:
  using OwnedOpCheck::OwnedOpCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  /// A built-in loss called with a sum reduction or label smoothing, whose rule documents
  /// the overflow of that sum (a note-level risk) in the format the call computes in.
  void checkReducedTotal(const CallExpr &Call, ASTContext &Ctx);
  /// A hand-written loss: a reduction of tensor arithmetic computed in fp16.
  void checkHandWritten(const Expr &Value, SourceLocation Loc, llvm::StringRef What,
                        ASTContext &Ctx);
};

} // namespace clang::tidy::mpnanny

#endif
