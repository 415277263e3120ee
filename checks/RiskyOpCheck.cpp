//===--- RiskyOpCheck.cpp - mpnanny ----------------------------------------===//
#include "RiskyOpCheck.h"

#include "HalfData.h"
#include "TorchCalls.h"
#include <algorithm>

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void RiskyOpCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (knowledgeBase())
    Finder->addMatcher(knowledgeBaseCall().bind("call"), this);
}

void RiskyOpCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  auto TC = classifyTorchCall(*Call);
  if (!TC)
    return;
  const kb::Op *Op = lookupOp(*TC, *knowledgeBase());
  if (!Op || Op->Risks.empty() || Op->Check != "mpnanny-risky-op")
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

  const kb::Risk *Hit = nullptr;
  for (const kb::Risk &R : Op->Risks) {
    // Note-level risks are documentation (the knowledge pages show them), not findings:
    // a linter that warns about every bf16 sum gets switched off.
    if (R.Level == kb::Severity::Note)
      continue;
    // A banned op raises only under autocast; elsewhere its other risks apply.
    bool Applies = R.Kind == kb::RiskKind::Banned
                       ? !Format
                       : Format && std::find(R.Formats.begin(), R.Formats.end(), *Format) !=
                                       R.Formats.end();
    if (Applies) {
      Hit = &R;
      break;
    }
  }
  if (!Hit)
    return;
  std::string PrecisionName = Format ? kb::toString(*Format) : kb::toString(Why.Value);
  std::string Spelled = TC->spelled();
  Subject About{Call, Op, kb::toString(Hit->Kind), kb::toString(Hit->Level), PrecisionName};
  report(*Result.Context, About, Call->getExprLoc(),
         expand(Hit->Message, Spelled, PrecisionName),
         expand(Hit->Fix, Spelled, PrecisionName), Why);
}

} // namespace clang::tidy::mpnanny
