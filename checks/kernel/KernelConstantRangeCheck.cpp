//===--- KernelConstantRangeCheck.cpp - mpnanny ----------------------------===//
#include "KernelConstantRangeCheck.h"

#include "clang/AST/ExprCXX.h"
#include <cmath>

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

using namespace kernel;

void KernelConstantRangeCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (!knowledgeBase())
    return;
  // float -> at::Half, __half: the converting constructor, implicit or in a cast.
  Finder->addMatcher(
      cxxConstructExpr(argumentCountIs(1), unless(isExpansionInSystemHeader())).bind("construct"),
      this);
  // float -> _Float16, __bf16: a floating conversion.
  Finder->addMatcher(
      castExpr(hasType(realFloatingPointType()), unless(isExpansionInSystemHeader())).bind("cast"),
      this);
  // __float2half(-1e30f)
  Finder->addMatcher(callExpr(argumentCountIs(1), unless(isExpansionInSystemHeader())).bind("call"),
                     this);
}

void KernelConstantRangeCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  if (const auto *Construct = Result.Nodes.getNodeAs<CXXConstructExpr>("construct")) {
    const Expr *Value = Construct->getArg(0);
    if (!Value->getType()->isArithmeticType())
      return;
    if (auto Format = halfFormat(Construct->getType()))
      checkConversion(*Construct, *Value, *Format, Construct->getType(), Ctx);
  } else if (const auto *Cast = Result.Nodes.getNodeAs<CastExpr>("cast")) {
    if (Cast->getCastKind() != CK_FloatingCast && Cast->getCastKind() != CK_IntegralToFloating)
      return;
    if (auto Format = halfFormat(Cast->getType()))
      checkConversion(*Cast, *Cast->getSubExpr(), *Format, Cast->getType(), Ctx);
  } else if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call")) {
    const kb::KernelName *ToHalf = rule(*Call, "to-half");
    if (ToHalf && ToHalf->In)
      checkConversion(*Call, *Call->getArg(0), *ToHalf->In, Call->getType(), Ctx);
  }
}

/// The value of a constant expression (1e-8, -FLT_MAX, 1 << 20), if it is one.
static std::optional<double> constantValue(const Expr *E, const ASTContext &Ctx) {
  if (!E || E->isValueDependent() || E->isTypeDependent())
    return std::nullopt;
  Expr::EvalResult Result;
  if (!E->EvaluateAsRValue(Result, Ctx) || Result.HasSideEffects)
    return std::nullopt;
  if (Result.Val.isFloat())
    return Result.Val.getFloat().convertToDouble();
  if (Result.Val.isInt())
    return static_cast<double>(Result.Val.getInt().getExtValue());
  return std::nullopt;
}

void KernelConstantRangeCheck::checkConversion(const Expr &Conversion, const Expr &Value,
                                               kb::Format Format, QualType HalfType,
                                               ASTContext &Ctx) {
  const FormatLimits &Limits = limitsOf(Format);
  const char *Name = kb::toString(Format);
  // The value as written, before the conversions to float that come with it.
  const Expr *Written = Value.IgnoreParenImpCasts();
  if (std::optional<double> V = constantValue(Written, Ctx)) {
    // An infinity written as one is meant (a -inf mask); a finite value that becomes one is not.
    if (!std::isfinite(*V))
      return;
    // Past the largest finite value by half its ulp, round-to-nearest gives inf (65520 in fp16).
    const double RoundsToInf = Limits.Max + Limits.Epsilon * Limits.Max / (2 - Limits.Epsilon) / 2;
    if (std::fabs(*V) >= RoundsToInf) {
      reportOnce(Ctx, Conversion, Written->getBeginLoc(), Format, kb::RiskKind::Overflow, HalfType,
                 formatNumber(*V) + " becomes " + formatNumber(std::copysign(INFINITY, *V)) +
                     " in " + Name + " (largest finite value " + formatNumber(Limits.Max) + ")",
                 std::string("use a value the format holds (-") + formatNumber(Limits.Max) +
                     ", std::numeric_limits<scalar_t>::lowest()), or keep the value in the "
                     "float accumulator");
    } else if (*V != 0 && std::fabs(*V) < Limits.flushBelow()) {
      reportOnce(Ctx, Conversion, Written->getBeginLoc(), Format, kb::RiskKind::Underflow, HalfType,
                 formatNumber(*V) + " becomes 0 in " + Name + " (smallest subnormal " +
                     formatNumber(Limits.MinSubnormal) + ")",
                 std::string("use a value of at least ") + formatNumber(Limits.MinNormal) +
                     " (the smallest normal), or apply it in float before the conversion");
    }
    return;
  }
  // `scalar_t d = var + 1e-8`: an eps that rounds away in the sum's format guards nothing.
  const Expr *Sum = throughConversions(&Value);
  const Expr *Left = nullptr, *Right = nullptr;
  if (const auto *Op = dyn_cast<BinaryOperator>(Sum); Op && Op->getOpcode() == BO_Add) {
    Left = Op->getLHS();
    Right = Op->getRHS();
  } else if (const auto *Call = dyn_cast<CXXOperatorCallExpr>(Sum);
             Call && Call->getOperator() == OO_Plus && Call->getNumArgs() == 2) {
    Left = Call->getArg(0);
    Right = Call->getArg(1);
  }
  if (!Left || !Right)
    return;
  for (const Expr *Operand : {Left, Right}) {
    const Expr *Eps = Operand->IgnoreParenImpCasts();
    std::optional<double> V = constantValue(Eps, Ctx);
    if (!V || *V == 0 || std::fabs(*V) >= Limits.flushBelow())
      continue;
    reportOnce(Ctx, Conversion, Eps->getBeginLoc(), Format, kb::RiskKind::Underflow, HalfType,
               "eps " + formatNumber(*V) + " is lost when the sum is stored in " + Name +
                   ": below half its smallest subnormal " + formatNumber(Limits.MinSubnormal) +
                   ", x + " + formatNumber(*V) + " rounds to x and 0 stays 0",
               std::string("use an eps of at least ") + formatNumber(Limits.MinNormal) + " in " +
                   Name + ", or add it in float (at::acc_type) before the division");
    return;
  }
}

} // namespace clang::tidy::mpnanny
