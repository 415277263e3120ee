//===--- UnsafeMathCheck.cpp - mpnanny -------------------------------------===//
#include "UnsafeMathCheck.h"

#include "utils/SoftmaxShapes.h"
#include "utils/TorchCalls.h"
#include "utils/ValueFlow.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

namespace {
enum class MathKind { Log, Sqrt, Rsqrt, Reciprocal, NegativePow, Exp, Div };

std::optional<MathKind> kindOf(const kb::Op &Op, const TorchCall &TC, const ASTContext &Ctx) {
  llvm::StringRef Id = Op.Id;
  if (Op.Transfer == "log" || Id == "log2" || Id == "log2_" || Id == "log10" || Id == "log10_")
    return MathKind::Log;
  if (Op.Transfer == "sqrt")
    return MathKind::Sqrt;
  if (Op.Transfer == "rsqrt")
    return MathKind::Rsqrt;
  if (Op.Transfer == "reciprocal")
    return MathKind::Reciprocal;
  if (Op.Transfer == "exp")
    return MathKind::Exp;
  if (Op.Transfer == "pow" && !TC.Args.empty())
    if (auto N = evaluateNumber(TC.Args[0], Ctx); N && *N < 0)
      return MathKind::NegativePow;
  if (Id == "div")
    return MathKind::Div;
  return std::nullopt;
}

std::string withOrigin(const Interval &I) {
  return I.str() + (I.Origin.empty() ? "" : " (" + I.Origin + ")");
}

std::string twoDecimals(double V) {
  char Buf[32];
  std::snprintf(Buf, sizeof Buf, "%.2f", V);
  return Buf;
}
/// What goes wrong when the argument of Kind lies in Arg ("" when nothing does); may add to
/// Guard, and sets Risk for a result that overflows rather than leaves the domain.
std::string domainHazard(MathKind Kind, const Interval &Arg, const std::string &Spelled,
                         const char *Name, std::string &Guard, kb::RiskKind &Risk) {
  std::string Message;
  if (Arg.mayBeNegative() &&
      (Kind == MathKind::Log || Kind == MathKind::Sqrt || Kind == MathKind::Rsqrt)) {
    Message = Spelled + " of a value that may be negative in " + Name + ": it lies in " +
              withOrigin(Arg) + ", and " + Spelled + " of a negative number is NaN";
  } else if (Arg.mayBeZero()) {
    switch (Kind) {
    case MathKind::Log:
      Message = Spelled + " of a value that may be 0 in " + Name + ": it lies in " +
                withOrigin(Arg) + ", and log(0) = -inf with an inf gradient";
      Guard += "; for the log of a probability use log_softmax or logsigmoid";
      break;
    case MathKind::Sqrt:
      Message = Spelled + " of a value that may be 0 in " + Name + ": it lies in " +
                withOrigin(Arg) +
                "; sqrt(0) is 0 but its gradient 1/(2*sqrt(x)) is inf, "
                "so backward gives NaN";
      break;
    case MathKind::Rsqrt:
      Message = Spelled + " of a value that may be 0 in " + Name + ": it lies in " +
                withOrigin(Arg) + ", and rsqrt(0) = inf";
      break;
    case MathKind::Reciprocal:
    case MathKind::NegativePow:
      Message = Spelled + " of a value that may be 0 in " + Name + ": it lies in " +
                withOrigin(Arg) +
                (Kind == MathKind::Reciprocal ? ", and 1 / 0 = inf"
                                              : ", and a negative power of 0 is inf");
      Risk = kb::RiskKind::Overflow;
      break;
    default: return "";
    }
  }
  return Message;
}

/// "running_var" for running_var, running_var_, m_running_var, _running_var.
llvm::StringRef bareName(llvm::StringRef Name) {
  if (Name.starts_with("m_"))
    Name = Name.drop_front(2);
  return Name.trim('_');
}

/// `register_buffer("running_var", ...)`: the state-dict key a BatchNorm's variance loads from.
bool registersRunningVariance(const Expr *E) {
  const auto *Call = dyn_cast_or_null<CXXMemberCallExpr>(E ? ignoreConversions(E) : nullptr);
  const CXXMethodDecl *M = Call ? Call->getMethodDecl() : nullptr;
  if (!M || !M->getIdentifier() || M->getName() != "register_buffer" || Call->getNumArgs() < 2)
    return false;
  // The name is a std::string made from the literal.
  const Expr *Name = Call->getArg(0)->IgnoreImplicit()->IgnoreParens();
  while (const auto *Construct = dyn_cast<CXXConstructExpr>(Name)) {
    if (Construct->getNumArgs() == 0)
      return false;
    Name = Construct->getArg(0)->IgnoreImplicit()->IgnoreParens();
  }
  const auto *Key = dyn_cast<StringLiteral>(Name);
  return Key && Key->getString() == "running_var";
}

} // namespace

/// A BatchNorm running variance: LibTorch's `running_var` buffer (`bn->running_var`), a tensor
/// named after it, or one registered under its key, `register_buffer("running_var", ...)`; the
/// name is the state-dict key under which a checkpoint loads it. It is a variance, so never
/// negative, and 0 on a channel that is constant over the batches (a dead ReLU channel: the
/// running average decays to 0, in fp16 within a few hundred steps at momentum 0.1).
static std::optional<Interval> runningVarianceRange(const Expr *E, const RangeAnalysis &Ranges,
                                                    ASTContext &Ctx) {
  E = resolveStableLocals(E, Ranges);
  const ValueDecl *D = namedValue(E);
  if (!D || !D->getIdentifier())
    return std::nullopt;
  bool Variance = bareName(D->getName()) == "running_var" || registersRunningVariance(E);
  if (const auto *Field = dyn_cast<FieldDecl>(D); Field && !Variance)
    for (const Expr *Value : ValueFlow::get(Ctx).valuesAssignedTo(*Field))
      Variance |= registersRunningVariance(Value);
  if (!Variance)
    return std::nullopt;
  Interval R = Interval::closed(0, std::numeric_limits<double>::infinity());
  R.HiOpen = true;
  R.Origin = "the running variance '" + D->getNameAsString() +
             "', 0 on a channel that is constant over the batches";
  return R;
}

/// The argument of a square root in Divisor (`torch::sqrt(v)`, `v.sqrt()`), through locals.
static const Expr *squareRootOperand(const Expr &Divisor, const RangeAnalysis &Ranges,
                                     const kb::KnowledgeBase &KB) {
  const auto *Call = dyn_cast_or_null<CallExpr>(resolveStableLocals(&Divisor, Ranges));
  auto TC = Call ? classifyTorchCall(*Call) : std::nullopt;
  const kb::Op *Op = TC && TC->Self ? lookupOp(*TC, KB) : nullptr;
  return Op && Op->Transfer == "sqrt" ? TC->Self : nullptr;
}

UnsafeMathCheck::UnsafeMathCheck(StringRef Name, ClangTidyContext *Context)
    : MpnannyCheck(Name, Context),
      LogSoftmaxEnabled(Context->isCheckEnabled(vocab::name(vocab::Check::LogSoftmax))),
      RiskyOpEnabled(Context->isCheckEnabled(vocab::name(vocab::Check::RiskyOp))),
      ConstantRangeEnabled(Context->isCheckEnabled(vocab::name(vocab::Check::Fp16ConstantRange))) {}

bool UnsafeMathCheck::leftToConstantRange(const Interval &Value) const {
  // log(x + 1e-8), x / x.sum().clamp_min(1e-20) in fp16: the guard is 0 there, and
  // mpnanny-fp16-constant-range reports the guard itself. One hazard, one finding.
  return ConstantRangeEnabled && Value.FlushedConstant && Value.mayBeZero() &&
         !Value.mayBeNegative();
}

void UnsafeMathCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (!knowledgeBase())
    return;
  Finder->addMatcher(knowledgeBaseCall().bind("call"), this);
  Finder->addMatcher(cxxOperatorCallExpr(unless(isExpansionInSystemHeader()),
                                         hasAnyOverloadedOperatorName("/", "/="))
                         .bind("slash"),
                     this);
}

void UnsafeMathCheck::onStartOfTranslationUnit() {
  MpnannyCheck::onStartOfTranslationUnit();
  Ranges.reset();
}

/// mpnanny-risky-op reports this call already (an op it owns, with a warning-level
/// risk in this format): one finding per call is enough.
bool UnsafeMathCheck::riskyOpReports(const kb::Op &Op, kb::Format F) const {
  if (!RiskyOpEnabled || Op.Check != vocab::name(vocab::Check::RiskyOp))
    return false;
  return std::any_of(Op.Risks.begin(), Op.Risks.end(), [F](const kb::Risk &R) {
    return R.Level != kb::Severity::Note && R.Kind != kb::RiskKind::Banned &&
           std::find(R.Formats.begin(), R.Formats.end(), F) != R.Formats.end();
  });
}

void UnsafeMathCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  if (!Ranges)
    Ranges = std::make_unique<RangeAnalysis>(Ctx, *knowledgeBase(), precisionContext(Ctx));
  if (const auto *Slash = Result.Nodes.getNodeAs<CXXOperatorCallExpr>("slash")) {
    if (Slash->getNumArgs() == 2 && isTensorType(Slash->getArg(1)->getType()))
      checkDivision(*Slash, *Slash->getArg(1), Ctx);
    return;
  }
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  auto TC = classifyTorchCall(*Call);
  if (!TC || !TC->Self)
    return;
  const kb::Op *Op = lookupOp(*TC, *knowledgeBase());
  if (!Op)
    return;
  auto Kind = kindOf(*Op, *TC, Ctx);
  if (!Kind)
    return;
  if (*Kind == MathKind::Div) {
    if (!TC->Args.empty() && isTensorType(TC->Args[0]->getType()))
      checkDivision(*Call, *TC->Args[0], Ctx);
    return;
  }
  const PrecisionContext &Context = precisionContext(Ctx);
  PrecisionReason Why = Context.at(*Call);
  if (Why.Value == kb::Precision::FP32)
    return;
  if (Op->Check != vocab::name(vocab::Check::UnsafeMath) &&
      Op->Check != vocab::name(vocab::Check::RiskyOp))
    return;
  if (std::optional<kb::Format> Computed = Context.computeFormatOf(*TC, Op);
      Computed && riskyOpReports(*Op, *Computed))
    return;
  if (*Kind == MathKind::Log && LogSoftmaxEnabled &&
      findSoftmaxUnderLog(TC->Self, *Ranges, *knowledgeBase(), Ctx))
    return; // mpnanny-log-softmax says it better: use log_softmax

  std::string Spelled = TC->spelled();
  Interval Arg = Ranges->rangeOf(TC->Self);
  // rsqrt(running_var) with no eps: a frozen BatchNorm written by hand.
  if (Arg.isUnknown() &&
      (*Kind == MathKind::Rsqrt || *Kind == MathKind::Reciprocal || *Kind == MathKind::NegativePow))
    if (auto Variance = runningVarianceRange(TC->Self, *Ranges, Ctx))
      Arg = *Variance;

  if (*Kind == MathKind::Exp) {
    checkExp(*Call, *TC, *Op, Arg, Why, Ctx);
    return;
  }
  if (Arg.isUnknown() || leftToConstantRange(Arg))
    return;

  kb::Format F = Ranges->formatOf(TC->Self);
  if (F == kb::Format::FP32)
    return; // see checkDivision
  const char *Name = kb::toString(F);
  const FormatLimits &L = limitsOf(F);
  std::string Guard = "keep it positive: add or clamp_min an eps of at least " +
                      formatNumber(L.MinNormal) + " (" + Name +
                      "'s smallest normal), or compute in fp32 with .to(torch::kFloat)";
  Subject About{Call, Op, kb::RiskKind::Domain, kb::Severity::Warning, Name};
  std::string Message = domainHazard(*Kind, Arg, Spelled, Name, Guard, About.Risk);
  if (Message.empty())
    return;
  report(Ctx, About, Call->getExprLoc(), Message, Guard, Why);
}

void UnsafeMathCheck::checkExp(const CallExpr &Call, const TorchCall &TC, const kb::Op &Op,
                               const Interval &Arg, const PrecisionReason &Why, ASTContext &Ctx) {
  std::string Spelled = TC.spelled();
  kb::Format F = Ranges->formatOf(&Call);
  const FormatLimits &L = limitsOf(F);
  double Limit = std::log(L.Max);
  if (Arg.isBoundedAbove() && !Arg.mayExceed(Limit))
    return;
  const char *Name = kb::toString(F);
  std::string Fix = "subtract the maximum first (x - x.amax(dim, true)), keep the argument "
                    "below " +
                    twoDecimals(Limit) + ", or compute in fp32: torch::exp(x.to(torch::kFloat))";
  Subject About{&Call, &Op, kb::RiskKind::Overflow, kb::Severity::Warning, Name};
  if (Arg.isBoundedAbove()) {
    report(Ctx, About, Call.getExprLoc(),
           Spelled + " in " + Name + " overflows to inf: its argument reaches " +
               formatNumber(Arg.Hi) + ", above " + twoDecimals(Limit) + " = ln(" +
               formatNumber(L.Max) + "), " + Name +
               "'s largest finite value; the argument lies in " + withOrigin(Arg),
           Fix, Why);
    return;
  }
  // The analysis knows the argument and that nothing bounds it above (a ReLU, an abs,
  // another exp): it can pass any limit. An argument of unknown range is not reported:
  // on the labelled corpus that flagged a third of the fp16 exps the checks call safe
  // (max-shifted inside a helper, PPO ratios, exps a naive softmax already reports).
  // The rule's risk says in which formats an unbounded exp is worth a warning: fp16,
  // where an activation above 11.09 overflows (bf16 and fp32 hold up to 88.72). Under
  // autocast exp runs in fp32 and F is fp32; exp_ is not upcast and keeps its input's type.
  if (Arg.isUnknown())
    return;
  bool RuleWarns = std::any_of(Op.Risks.begin(), Op.Risks.end(), [F](const kb::Risk &R) {
    return R.Level != kb::Severity::Note && R.Kind == kb::RiskKind::Overflow &&
           std::find(R.Formats.begin(), R.Formats.end(), F) != R.Formats.end();
  });
  if (!RuleWarns || isShiftedByMax(TC.Self, *Ranges))
    return;
  report(Ctx, About, Call.getExprLoc(),
         Spelled + " in " + Name + " overflows to inf once its argument passes " +
             twoDecimals(Limit) + " = ln(" + formatNumber(L.Max) + "), " + Name +
             "'s largest finite value, and nothing bounds the argument: it lies in " +
             withOrigin(Arg),
         Fix, Why);
  return;
}

void UnsafeMathCheck::checkDivision(const Expr &Division, const Expr &Divisor, ASTContext &Ctx) {
  PrecisionReason Why = precisionContext(Ctx).at(Division);
  if (Why.Value == kb::Precision::FP32)
    return;
  Interval D = Ranges->rangeOf(&Divisor);
  // x / torch::sqrt(running_var): the square root of a variance that may be 0 is 0.
  if (D.isUnknown())
    if (const Expr *Root = squareRootOperand(Divisor, *Ranges, *knowledgeBase()))
      if (auto Variance = runningVarianceRange(Root, *Ranges, Ctx))
        D = *Variance, D.Origin = "the square root of " + D.Origin;
  if (D.isUnknown() || !D.mayBeZero() || leftToConstantRange(D))
    return;
  kb::Format F = Ranges->formatOf(&Divisor);
  // A zero in fp32 math of a half or autocast project (an upcast, a scheduler built in
  // kFloat32) is judged as in an fp32 project, where this check is silent: the zero a lower
  // format adds is a value that flushes. (An exp proven to pass 88.72 overflows fp32 too,
  // and is reported wherever the check looks.)
  if (F == kb::Format::FP32)
    return;
  const char *Name = kb::toString(F);
  Subject About{&Division, knowledgeBase()->findById("div"), kb::RiskKind::Overflow,
                kb::Severity::Warning, Name};
  report(Ctx, About, Division.getExprLoc(),
         "division by a value that may be 0 in " + std::string(Name) + ": the divisor lies in " +
             withOrigin(D) + ", and x / 0 is inf (0 / 0 is NaN)",
         "keep the divisor away from 0: add or clamp_min an eps of at least " +
             formatNumber(limitsOf(F).MinNormal) + " (" + Name +
             "'s smallest normal), or divide in fp32 with .to(torch::kFloat)",
         Why);
}

} // namespace clang::tidy::mpnanny
