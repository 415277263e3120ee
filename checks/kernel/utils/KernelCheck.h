//===--- KernelCheck.h - mpnanny ---------------------------------*- C++ -*-===//
//
// What the kernel checks share: the half formats of types (KernelTypes.h), and one finding per
// place in the source. A kernel's body is instantiated once per type its dispatch makes
// (double, float, Half, BFloat16), and the matchers see every instantiation: only the half
// ones can be findings, and the first of them is reported, naming its instantiation.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_KERNEL_UTILS_KERNELCHECK_H
#define MPNANNY_CHECKS_KERNEL_UTILS_KERNELCHECK_H

#include "KernelTypes.h"
#include "utils/MpnannyCheck.h"
#include <set>

namespace clang::tidy::mpnanny::kernel {

class KernelCheck : public MpnannyCheck {
public:
  using MpnannyCheck::MpnannyCheck;
  void onStartOfTranslationUnit() override;

protected:
  /// The half format values of T compute in (nullopt also without a knowledge base).
  std::optional<kb::Format> halfFormat(QualType T) const;
  /// The knowledge-base entry of Role naming the call's callee.
  const kb::KernelName *rule(const CallExpr &Call, const std::string &Role) const;

  /// One finding at Loc, unless Loc was reported already in this translation unit. HalfType
  /// is the half type of the value the finding is about: the note says which instantiation
  /// makes it half ("scalar_t = at::Half, from AT_DISPATCH_FLOATING_TYPES_AND_HALF at k.cpp:12").
  void reportOnce(ASTContext &Ctx, const Stmt &Node, SourceLocation Loc, kb::Format Format,
                  kb::RiskKind Risk, QualType HalfType, llvm::StringRef Message,
                  llvm::StringRef Fix, std::optional<FixItHint> Exact = std::nullopt);
  /// The same, for a call that computes in half whatever its types (cublasHgemm).
  void reportOnce(ASTContext &Ctx, const Stmt &Node, SourceLocation Loc, kb::Format Format,
                  kb::RiskKind Risk, const PrecisionReason &Why, llvm::StringRef Message,
                  llvm::StringRef Fix, std::optional<FixItHint> Exact = std::nullopt);

private:
  std::set<std::pair<FileID, unsigned>> Reported;
};

/// "the running sum stops growing at 2048x its addend": the last exact integer step of a format.
unsigned lastExactInteger(kb::Format Format);

} // namespace clang::tidy::mpnanny::kernel

#endif
