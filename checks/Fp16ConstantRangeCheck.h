//===--- Fp16ConstantRangeCheck.h - mpnanny ----------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_FP16CONSTANTRANGECHECK_H
#define MPNANNY_CHECKS_FP16CONSTANTRANGECHECK_H

#include "utils/MpnannyCheck.h"
#include "utils/RangeAnalysis.h"
#include "utils/TorchCalls.h"
#include <memory>

namespace clang::tidy::mpnanny {

/// Flags literals the half format of the tensor cannot hold: fill values and bounds
/// beyond its largest finite value (`masked_fill(mask, -1e9)` in fp16), and eps
/// values that round to zero (`AdamOptions(...).eps(1e-8)`, `x + 1e-8` in fp16, an options
/// default left in place), and half tensors multiplied by or added to such a literal
/// (`(1 - mask) * -1e9`), and constants whose rounding in the format removes the margin the
/// code keeps: a clamp bound below 1 stored as 1 (`clamp(p, 1e-7, 1 - 1e-7)` in fp16), an eps
/// lost in the constant it is added to (`(1 + 1e-3) - p` in bf16). Values are followed
/// through locals, parameters and members.
///
/// For the user-facing documentation see: knowledge/mpnanny-fp16-constant-range.md
class Fp16ConstantRangeCheck : public MpnannyCheck {
public:
  using MpnannyCheck::MpnannyCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
  void onStartOfTranslationUnit() override;

private:
  void checkValueArguments(const CallExpr &Call, ASTContext &Ctx);
  /// A clamp bound inside (-1, 1) that the format stores as the unit it keeps away from
  /// (`clamp(p, 1e-7, 1 - 1e-7)` in fp16); true when reported.
  bool checkBoundOntoUnit(const CallExpr &Call, const TorchCall &TC, const kb::Op &Op,
                          const Expr *Arg, kb::Format Format, const PrecisionReason &Why,
                          ASTContext &Ctx);
  void checkOptionSetter(const CXXMemberCallExpr &Call, ASTContext &Ctx);
  /// Options objects passed without the setter of a default the format cannot hold
  /// (`F::normalize(x, F::NormalizeFuncOptions().dim(1))`: eps 1e-12 is 0 in fp16).
  void checkOptionDefaults(const Expr &Call, llvm::ArrayRef<const Expr *> Args,
                           std::optional<kb::Format> Format, ASTContext &Ctx);
  void checkEpsilonAddition(const CXXOperatorCallExpr &Op, ASTContext &Ctx);
  void checkOutOfRangeOperand(const CXXOperatorCallExpr &Op, ASTContext &Ctx);
  void checkLostEpsilon(const CXXOperatorCallExpr &Op, ASTContext &Ctx);
  /// The tensors' formats (autocast policies, inputs fp32 under autocast), per TU.
  std::unique_ptr<RangeAnalysis> Ranges;
};

} // namespace clang::tidy::mpnanny

#endif
