//===--- KernelConstantRangeCheck.h - mpnanny --------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_KERNEL_KERNELCONSTANTRANGECHECK_H
#define MPNANNY_CHECKS_KERNEL_KERNELCONSTANTRANGECHECK_H

#include "utils/KernelCheck.h"

namespace clang::tidy::mpnanny {

/// Flags constants converted to a half type in kernels that the format cannot hold: sentinels
/// and masks past its largest finite value (`static_cast<scalar_t>(-1e8)`,
/// `__float2half(-1e30f)`, `-FLT_MAX` as a half: inf, and inf - inf is NaN), values that round
/// to 0 (`(T)FLT_MIN` in fp16), and an eps that vanishes when added to a value stored in half
/// (`scalar_t d = var + 1e-8`).
///
/// For the user-facing documentation see: knowledge/mpnanny-kernel-constant-range.md
class KernelConstantRangeCheck : public kernel::KernelCheck {
public:
  using KernelCheck::KernelCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  /// Value converted to Format by Conversion.
  void checkConversion(const Expr &Conversion, const Expr &Value, kb::Format Format,
                       QualType HalfType, ASTContext &Ctx);
};

} // namespace clang::tidy::mpnanny

#endif
