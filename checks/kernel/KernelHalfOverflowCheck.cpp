//===--- KernelHalfOverflowCheck.cpp - mpnanny -----------------------------===//
#include "KernelHalfOverflowCheck.h"

#include "clang/AST/ExprCXX.h"
#include "clang/Lex/Lexer.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

using namespace kernel;

void KernelHalfOverflowCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (!knowledgeBase())
    return;
  Finder->addMatcher(
      callExpr(unless(cxxOperatorCallExpr()), unless(isExpansionInSystemHeader())).bind("call"),
      this);
  Finder->addMatcher(
      binaryOperator(hasOperatorName("*"), unless(isExpansionInSystemHeader())).bind("product"),
      this);
  Finder->addMatcher(cxxOperatorCallExpr(hasOverloadedOperatorName("*"), argumentCountIs(2),
                                         unless(isExpansionInSystemHeader()))
                         .bind("product"),
                     this);
}

void KernelHalfOverflowCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call")) {
    if (rule(*Call, "exp"))
      checkExp(*Call, Ctx);
    else if (rule(*Call, "rsqrt"))
      checkRsqrt(*Call, Ctx);
    else if (rule(*Call, "multiply") && Call->getNumArgs() == 2)
      checkProduct(*Call, *Call->getArg(0), *Call->getArg(1), Ctx);
    return;
  }
  if (const auto *Op = Result.Nodes.getNodeAs<BinaryOperator>("product"))
    checkProduct(*Op, *Op->getLHS(), *Op->getRHS(), Ctx);
  else if (const auto *Op = Result.Nodes.getNodeAs<CXXOperatorCallExpr>("product"))
    checkProduct(*Op, *Op->getArg(0), *Op->getArg(1), Ctx);
}

bool KernelHalfOverflowCheck::isSubtraction(const Expr *E) const {
  E = throughConversions(E);
  if (const auto *Op = dyn_cast_or_null<BinaryOperator>(E))
    return Op->getOpcode() == BO_Sub;
  if (const auto *Op = dyn_cast_or_null<CXXOperatorCallExpr>(E))
    return Op->getOperator() == OO_Minus && Op->getNumArgs() == 2;
  if (const auto *Call = dyn_cast_or_null<CallExpr>(E))
    return rule(*Call, "subtract") != nullptr;
  return false;
}

void KernelHalfOverflowCheck::checkExp(const CallExpr &Call, ASTContext &Ctx) {
  if (Call.getNumArgs() != 1)
    return;
  // The exponential is kept in half: hexp returns it, or it is converted right away.
  const Expr *Kept = &Call;
  if (!halfFormat(Call.getType()))
    Kept = halfConversionOf(Call, *knowledgeBase(), Ctx);
  // bf16 has fp32's exponent range: exp overflows it where it overflows fp32.
  if (!Kept || halfFormat(Kept->getType()) != kb::Format::FP16)
    return;
  // exp(x - max) is at most 1.
  if (isSubtraction(Call.getArg(0)))
    return;
  reportOnce(Ctx, Call, Call.getBeginLoc(), kb::Format::FP16, kb::RiskKind::Overflow,
             Kept->getType(),
             Call.getDirectCallee()->getName().str() +
                 " kept in fp16 is inf for x > 11.09 (exp(11.09) = 65504)",
             "subtract the maximum first (exp(x - max), as a softmax does), or keep the result "
             "in float (at::opmath_type<scalar_t>)");
}

void KernelHalfOverflowCheck::checkRsqrt(const CallExpr &Call, ASTContext &Ctx) {
  if (Call.getNumArgs() != 1)
    return;
  // The variance as the code keeps it: the argument, or the value eps is added to.
  const Expr *Variance = throughConversions(Call.getArg(0));
  if (!halfFormat(Variance->getType()))
    if (const auto *Op = dyn_cast<BinaryOperator>(Variance); Op && Op->isAdditiveOp())
      Variance = throughConversions(Op->getLHS());
  if (!halfFormat(Variance->getType()))
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Variance);
        Op && Op->getOperator() == OO_Plus && Op->getNumArgs() == 2)
      Variance = throughConversions(Op->getArg(0));
  if (!halfFormat(Variance->getType()))
    if (const auto *Add = dyn_cast<CallExpr>(Variance); Add && rule(*Add, "accumulate"))
      Variance = throughConversions(Add->getArg(0));
  // bf16 holds fp32's range: a variance in bf16 loses digits, not the value.
  if (halfFormat(Variance->getType()) != kb::Format::FP16)
    return;
  reportOnce(Ctx, Call, Call.getBeginLoc(), kb::Format::FP16, kb::RiskKind::Overflow,
             Variance->getType(),
             Call.getDirectCallee()->getName().str() +
                 " of a variance kept in fp16: a variance above 65504 is inf and one below "
                 "5.96e-8 is 0, so the scale is 0 or inf",
             "compute the mean, the variance and the rsqrt in float (at::acc_type, "
             "__half2float) and convert only the normalized output");
}

/// The same value on both sides: `x * x`, `d[i] * d[i]`.
static bool sameValue(const Expr *A, const Expr *B, ASTContext &Ctx) {
  A = throughConversions(A);
  B = throughConversions(B);
  if (!A || !B)
    return false;
  if (Expr::isSameComparisonOperand(A, B))
    return true;
  const SourceManager &SM = Ctx.getSourceManager();
  auto Text = [&](const Expr *E) {
    return Lexer::getSourceText(CharSourceRange::getTokenRange(SM.getFileLoc(E->getBeginLoc()),
                                                               SM.getFileLoc(E->getEndLoc())),
                                SM, Ctx.getLangOpts());
  };
  llvm::StringRef TextA = Text(A), TextB = Text(B);
  return !TextA.empty() && TextA == TextB;
}

void KernelHalfOverflowCheck::checkProduct(const Expr &Product, const Expr &Left, const Expr &Right,
                                           ASTContext &Ctx) {
  // Computed in fp16: the product's own type (at::Half * at::Half is at::Half, __hmul returns
  // __half). bf16 products overflow only past 1.84e19.
  if (halfFormat(Product.getType()) != kb::Format::FP16)
    return;
  const bool Square = sameValue(&Left, &Right, Ctx);
  const bool Area = !Square && isSubtraction(&Left) && isSubtraction(&Right);
  if (!Square && !Area)
    return;
  reportOnce(Ctx, Product, Product.getBeginLoc(), kb::Format::FP16, kb::RiskKind::Overflow,
             Product.getType(),
             Square ? std::string("square computed in fp16 is inf for |x| > 255.9 "
                                  "(255.9 * 255.9 = 65504)")
                    : std::string("product of two differences (an area, a squared distance) "
                                  "computed in fp16 is inf once it passes 65504 (sides of 256)"),
             "convert to float before multiplying (float d = static_cast<float>(x); d * d) and "
             "keep the result in float");
}

} // namespace clang::tidy::mpnanny
