//===--- UnsafeMathCheck.h - mpnanny -----------------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_UNSAFEMATHCHECK_H
#define MPNANNY_CHECKS_UNSAFEMATHCHECK_H

#include "utils/MpnannyCheck.h"
#include "utils/RangeAnalysis.h"

namespace clang::tidy::mpnanny {

/// Flags log, sqrt, rsqrt, reciprocal, a negative pow and a division whose argument
/// the range analysis shows may be 0 or negative, and an exp whose argument may pass
/// the format's limit (11.09 in fp16).
///
/// For the user-facing documentation see: knowledge/mpnanny-unsafe-math.md
class UnsafeMathCheck : public MpnannyCheck {
public:
  UnsafeMathCheck(StringRef Name, ClangTidyContext *Context);
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
  void onStartOfTranslationUnit() override;

private:
  void checkExp(const CallExpr &Call, const TorchCall &TC, const kb::Op &Op, const Interval &Arg,
                const PrecisionReason &Why, ASTContext &Ctx);
  void checkDivision(const Expr &Division, const Expr &Divisor, ASTContext &Ctx);
  bool riskyOpReports(const kb::Op &Op, kb::Format F) const;
  std::unique_ptr<RangeAnalysis> Ranges;
  /// True when the value may be 0 only through a guard the format stores as 0, which
  /// mpnanny-fp16-constant-range reports.
  bool leftToConstantRange(const Interval &Value) const;
  bool LogSoftmaxEnabled = false;
  bool RiskyOpEnabled = false;
  /// mpnanny-fp16-constant-range reports an eps or clamp bound the format stores as 0.
  bool ConstantRangeEnabled = false;
};

} // namespace clang::tidy::mpnanny

#endif
