//===--- RiskyOpCheck.cpp - mpnanny ----------------------------------------===//
#include "RiskyOpCheck.h"

#include "utils/HalfData.h"
#include "utils/TorchCalls.h"
#include "utils/ValueUses.h"
#include <algorithm>
#include <cmath>

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void RiskyOpCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (knowledgeBase())
    Finder->addMatcher(knowledgeBaseCall().bind("call"), this);
}

void RiskyOpCheck::onStartOfTranslationUnit() {
  MpnannyCheck::onStartOfTranslationUnit();
  Ranges.reset();
}

/// True for a transfer function that maps each element on its own (pow, square, exp,
/// abs...): the op's overflow is then that of its result, which the range analysis
/// bounds. A reduction (sum, mean) or an op with no transfer (cosine_similarity, whose
/// output is bounded while its norms overflow inside) says nothing about the inside.
static bool isElementwiseTransfer(const std::string &Transfer) {
  return !Transfer.empty() && Transfer != "sum" && Transfer != "mean";
}

/// True when every bound of an arange (`start`, `end`) is a constant the format holds with
/// every integer below it: 2048 in fp16, 256 in bf16.
static bool holdsExactIntegers(const TorchCall &Arange, kb::Format F, const ASTContext &Ctx) {
  const double Exact = F == kb::Format::FP16 ? 2048 : F == kb::Format::BF16 ? 256 : 16777216;
  bool SawEnd = false;
  for (unsigned I = 0; I < Arange.Args.size(); ++I) {
    const ParmVarDecl *P = parameterOf(Arange, I);
    if (!P || (P->getName() != "start" && P->getName() != "end"))
      continue;
    auto V = evaluateNumber(Arange.Args[I], Ctx);
    if (!V || std::fabs(*V) > Exact)
      return false;
    SawEnd = SawEnd || P->getName() == "end";
  }
  return SawEnd;
}

void RiskyOpCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  auto TC = classifyTorchCall(*Call);
  if (!TC)
    return;
  const kb::Op *Op = lookupOp(*TC, *knowledgeBase());
  if (!Op || Op->Risks.empty() || Op->Check != vocab::name(vocab::Check::RiskyOp))
    return;
  // x.pow(2).mean(): the square of a hand-written statistic is reported once, as the
  // statistic, by mpnanny-norm-in-half (or mpnanny-loss-in-half for a loss).
  if (isSquareOfStatistic(*Call, *Result.Context))
    return;
  const PrecisionContext &Context = precisionContext(*Result.Context);
  PrecisionReason Why = Context.at(*Call);
  if (Why.Value == kb::Precision::FP32)
    return;
  std::optional<kb::Format> Format = Context.computeFormatOf(*TC, Op);
  // arange's default dtype is int64 (integer bounds) or fp32, never the code's precision: its
  // values are half only where the call asks, and exact while its bounds stay small.
  if (Op->Id == "arange") {
    Format = Context.requestedFormat(*TC);
    if (!Format || holdsExactIntegers(*TC, *Format, *Result.Context))
      return;
  }

  auto Hit = std::find_if(Op->Risks.begin(), Op->Risks.end(),
                          [&](const kb::Risk &R) { return R.appliesIn(Format); });
  if (Hit == Op->Risks.end())
    return;
  // (1 - sigmoid(h)).pow(2), tanh(h).pow(2), h.clamp(-10, 10).pow(2): the range analysis
  // proves the result finite in the format (it widens a result past the format's largest
  // value to inf), so the overflow the rule warns of cannot happen here.
  if (Hit->Kind == kb::RiskKind::Overflow && isElementwiseTransfer(Op->Transfer)) {
    if (!Ranges)
      Ranges = std::make_unique<RangeAnalysis>(*Result.Context, *knowledgeBase(), Context);
    Interval Value = Ranges->rangeOf(Call);
    if (std::isfinite(Value.Lo) && std::isfinite(Value.Hi))
      return;
    if (saturatingConsumer(*Call, *Result.Context))
      return;
    // torch::sum(mean.pow(2) + var - 1 - logvar, {1, 2, 3}) in fp16: the total passes 65504
    // long before one square does, and mpnanny-unscaled-sum reports the sum; one finding
    // per hazard. Summed in fp32 (a dtype), the square is reported on its own.
    if (auto Squared = squareOf(Call, *Result.Context); Squared && Squared->Node == Call)
      if (const CallExpr *Sum = wholeSampleSumOf(*Call, *Result.Context)) {
        auto SumCall = classifyTorchCall(*Sum);
        const kb::Op *SumOp = SumCall ? lookupOp(*SumCall, *knowledgeBase()) : nullptr;
        if (SumOp && Context.computeFormatOf(*SumCall, SumOp) == Format &&
            !onlyComparedWithZero(*Sum, *Result.Context))
          return;
      }
  }
  std::string PrecisionName = Format ? kb::toString(*Format) : kb::toString(Why.Value);
  std::string Spelled = TC->spelled();
  Subject About{Call, Op, Hit->Kind, Hit->Level, PrecisionName};
  report(*Result.Context, About, Call->getExprLoc(), expand(Hit->Message, Spelled, PrecisionName),
         expand(Hit->Fix, Spelled, PrecisionName), Why);
}

} // namespace clang::tidy::mpnanny
