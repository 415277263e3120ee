//===--- KernelHalfAccumulatorCheck.h - mpnanny ------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_KERNEL_KERNELHALFACCUMULATORCHECK_H
#define MPNANNY_CHECKS_KERNEL_KERNELHALFACCUMULATORCHECK_H

#include "utils/KernelCheck.h"

namespace clang::tidy::mpnanny {

/// Flags running sums kept in half inside kernels: a local of a half type (directly, or
/// scalar_t in a half instantiation) that a loop adds into (`sum += x`, `sum = sum + x`,
/// `acc = __hfma2(a, b, acc)`), unless the loop runs a small constant number of times; and
/// cuBLAS products that accumulate in fp16 (cublasHgemm, cublasGemmEx with CUDA_R_16F).
///
/// For the user-facing documentation see: knowledge/mpnanny-kernel-half-accumulator.md
class KernelHalfAccumulatorCheck : public kernel::KernelCheck {
public:
  using KernelCheck::KernelCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void checkUpdate(const Expr &Update, const VarDecl &Accumulator, ASTContext &Ctx);
  void checkGemm(const CallExpr &Call, ASTContext &Ctx);
};

} // namespace clang::tidy::mpnanny

#endif
