//===--- Fp16ConstantRangeCheck.cpp - mpnanny ------------------------------===//
#include "Fp16ConstantRangeCheck.h"

#include "utils/TorchCalls.h"
#include "utils/TrainingStep.h"
#include "clang/AST/ASTContext.h"
#include <cmath>

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void Fp16ConstantRangeCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (!knowledgeBase())
    return;
  Finder->addMatcher(knowledgeBaseCall().bind("call"), this);
  Finder->addMatcher(cxxMemberCallExpr(unless(isExpansionInSystemHeader()), argumentCountIs(1),
                                       callee(cxxMethodDecl(ofClass(matchesName("Options$")))))
                         .bind("setter"),
                     this);
  Finder->addMatcher(
      cxxOperatorCallExpr(unless(isExpansionInSystemHeader()),
                          hasAnyOverloadedOperatorName("+", "-", "*", "+=", "-=", "*="))
          .bind("arith"),
      this);
}

void Fp16ConstantRangeCheck::check(const MatchFinder::MatchResult &Result) {
  if (const auto *Setter = Result.Nodes.getNodeAs<CXXMemberCallExpr>("setter"))
    checkOptionSetter(*Setter, *Result.Context);
  else if (const auto *Arith = Result.Nodes.getNodeAs<CXXOperatorCallExpr>("arith")) {
    OverloadedOperatorKind Kind = Arith->getOperator();
    if (Kind != OO_Star && Kind != OO_StarEqual)
      checkEpsilonAddition(*Arith, *Result.Context);
    checkOutOfRangeOperand(*Arith, *Result.Context);
  } else if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call"))
    checkValueArguments(*Call, *Result.Context);
}

void Fp16ConstantRangeCheck::onStartOfTranslationUnit() {
  MpnannyCheck::onStartOfTranslationUnit();
  Ranges.reset();
}

/// True when a non-zero value rounds to zero in the format.
static bool flushesToZero(double V, kb::Format F) {
  return V != 0 && std::fabs(V) < limitsOf(F).flushBelow();
}
static bool overflows(double V, kb::Format F) {
  return std::isfinite(V) && std::fabs(V) > limitsOf(F).Max;
}

void Fp16ConstantRangeCheck::checkValueArguments(const CallExpr &Call, ASTContext &Ctx) {
  auto TC = classifyTorchCall(Call);
  if (!TC)
    return;
  const kb::Op *Op = lookupOp(*TC, *knowledgeBase());
  if (!Op || Op->ValueArgs.empty())
    return;
  const PrecisionContext &Context = precisionContext(Ctx);
  PrecisionReason Why = Context.at(Call);
  if (Why.Value == kb::Precision::FP32)
    return;
  std::optional<kb::Format> Format = Context.computeFormatOf(*TC, Op);
  if (!Format || *Format == kb::Format::FP32)
    return;
  const FormatLimits &Limits = limitsOf(*Format);
  const char *Name = kb::toString(*Format);
  for (const kb::ValueArg &VA : Op->ValueArgs) {
    const Expr *Arg = valueArgument(*TC, *Op, VA.Index);
    if (!Arg)
      continue;
    auto V = evaluateNumber(Arg, Ctx);
    if (!V)
      continue;
    Subject About{&Call, Op, "", kb::toString(kb::Severity::Warning), Name};
    if (overflows(*V, *Format)) {
      About.Risk = "overflow";
      report(Ctx, About, Arg->getBeginLoc(),
             TC->spelled() + " " + VA.Role + " value " + formatNumber(*V) +
                 " cannot be represented in " + Name + " (largest finite value " +
                 formatNumber(Limits.Max) + "): the op fails or produces inf",
             VA.Role == "fill"
                 ? std::string("use a value the format holds, e.g. -1e4 for a mask in fp16, "
                               "or fill with -std::numeric_limits<float>::infinity() and "
                               "keep the softmax row from being fully masked")
                 : std::string("use a bound within ") + formatNumber(Limits.Max) +
                       ", or upcast with .to(torch::kFloat) first",
             Why);
    } else if (VA.Role != "fill" && flushesToZero(*V, *Format)) {
      About.Risk = "underflow";
      report(Ctx, About, Arg->getBeginLoc(),
             TC->spelled() + " " + VA.Role + " value " + formatNumber(*V) + " rounds to 0 in " +
                 Name + " (smallest subnormal " + formatNumber(Limits.MinSubnormal) + ")",
             std::string("use a value of at least ") + formatNumber(Limits.MinNormal) +
                 " (the smallest normal), or compute in fp32 with .to(torch::kFloat)",
             Why);
    }
  }
}

void Fp16ConstantRangeCheck::checkOptionSetter(const CXXMemberCallExpr &Call, ASTContext &Ctx) {
  const CXXMethodDecl *Method = Call.getMethodDecl();
  if (!Method || !Method->getIdentifier() || !Method->getParent()->getIdentifier())
    return;
  const kb::OptionValue *Option =
      knowledgeBase()->findOption(Method->getParent()->getName().str(), Method->getName().str());
  if (!Option)
    return;
  // Options configure modules and optimizers whose state has the parameters' type:
  // half only in a model converted to half, not under autocast (fp32 parameters).
  PrecisionReason Why = precisionContext(Ctx).at(Call);
  kb::Format Format;
  if (Why.Value == kb::Precision::FP16)
    Format = kb::Format::FP16;
  else if (Why.Value == kb::Precision::BF16)
    Format = kb::Format::BF16;
  else
    return;
  auto V = evaluateNumber(Call.getArg(0), Ctx);
  if (!V)
    return;
  const FormatLimits &Limits = limitsOf(Format);
  std::string Spelled = Option->Class + "::" + Option->Setter;
  Subject About{&Call, nullptr, "underflow", kb::toString(kb::Severity::Warning),
                kb::toString(Format)};
  if (flushesToZero(*V, Format))
    report(Ctx, About, Call.getArg(0)->getBeginLoc(),
           Spelled + "(" + formatNumber(*V) + ") is 0 in " + kb::toString(Format) +
               ": below the smallest subnormal " + formatNumber(Limits.MinSubnormal) + ", so the " +
               Option->Role + " no longer guards the division",
           std::string("use ") + Option->Setter + "(1e-4) or larger in " + kb::toString(Format) +
               ", or keep fp32 master weights and optimizer state",
           Why);
  else if (overflows(*V, Format))
    report(Ctx, (About.Risk = "overflow", About), Call.getArg(0)->getBeginLoc(),
           Spelled + "(" + formatNumber(*V) + ") cannot be represented in " + kb::toString(Format) +
               " (largest finite value " + formatNumber(Limits.Max) + ")",
           "use a value within the format's range", Why);
}

namespace {
struct TensorAndNumber {
  const Expr *Tensor = nullptr;
  const Expr *Number = nullptr; ///< a Scalar or arithmetic operand; either is null if absent
};
} // namespace

/// The operands of `tensor op number` or `number op tensor`.
static TensorAndNumber tensorAndNumber(const CXXOperatorCallExpr &Op) {
  TensorAndNumber Result;
  if (Op.getNumArgs() != 2)
    return Result;
  for (unsigned I = 0; I < 2; ++I) {
    const Expr *A = Op.getArg(I);
    if (isTensorType(A->getType()))
      Result.Tensor = A;
    else if (A->getType()->isArithmeticType() || isa<CXXConstructExpr>(ignoreConversions(A)) ||
             !isTensorType(ignoreConversions(A)->getType()))
      Result.Number = A;
  }
  return Result;
}

void Fp16ConstantRangeCheck::checkEpsilonAddition(const CXXOperatorCallExpr &Op, ASTContext &Ctx) {
  auto [Tensor, Constant] = tensorAndNumber(Op);
  if (!Tensor || !Constant)
    return;
  auto V = evaluateNumber(Constant, Ctx);
  if (!V)
    return;
  const PrecisionContext &Context = precisionContext(Ctx);
  PrecisionReason Why = Context.at(Op);
  if (Why.Value != kb::Precision::FP16 && Why.Value != kb::Precision::BF16)
    return; // under autocast the sum's type depends on the producer: not provable here
  std::optional<kb::Format> Known = Context.knownFormat(Tensor);
  kb::Format Format =
      Known ? *Known : (Why.Value == kb::Precision::FP16 ? kb::Format::FP16 : kb::Format::BF16);
  if (!flushesToZero(*V, Format))
    return;
  Subject About{&Op, nullptr, "underflow", kb::toString(kb::Severity::Warning),
                kb::toString(Format)};
  report(Ctx, About, Constant->getBeginLoc(),
         "adding " + formatNumber(*V) + " to a " + kb::toString(Format) +
             " tensor is no protection: the sum rounds back to 0 where the tensor is 0 (" +
             kb::toString(Format) + "'s smallest subnormal is " +
             formatNumber(limitsOf(Format).MinSubnormal) + ")",
         std::string("use an eps of at least ") + formatNumber(limitsOf(Format).MinNormal) +
             ", or compute this expression in fp32 with .to(torch::kFloat)",
         Why);
}

/// "adding -1e9 to a fp16 tensor", "subtracting a fp16 tensor from 1e9".
static std::string additionPhrase(const CXXOperatorCallExpr &Op, const Expr *Constant,
                                  const std::string &Value, const char *Name) {
  OverloadedOperatorKind Kind = Op.getOperator();
  std::string Tensor = std::string("a ") + Name + " tensor";
  if (Kind == OO_Plus || Kind == OO_PlusEqual)
    return "adding " + Value + " to " + Tensor;
  if (Op.getArg(0) == Constant)
    return "subtracting " + Tensor + " from " + Value;
  return "subtracting " + Value + " from " + Tensor;
}

/// `(1 - mask) * -1e9`, `scores + -1e9`: the literal is converted to the tensor's type
/// (a wrapped number does not promote a half tensor), so in fp16 it is inf, and the
/// additive mask is -inf where kept and NaN (0 * inf) where the kernel rounds the
/// scalar to half before multiplying (the CPU kernels of 1.13).
void Fp16ConstantRangeCheck::checkOutOfRangeOperand(const CXXOperatorCallExpr &Op,
                                                    ASTContext &Ctx) {
  auto [Tensor, Constant] = tensorAndNumber(Op);
  if (!Tensor || !Constant)
    return;
  auto V = evaluateNumber(Constant, Ctx);
  // fp16 has the smallest range of the half formats: a value it holds, every format holds.
  if (!V || !overflows(*V, kb::Format::FP16))
    return;
  const PrecisionContext &Context = precisionContext(Ctx);
  PrecisionReason Why = Context.at(Op);
  if (Why.Value == kb::Precision::FP32)
    return;
  if (!Ranges)
    Ranges = std::make_unique<RangeAnalysis>(Ctx, *knowledgeBase(), Context);
  // Operator arithmetic is not on autocast's lists: the result has the tensor's own type,
  // which the range analysis works out (fp32 for inputs under autocast, fp16 after a
  // lowered op or a conversion, the context's format in a model converted to half).
  kb::Format Format = Ranges->formatOf(Tensor);
  if (Format == kb::Format::FP32 || !overflows(*V, Format))
    return;
  OverloadedOperatorKind Kind = Op.getOperator();
  bool Multiplies = Kind == OO_Star || Kind == OO_StarEqual;
  // A static loss scale beyond 65504 (`loss * 131072.0`) is mpnanny-grad-scaler-config's
  // finding, with the fix that fits it (a dynamic scaler): not reported twice.
  if (Multiplies && *V > 0 && isLossScaling(Op, Tensor, Constant, Ctx))
    return;
  const char *Name = kb::toString(Format);
  std::string Value = formatNumber(*V);
  std::string Limit = formatNumber(limitsOf(Format).Max);
  Subject About{&Op, nullptr, "overflow", kb::toString(kb::Severity::Warning), Name};
  report(Ctx, About, Constant->getBeginLoc(),
         Multiplies
             ? "multiplying a " + std::string(Name) + " tensor by " + Value + ", which " + Name +
                   " cannot represent (largest finite value " + Limit +
                   "): the product is inf wherever the tensor is not 0, and NaN (0 * inf) "
                   "where it is 0 on kernels that round the scalar to " +
                   Name
             : additionPhrase(Op, Constant, Value, Name) + ": " + Name + " cannot represent " +
                   Value + " (largest finite value " + Limit + "), so the result is inf",
         std::string("use a value within ") + Limit +
             ", e.g. -1e4 for an additive attention mask in fp16 (exp(-1e4) is already 0), "
             "or compute in fp32 with .to(torch::kFloat)",
         Why);
}

} // namespace clang::tidy::mpnanny
