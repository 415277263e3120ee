//===--- LossInHalfCheck.h - mpnanny -----------------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_LOSSINHALFCHECK_H
#define MPNANNY_CHECKS_LOSSINHALFCHECK_H

#include "utils/OwnedOpCheck.h"

namespace clang::tidy::mpnanny {

/// Flags losses computed on half data: the built-in losses in a model converted to half,
/// binary_cross_entropy under autocast (refused by PyTorch), and hand-written losses
/// (a reduction of tensor arithmetic stored in a *loss* variable or backpropagated) in fp16.
///
/// For the user-facing documentation see: knowledge/mpnanny-loss-in-half.md
class LossInHalfCheck : public OwnedOpCheck {
public:
  using OwnedOpCheck::OwnedOpCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  /// A hand-written loss: a reduction of tensor arithmetic computed in fp16.
  void checkHandWritten(const Expr &Value, SourceLocation Loc, llvm::StringRef What,
                        ASTContext &Ctx);
};

} // namespace clang::tidy::mpnanny

#endif
