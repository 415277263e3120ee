//===--- SoftmaxDtypeCheck.h - mpnanny ---------------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_SOFTMAXDTYPECHECK_H
#define MPNANNY_CHECKS_SOFTMAXDTYPECHECK_H

#include "utils/OwnedOpCheck.h"

namespace clang::tidy::mpnanny {

/// Flags softmax, log_softmax, softmin, prod, cumprod and the norms computed on fp16
/// data outside autocast without an fp32 dtype or upcast: their results leave fp16's
/// range (probabilities below 2.98e-8 become 0, products and norms above 65504 are inf).
///
/// For the user-facing documentation see: knowledge/mpnanny-softmax-dtype.md
class SoftmaxDtypeCheck : public OwnedOpCheck {
public:
  using OwnedOpCheck::OwnedOpCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
};

} // namespace clang::tidy::mpnanny

#endif
