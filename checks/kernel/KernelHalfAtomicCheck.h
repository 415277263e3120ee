//===--- KernelHalfAtomicCheck.h - mpnanny -----------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_KERNEL_KERNELHALFATOMICCHECK_H
#define MPNANNY_CHECKS_KERNEL_KERNELHALFATOMICCHECK_H

#include "utils/KernelCheck.h"

namespace clang::tidy::mpnanny {

/// Flags atomic additions (atomicAdd, gpuAtomicAdd, fastAtomicAdd: rules/kernel.yaml) into a
/// half or bf16 buffer: many threads adding into one element build a running sum in half,
/// which stops growing at 2048x (bf16: 256x) its addend.
///
/// For the user-facing documentation see: knowledge/mpnanny-kernel-half-atomic.md
class KernelHalfAtomicCheck : public kernel::KernelCheck {
public:
  using KernelCheck::KernelCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
};

} // namespace clang::tidy::mpnanny

#endif
