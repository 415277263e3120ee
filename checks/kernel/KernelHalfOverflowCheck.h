//===--- KernelHalfOverflowCheck.h - mpnanny ---------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_KERNEL_KERNELHALFOVERFLOWCHECK_H
#define MPNANNY_CHECKS_KERNEL_KERNELHALFOVERFLOWCHECK_H

#include "utils/KernelCheck.h"

namespace clang::tidy::mpnanny {

/// Flags kernel arithmetic whose result overflows fp16 for ordinary inputs: an exponential kept
/// in fp16 without the maximum subtracted (`hexp(x)`, `(__half)expf(x)`,
/// `static_cast<scalar_t>(exp(x))` in the half instantiation: inf for x > 11.09), a square or an
/// area of fp16 values computed in fp16 (`x * x`, `__hmul(a, a)`, `(x2 - x1) * (y2 - y1)`: inf
/// past 255.9 per side), and a variance kept in fp16 passed to rsqrt (`hrsqrt(var)`).
///
/// For the user-facing documentation see: knowledge/mpnanny-kernel-half-overflow.md
class KernelHalfOverflowCheck : public kernel::KernelCheck {
public:
  using KernelCheck::KernelCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void checkExp(const CallExpr &Call, ASTContext &Ctx);
  void checkRsqrt(const CallExpr &Call, ASTContext &Ctx);
  void checkProduct(const Expr &Product, const Expr &Left, const Expr &Right, ASTContext &Ctx);
  bool isSubtraction(const Expr *E) const;
};

} // namespace clang::tidy::mpnanny

#endif
