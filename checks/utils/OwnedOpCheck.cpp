//===--- OwnedOpCheck.cpp - mpnanny ----------------------------------------===//
#include "OwnedOpCheck.h"

#include "HalfData.h"
#include <algorithm>

namespace clang::tidy::mpnanny {

std::optional<OwnedOpCheck::OwnedCall> OwnedOpCheck::ownedRisk(const CallExpr &Call,
                                                               ASTContext &Ctx) const {
  if (!knowledgeBase())
    return std::nullopt;
  auto TC = classifyTorchCall(Call);
  if (!TC)
    return std::nullopt;
  const kb::Op *Op = lookupOp(*TC, *knowledgeBase());
  if (!Op || Op->Check != Owner || Op->Risks.empty())
    return std::nullopt;
  const PrecisionContext &Context = precisionContext(Ctx);
  PrecisionReason Why = Context.at(Call);
  if (Why.Value == kb::Precision::FP32)
    return std::nullopt;
  if (requestsIntegralDtype(*TC))
    return std::nullopt;
  std::optional<kb::Format> Format = Context.computeFormatOf(*TC, Op);
  for (const kb::Risk &R : Op->Risks) {
    if (!R.appliesIn(Format))
      continue;
    // Counts and masks reduce exactly, whatever the precision around them. Asked last: the
    // answer may read the whole function that declares the tensor.
    if (TC->Self && isIntegralData(TC->Self))
      return std::nullopt;
    if (R.Uses.empty())
      return OwnedCall{*TC, Op, &R, Format, Why, std::nullopt};
    // A risk real only in some uses of the result: one of them must be reached.
    std::vector<UseKind> Kinds;
    for (const std::string &U : R.Uses)
      if (auto K = parseUseKind(U))
        Kinds.push_back(*K);
    if (auto Use = firstUseAs(Call, Kinds, *knowledgeBase(), Ctx))
      return OwnedCall{*TC, Op, &R, Format, Why, Use};
  }
  return std::nullopt;
}

void OwnedOpCheck::reportOwned(const OwnedCall &Found, ASTContext &Ctx) {
  std::string PrecisionName =
      Found.Format ? kb::toString(*Found.Format) : kb::toString(Found.Why.Value);
  std::string Spelled = Found.Call.spelled();
  Subject About{Found.Call.Call, Found.Op, Found.Risk->Kind, Found.Risk->Level, PrecisionName};
  std::string Message = expand(Found.Risk->Message, Spelled, PrecisionName);
  if (Found.Use) {
    static const char *const Phrase[] = {"a cumsum", "a log", "a division", "a comparison"};
    Message += "; here they reach " + std::string(Phrase[static_cast<int>(Found.Use->Kind)]) +
               " (line " +
               std::to_string(
                   Ctx.getSourceManager().getExpansionLineNumber(Found.Use->At->getBeginLoc())) +
               ")";
  }
  report(Ctx, About, Found.Call.Call->getExprLoc(), Message,
         expand(Found.Risk->Fix, Spelled, PrecisionName), Found.Why);
}

} // namespace clang::tidy::mpnanny
