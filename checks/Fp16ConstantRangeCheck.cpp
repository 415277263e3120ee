//===--- Fp16ConstantRangeCheck.cpp - mpnanny ------------------------------===//
#include "Fp16ConstantRangeCheck.h"

#include "utils/TorchCalls.h"
#include "utils/TrainingStep.h"
#include "utils/ValueFlow.h"
#include "clang/AST/ASTContext.h"
#include "clang/Lex/Lexer.h"
#include <cmath>
#include <cstdio>
#include <set>

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
  // Optimizers and modules built with an options object: its defaults apply unless set.
  Finder->addMatcher(
      cxxConstructExpr(unless(isExpansionInSystemHeader()),
                       hasAnyArgument(hasType(cxxRecordDecl(matchesName("Options$")))))
          .bind("construct"),
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
    checkLostEpsilon(*Arith, *Result.Context);
  } else if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call")) {
    checkValueArguments(*Call, *Result.Context);
  } else if (const auto *Construct = Result.Nodes.getNodeAs<CXXConstructExpr>("construct")) {
    std::vector<const Expr *> Args(Construct->arg_begin(), Construct->arg_end());
    checkOptionDefaults(*Construct, Args, std::nullopt, *Result.Context);
  }
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

/// The format of a module's or optimizer's state where its options are set: the parameters'
/// type, half only in a model converted to half (under autocast the parameters are fp32).
static std::optional<kb::Format> parameterStateFormat(const PrecisionReason &Why) {
  if (Why.Value == kb::Precision::FP16)
    return kb::Format::FP16;
  if (Why.Value == kb::Precision::BF16)
    return kb::Format::BF16;
  return std::nullopt;
}

/// The first constant E may hold (written there, or reaching it through a local, a
/// parameter or a member: ValueFlow.h) that Hazard accepts.
static std::optional<FlowValue> hazardousValue(const Expr *E, ASTContext &Ctx,
                                               llvm::function_ref<bool(double)> Hazard) {
  for (const FlowValue &V : ValueFlow::get(Ctx).valuesOf(E).Values)
    if (Hazard(V.Value))
      return V;
  return std::nullopt;
}

/// "1e-8", or "1e-8 (the default of 'eps' in 'rms_norm')" when it came from elsewhere.
static std::string spelled(const FlowValue &V) {
  return formatNumber(V.Value) + (V.Via.empty() ? "" : " (" + V.Via + ")");
}

void Fp16ConstantRangeCheck::checkValueArguments(const CallExpr &Call, ASTContext &Ctx) {
  auto TC = classifyTorchCall(Call);
  if (!TC)
    return;
  const kb::Op *Op = lookupOp(*TC, *knowledgeBase());
  if (!Op)
    return;
  const PrecisionContext &Context = precisionContext(Ctx);
  PrecisionReason Why = Context.at(Call);
  if (Why.Value == kb::Precision::FP32)
    return;
  std::optional<kb::Format> Format = Context.computeFormatOf(*TC, Op);
  if (!Format || *Format == kb::Format::FP32)
    return;
  checkOptionDefaults(Call, TC->Args, Format, Ctx);
  const FormatLimits &Limits = limitsOf(*Format);
  const char *Name = kb::toString(*Format);
  for (const kb::ValueArg &VA : Op->ValueArgs) {
    const Expr *Arg = valueArgument(*TC, *Op, VA.Index);
    if (!Arg)
      continue;
    if (VA.Role == "bound" && checkBoundOntoUnit(Call, *TC, *Op, Arg, *Format, Why, Ctx))
      continue;
    const bool Fill = VA.Role == "fill";
    auto V = hazardousValue(Arg, Ctx, [&](double X) {
      return overflows(X, *Format) || (!Fill && flushesToZero(X, *Format));
    });
    if (!V)
      continue;
    Subject About{&Call, Op, kb::RiskKind::Overflow, kb::Severity::Warning, Name};
    if (overflows(V->Value, *Format)) {
      About.Risk = kb::RiskKind::Overflow;
      report(Ctx, About, Arg->getBeginLoc(),
             TC->spelled() + " " + VA.Role + " value " + spelled(*V) +
                 " cannot be represented in " + Name + " (largest finite value " +
                 formatNumber(Limits.Max) + "): the op fails or produces inf",
             VA.Role == "fill"
                 ? std::string("use a value the format holds, e.g. -1e4 for a mask in fp16, "
                               "or fill with -std::numeric_limits<float>::infinity() and "
                               "keep the softmax row from being fully masked")
                 : std::string("use a bound within ") + formatNumber(Limits.Max) +
                       ", or upcast with .to(torch::kFloat) first",
             Why);
    } else {
      About.Risk = kb::RiskKind::Underflow;
      report(Ctx, About, Arg->getBeginLoc(),
             TC->spelled() + " " + VA.Role + " value " + spelled(*V) + " rounds to 0 in " + Name +
                 " (smallest subnormal " + formatNumber(Limits.MinSubnormal) + ")",
             std::string("use a value of at least ") + formatNumber(Limits.MinNormal) +
                 " (the smallest normal), or compute in fp32 with .to(torch::kFloat)",
             Why);
    }
  }
}

/// The argument as written, when it is short enough to quote: `1 - 1e-7`, `1. - eps`.
static std::optional<std::string> writtenText(const Expr &E, const ASTContext &Ctx) {
  if (E.getBeginLoc().isMacroID() || E.getEndLoc().isMacroID())
    return std::nullopt;
  llvm::StringRef Text = Lexer::getSourceText(CharSourceRange::getTokenRange(E.getSourceRange()),
                                              Ctx.getSourceManager(), Ctx.getLangOpts());
  if (Text.empty() || Text.size() > 48 || Text.contains('\n'))
    return std::nullopt;
  return Text.str();
}

/// "1 - 1e-7 = 0.9999999": the written form and the exact value, or the value alone when it
/// is written as it is; with the way it came when it came from elsewhere.
static std::string writtenAndExact(const Expr &Arg, const FlowValue &V, const ASTContext &Ctx) {
  std::string Exact = formatExact(V.Value);
  std::string Text = Exact;
  if (auto Written = writtenText(*ignoreConversions(&Arg), Ctx); Written && *Written != Exact)
    Text = *Written + " = " + Exact;
  return Text + (V.Via.empty() ? "" : " (" + V.Via + ")");
}

bool Fp16ConstantRangeCheck::checkBoundOntoUnit(const CallExpr &Call, const TorchCall &TC,
                                                const kb::Op &Op, const Expr *Arg,
                                                kb::Format Format, const PrecisionReason &Why,
                                                ASTContext &Ctx) {
  // Which end the bound is: ATen names clamp's parameters min and max, clamp_max's max.
  const ParmVarDecl *Param = nullptr;
  for (unsigned I = 0; I < TC.Args.size(); ++I)
    if (TC.Args[I] == Arg)
      Param = parameterOf(TC, I);
  if (!Param || (Param->getName() != "min" && Param->getName() != "max"))
    return false;
  const bool Upper = Param->getName() == "max";
  auto V = hazardousValue(Arg, Ctx, [&](double X) { return roundsOntoUnit(X, Upper, Format); });
  if (!V)
    return false;
  const char *Name = kb::toString(Format);
  const int Bits = mantissaBits(Format);
  // The format's neighbour of the unit on the inside, and a round bound that stays there.
  const double Inside = 1 - std::ldexp(1.0, -(Bits + 1));
  const double Margin = std::pow(10, std::ceil(std::log10(2 * (1 - Inside))));
  char Neighbour[32];
  std::snprintf(Neighbour, sizeof Neighbour, "%.8g", Upper ? Inside : -Inside);
  Subject About{&Call, &Op, kb::RiskKind::Domain, kb::Severity::Warning, Name};
  report(Ctx, About, Arg->getBeginLoc(),
         TC.spelled() + (Upper ? " upper" : " lower") + " bound " + writtenAndExact(*Arg, *V, Ctx) +
             " is " + (Upper ? "1" : "-1") + " in " + Name + " (the nearest " + Name +
             " value inside is " + Neighbour + "): the clamped value reaches " +
             (Upper ? "1, where log(1 - p) and log1p(-p) are -inf"
                    : "-1, where log1p(x) and atanh(x) are -inf"),
         std::string("use a bound ") + Name + " keeps inside, " + (Upper ? "1 - " : "-1 + ") +
             formatNumber(Margin) + " or further from " + (Upper ? "1" : "-1") +
             ", or clamp and take the log in fp32 with .to(torch::kFloat)",
         Why);
  return true;
}

void Fp16ConstantRangeCheck::checkOptionSetter(const CXXMemberCallExpr &Call, ASTContext &Ctx) {
  const CXXMethodDecl *Method = Call.getMethodDecl();
  if (!Method || !Method->getIdentifier() || !Method->getParent()->getIdentifier())
    return;
  const kb::OptionValue *Option =
      knowledgeBase()->findOption(Method->getParent()->getName().str(), Method->getName().str());
  if (!Option)
    return;
  PrecisionReason Why = precisionContext(Ctx).at(Call);
  std::optional<kb::Format> Parameters = parameterStateFormat(Why);
  if (!Parameters)
    return;
  const kb::Format Format = *Parameters;
  auto V = hazardousValue(Call.getArg(0), Ctx, [&](double X) {
    return flushesToZero(X, Format) || overflows(X, Format);
  });
  if (!V)
    return;
  const FormatLimits &Limits = limitsOf(Format);
  std::string Spelled = Option->Class + "::" + Option->Setter;
  Subject About{&Call, nullptr, kb::RiskKind::Underflow, kb::Severity::Warning,
                kb::toString(Format)};
  if (flushesToZero(V->Value, Format))
    report(Ctx, About, Call.getArg(0)->getBeginLoc(),
           Spelled + "(" + spelled(*V) + ") is 0 in " + kb::toString(Format) +
               ": below the smallest subnormal " + formatNumber(Limits.MinSubnormal) + ", so the " +
               Option->Role + " no longer guards the division",
           std::string("use ") + Option->Setter + "(1e-4) or larger in " + kb::toString(Format) +
               ", or keep fp32 master weights and optimizer state",
           Why);
  else
    report(Ctx, (About.Risk = kb::RiskKind::Overflow, About), Call.getArg(0)->getBeginLoc(),
           Spelled + "(" + spelled(*V) + ") cannot be represented in " + kb::toString(Format) +
               " (largest finite value " + formatNumber(Limits.Max) + ")",
           "use a value within the format's range", Why);
}

/// The options class an argument passes, and the setters written on it: along the chain
/// `Options().p(2).dim(1)`, and on a local options object anywhere in its function. Nullopt
/// when the object comes from somewhere not followed (a parameter, a member).
static std::optional<std::pair<std::string, std::set<std::string>>>
optionsWritten(const Expr *Arg, const ValueFlow &Flow) {
  std::set<std::string> Setters;
  const Expr *E = Arg;
  for (int Depth = 0; E && Depth < 32; ++Depth) {
    E = E->IgnoreImplicit()->IgnoreParens();
    if (const auto *Default = dyn_cast<CXXDefaultArgExpr>(E)) {
      E = Default->getExpr();
      continue;
    }
    if (const auto *Member = dyn_cast<CXXMemberCallExpr>(E)) {
      if (const CXXMethodDecl *M = Member->getMethodDecl(); M && M->getIdentifier())
        Setters.insert(M->getName().str());
      E = Member->getImplicitObjectArgument();
      continue;
    }
    if (const auto *Construct = dyn_cast<CXXConstructExpr>(E)) {
      // A copy or move of another options object: follow it.
      if (Construct->getNumArgs() == 1 && Construct->getConstructor()->isCopyOrMoveConstructor()) {
        E = Construct->getArg(0);
        continue;
      }
      const CXXRecordDecl *RD = Construct->getType()->getAsCXXRecordDecl();
      if (!RD || !RD->getIdentifier())
        return std::nullopt;
      return std::make_pair(RD->getName().str(), Setters);
    }
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
      const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
      if (!Var || !Var->isLocalVarDecl() || isa<ParmVarDecl>(Var) || !Var->getInit())
        return std::nullopt;
      // Setters called on the local after its initializer count as written.
      if (const auto *FD = dyn_cast_or_null<FunctionDecl>(Var->getParentFunctionOrMethod()))
        visitDescendants(FD->getBody(), [&](const Stmt *S) {
          if (const auto *Member = dyn_cast<CXXMemberCallExpr>(S))
            if (const auto *Object = dyn_cast<DeclRefExpr>(
                    Member->getImplicitObjectArgument()->IgnoreParenImpCasts()))
              if (Object->getDecl() == Var && Member->getMethodDecl() &&
                  Member->getMethodDecl()->getIdentifier())
                Setters.insert(Member->getMethodDecl()->getName().str());
          return true;
        });
      (void)Flow;
      E = Var->getInit();
      continue;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

void Fp16ConstantRangeCheck::checkOptionDefaults(const Expr &Call,
                                                 llvm::ArrayRef<const Expr *> Args,
                                                 std::optional<kb::Format> Format,
                                                 ASTContext &Ctx) {
  PrecisionReason Why = precisionContext(Ctx).at(Call);
  const Expr *Params = Format ? nullptr : constructedOptimizerParameters(&Call);
  if (Params) {
    // An optimizer's state has its parameters' type: the parameters it is given decide, not
    // the function around it (another instance of the model may be the half one).
    const FunctionDecl *F = precisionContext(Ctx).enclosingFunction(Call);
    auto Of =
        F && F->getBody() ? parameterFormat(Params, *F, precisionContext(Ctx), Ctx) : std::nullopt;
    if (!Of || Of->Value == kb::Format::FP32)
      return;
    Format = Of->Value;
    Why = PrecisionReason{Of->Value == kb::Format::BF16 ? kb::Precision::BF16 : kb::Precision::FP16,
                          Of->Where, Of->Why};
  }
  if (!Format && !(Format = parameterStateFormat(Why)))
    return;
  for (const Expr *Arg : Args) {
    auto Written = optionsWritten(Arg, ValueFlow::get(Ctx));
    if (!Written)
      continue;
    for (const kb::OptionValue &Option : knowledgeBase()->optionValues()) {
      if (Option.Class != Written->first || !Option.Default || Written->second.count(Option.Setter))
        continue;
      const double V = *Option.Default;
      if (!flushesToZero(V, *Format) && !overflows(V, *Format))
        continue;
      const char *Name = kb::toString(*Format);
      std::string Spelled = Option.Class + "::" + Option.Setter;
      Subject About{&Call, nullptr,
                    flushesToZero(V, *Format) ? kb::RiskKind::Underflow : kb::RiskKind::Overflow,
                    kb::Severity::Warning, Name};
      SourceLocation At =
          isa<CXXDefaultArgExpr>(Arg->IgnoreImplicit()) ? Call.getBeginLoc() : Arg->getBeginLoc();
      report(Ctx, About, At,
             Option.Class + "'s default " + Option.Setter + " " + formatNumber(V) +
                 (flushesToZero(V, *Format) ? " is 0 in " : " cannot be represented in ") + Name +
                 ": the " + Option.Role + " no longer guards what it should",
             std::string("set it: .") + Option.Setter + "(1e-4) or larger in " + Name +
                 ", or compute in fp32 with .to(torch::kFloat)",
             Why);
    }
  }
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
  const PrecisionContext &Context = precisionContext(Ctx);
  PrecisionReason Why = Context.at(Op);
  if (Why.Value != kb::Precision::FP16 && Why.Value != kb::Precision::BF16)
    return; // under autocast the sum's type depends on the producer: not provable here
  std::optional<kb::Format> Known = Context.knownFormat(Tensor);
  kb::Format Format =
      Known ? *Known : (Why.Value == kb::Precision::FP16 ? kb::Format::FP16 : kb::Format::BF16);
  auto V = hazardousValue(Constant, Ctx, [&](double X) { return flushesToZero(X, Format); });
  if (!V)
    return;
  Subject About{&Op, nullptr, kb::RiskKind::Underflow, kb::Severity::Warning, kb::toString(Format)};
  report(Ctx, About, Constant->getBeginLoc(),
         "adding " + spelled(*V) + " to a " + kb::toString(Format) +
             " tensor is no protection: the sum rounds back to 0 where the tensor is 0 (" +
             kb::toString(Format) + "'s smallest subnormal is " +
             formatNumber(limitsOf(Format).MinSubnormal) + ")",
         std::string("use an eps of at least ") + formatNumber(limitsOf(Format).MinNormal) +
             ", or compute this expression in fp32 with .to(torch::kFloat)",
         Why);
}

namespace {
/// A constant written as a base and a small addend: `1 + 1e-3`, `1. - eps`.
struct SumOfConstants {
  const Expr *Written = nullptr;
  double Base = 0, Addend = 0;
  std::string Via;
};
} // namespace

/// The constant sum E stands for, written there or in a stable local's initializer.
static std::optional<SumOfConstants> sumOfConstants(const Expr *E, ASTContext &Ctx) {
  const ValueFlow &Flow = ValueFlow::get(Ctx);
  std::string Via;
  for (int Depth = 0; E && Depth < 4; ++Depth) {
    E = ignoreConversions(E)->IgnoreParenImpCasts();
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
      const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
      E = Flow.stableInitializer(Var);
      Via = Var ? "through '" + Var->getNameAsString() + "'" : "";
      continue;
    }
    const auto *BO = dyn_cast<BinaryOperator>(E);
    if (!BO || !BO->isAdditiveOp())
      return std::nullopt;
    auto L = Flow.constantOf(BO->getLHS()), R = Flow.constantOf(BO->getRHS());
    if (!L || !R)
      return std::nullopt;
    const double Right = BO->getOpcode() == BO_Add ? R->Value : -R->Value;
    SumOfConstants Sum{E, L->Value, Right, Via};
    if (std::fabs(Sum.Addend) > std::fabs(Sum.Base))
      std::swap(Sum.Base, Sum.Addend);
    return Sum;
  }
  return std::nullopt;
}

/// `(1 + 1e-3) - p` in bf16, `p * (1 - 1e-7)` in fp16: the scalar is converted to the tensor's
/// type before the op, and there the addend is gone (below half the spacing of the format's
/// values at the base), so the margin it was written for is not there: 1 - p is exactly 0 at
/// p = 1.
void Fp16ConstantRangeCheck::checkLostEpsilon(const CXXOperatorCallExpr &Op, ASTContext &Ctx) {
  auto [Tensor, Constant] = tensorAndNumber(Op);
  if (!Tensor || !Constant)
    return;
  auto Sum = sumOfConstants(Constant, Ctx);
  if (!Sum || Sum->Addend == 0 || Sum->Base + Sum->Addend == Sum->Base)
    return;
  const PrecisionContext &Context = precisionContext(Ctx);
  PrecisionReason Why = Context.at(Op);
  if (Why.Value == kb::Precision::FP32)
    return;
  if (!Ranges)
    Ranges = std::make_unique<RangeAnalysis>(Ctx, *knowledgeBase(), Context);
  const kb::Format Format = Ranges->formatOf(Tensor);
  const double Stored = storedValue(Sum->Base + Sum->Addend, Format);
  if (Format == kb::Format::FP32 || Stored == 0 || Stored != storedValue(Sum->Base, Format))
    return;
  const char *Name = kb::toString(Format);
  // Half the spacing of the format's values on the addend's side of the base: the smallest
  // addend kept (below a power of two the values are twice as dense as above it).
  const bool Outward = (Sum->Addend > 0) == (Sum->Base > 0);
  const double Magnitude = std::fabs(Sum->Base) * (Outward ? 1 : 1 - 1e-12);
  const double Kept = std::ldexp(1.0, std::ilogb(Magnitude) - mantissaBits(Format) - 1);
  std::string Value = formatExact(Sum->Base + Sum->Addend);
  if (auto Written = writtenText(*Sum->Written, Ctx))
    Value = *Written + " = " + Value;
  if (!Sum->Via.empty())
    Value += " (" + Sum->Via + ")";
  Subject About{&Op, nullptr, kb::RiskKind::Underflow, kb::Severity::Warning, Name};
  report(
      Ctx, About, Constant->getBeginLoc(),
      Value + " is " + formatExact(Stored) + " in " + Name + ", where the tensor meets it: the " +
          formatNumber(std::fabs(Sum->Addend)) + " is below " + formatNumber(Kept) +
          ", half the spacing of " + Name + " values at " + formatNumber(Sum->Base) +
          ", and the margin it was written for is gone",
      std::string("apply the margin to the tensor, where it is kept ((1 - p) + eps rather than ") +
          "(1 + eps) - p), use a margin of at least " + formatNumber(2 * Kept) +
          ", or compute in fp32 with .to(torch::kFloat)",
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
  // fp16 has the smallest range of the half formats: a value it holds, every format holds.
  auto V = hazardousValue(Constant, Ctx, [](double X) { return overflows(X, kb::Format::FP16); });
  if (!V)
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
  if (Format == kb::Format::FP32 || !overflows(V->Value, Format))
    return;
  OverloadedOperatorKind Kind = Op.getOperator();
  bool Multiplies = Kind == OO_Star || Kind == OO_StarEqual;
  // A static loss scale beyond 65504 (`loss * 131072.0`) is mpnanny-grad-scaler-config's
  // finding, with the fix that fits it (a dynamic scaler): not reported twice.
  if (Multiplies && V->Value > 0 && isLossScaling(Op, Tensor, Constant, Ctx))
    return;
  const char *Name = kb::toString(Format);
  std::string Value = spelled(*V);
  std::string Limit = formatNumber(limitsOf(Format).Max);
  Subject About{&Op, nullptr, kb::RiskKind::Overflow, kb::Severity::Warning, Name};
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
