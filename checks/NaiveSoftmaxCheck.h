//===--- NaiveSoftmaxCheck.h - mpnanny ---------------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_NAIVESOFTMAXCHECK_H
#define MPNANNY_CHECKS_NAIVESOFTMAXCHECK_H

#include "utils/MpnannyCheck.h"
#include "utils/RangeAnalysis.h"

namespace clang::tidy::mpnanny {

/// Flags a hand-written softmax, `exp(x) / exp(x).sum(dim)`, whose exp runs in fp16
/// on an argument not shifted by its maximum: it overflows for x > 11.09.
///
/// For the user-facing documentation see: knowledge/mpnanny-naive-softmax.md
class NaiveSoftmaxCheck : public MpnannyCheck {
public:
  using MpnannyCheck::MpnannyCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
  void onStartOfTranslationUnit() override;

private:
  void checkDivision(const Expr &Division, const Expr *Numerator, const Expr *Denominator,
                     ASTContext &Ctx);
  std::unique_ptr<RangeAnalysis> Ranges;
};

/// `x - x.amax(dim, true)`, `x - std::get<0>(x.max(dim, true))`, `x - m` with a local
/// `m` holding such a maximum (locals followed to their initializers): the shift that
/// makes exp safe.
} // namespace clang::tidy::mpnanny

#endif
