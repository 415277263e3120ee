//===--- NaiveSoftmaxCheck.cpp - mpnanny -----------------------------------===//
#include "NaiveSoftmaxCheck.h"

#include "utils/SoftmaxShapes.h"
#include "utils/TorchCalls.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/FoldingSet.h"
#include <cmath>

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void NaiveSoftmaxCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (!knowledgeBase())
    return;
  Finder->addMatcher(knowledgeBaseCall().bind("call"), this);
  Finder->addMatcher(
      cxxOperatorCallExpr(unless(isExpansionInSystemHeader()), hasOverloadedOperatorName("/"))
          .bind("slash"),
      this);
}

void NaiveSoftmaxCheck::onStartOfTranslationUnit() {
  MpnannyCheck::onStartOfTranslationUnit();
  Ranges.reset();
}

void NaiveSoftmaxCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  if (!Ranges)
    Ranges = std::make_unique<RangeAnalysis>(Ctx, *knowledgeBase(), precisionContext(Ctx));
  if (const auto *Slash = Result.Nodes.getNodeAs<CXXOperatorCallExpr>("slash")) {
    if (Slash->getNumArgs() == 2)
      checkDivision(*Slash, Slash->getArg(0), Slash->getArg(1), Ctx);
    return;
  }
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  auto TC = classifyTorchCall(*Call);
  if (!TC || !TC->Self || TC->Args.empty())
    return;
  const kb::Op *Op = lookupOp(*TC, *knowledgeBase());
  if (Op && Op->Id == "div")
    checkDivision(*Call, TC->Self, TC->Args[0], Ctx);
}

namespace {
struct OpCall {
  const CallExpr *Call = nullptr;
  TorchCall TC;
};

std::optional<OpCall> callOf(const Expr *E, const char *Id, const kb::KnowledgeBase &KB) {
  const auto *Call = dyn_cast_or_null<CallExpr>(E);
  auto TC = Call ? classifyTorchCall(*Call) : std::nullopt;
  if (!TC || !TC->Self)
    return std::nullopt;
  const kb::Op *Op = lookupOp(*TC, KB);
  if (!Op || Op->Id != Id)
    return std::nullopt;
  return OpCall{Call, *TC};
}

bool sameValue(const Expr *A, const Expr *B, const RangeAnalysis &Ranges, const ASTContext &Ctx) {
  A = resolveStableLocals(A, Ranges);
  B = resolveStableLocals(B, Ranges);
  if (A == B)
    return true;
  llvm::FoldingSetNodeID IdA, IdB;
  A->Profile(IdA, Ctx, /*Canonical=*/true);
  B->Profile(IdB, Ctx, /*Canonical=*/true);
  return IdA == IdB;
}

std::string textOf(const Expr *E, const ASTContext &Ctx) {
  if (!E || E->getBeginLoc().isMacroID() || E->getEndLoc().isMacroID())
    return "";
  return Lexer::getSourceText(CharSourceRange::getTokenRange(E->getSourceRange()),
                              Ctx.getSourceManager(), Ctx.getLangOpts())
      .str();
}

/// The rewrite to torch::softmax(x, dim), when it is exact: both exps and the sum
/// written inline, the sum over one dim with keepdim true and nothing else.
std::optional<FixItHint> softmaxFix(const Expr &Division, const Expr *Numerator,
                                    const Expr *Denominator, const OpCall &Exp, const OpCall &Sum,
                                    const ASTContext &Ctx) {
  if (ignoreConversions(Numerator) != Exp.Call || ignoreConversions(Denominator) != Sum.Call)
    return std::nullopt;
  if (!isa<CallExpr>(ignoreConversions(Sum.TC.Self)))
    return std::nullopt;
  if ((Sum.TC.Kind != Spelling::Method && Sum.TC.Kind != Spelling::Function) ||
      Sum.TC.Args.size() != 2)
    return std::nullopt;
  // A bool evaluates as a 1-bit integer: true may read as -1.
  auto KeepDim = evaluateNumber(Sum.TC.Args[1], Ctx);
  if (!KeepDim || *KeepDim == 0)
    return std::nullopt;
  const Expr *Dim = ignoreConversions(Sum.TC.Args[0]);
  if (const auto *Braced = dyn_cast<CXXStdInitializerListExpr>(Dim)) // sum({1}, true)
    Dim = ignoreConversions(Braced->getSubExpr());
  if (const auto *List = dyn_cast<InitListExpr>(Dim)) {
    if (List->getNumInits() != 1)
      return std::nullopt;
    Dim = List->getInit(0);
  }
  if (!Dim->getType()->isIntegerType() || Exp.TC.Self->HasSideEffects(Ctx))
    return std::nullopt;
  std::string X = textOf(Exp.TC.Self, Ctx), DimText = textOf(Dim, Ctx);
  if (X.empty() || DimText.empty() || Division.getBeginLoc().isMacroID() ||
      Division.getEndLoc().isMacroID())
    return std::nullopt;
  return FixItHint::CreateReplacement(CharSourceRange::getTokenRange(Division.getSourceRange()),
                                      "torch::softmax(" + X + ", " + DimText + ")");
}
/// The tensor under a guard against a zero denominator: `d + eps`, `eps + d`,
/// `d.add(eps)`, `torch::add(d, eps)`, `d.clamp_min(eps)` with a literal (or constant) eps.
const Expr *guardedOperand(const Expr *E, const kb::KnowledgeBase &KB, const ASTContext &Ctx) {
  if (const auto *Plus = dyn_cast_or_null<CXXOperatorCallExpr>(E)) {
    if (Plus->getOperator() != OO_Plus || Plus->getNumArgs() != 2)
      return nullptr;
    for (unsigned I = 0; I < 2; ++I)
      if (isTensorType(Plus->getArg(I)->getType()) && evaluateNumber(Plus->getArg(1 - I), Ctx))
        return Plus->getArg(I);
    return nullptr;
  }
  const auto *Call = dyn_cast_or_null<CallExpr>(E);
  auto TC = Call ? classifyTorchCall(*Call) : std::nullopt;
  if (!TC || !TC->Self || TC->Args.empty()) // add's alpha scales the eps: any alpha will do
    return nullptr;
  const kb::Op *Op = lookupOp(*TC, KB);
  if (!Op || (Op->Id != "add" && Op->Id != "clamp_min") || !evaluateNumber(TC->Args[0], Ctx))
    return nullptr;
  return TC->Self;
}

} // namespace

void NaiveSoftmaxCheck::checkDivision(const Expr &Division, const Expr *Numerator,
                                      const Expr *Denominator, ASTContext &Ctx) {
  const kb::KnowledgeBase &KB = *knowledgeBase();
  auto Exp = callOf(resolveStableLocals(Numerator, *Ranges), "exp", KB);
  if (!Exp)
    return;
  // e.sum(-1).unsqueeze(-1) is e.sum(-1, true): follow views of the sum, and the guards
  // against a zero sum, which do nothing for an inf one (inf / (inf + eps) is NaN too).
  const Expr *Den = resolveStableLocals(Denominator, *Ranges);
  for (int Depth = 0; Depth < 8; ++Depth) {
    if (const Expr *Guarded = guardedOperand(Den, KB, Ctx)) {
      Den = resolveStableLocals(Guarded, *Ranges);
      continue;
    }
    const auto *Call = dyn_cast_or_null<CallExpr>(Den);
    auto TC = Call ? classifyTorchCall(*Call) : std::nullopt;
    const kb::Op *Op = TC && TC->Self ? lookupOp(*TC, KB) : nullptr;
    if (!Op || Op->Transfer != "identity")
      break;
    Den = resolveStableLocals(TC->Self, *Ranges);
  }
  auto Sum = callOf(Den, "sum", KB);
  if (!Sum)
    return;
  auto SummedExp = callOf(resolveStableLocals(Sum->TC.Self, *Ranges), "exp", KB);
  if (!SummedExp || !sameValue(Exp->TC.Self, SummedExp->TC.Self, *Ranges, Ctx))
    return;
  PrecisionReason Why = precisionContext(Ctx).at(Division);
  if (Why.Value == kb::Precision::FP32)
    return;
  // bf16 and fp32 overflow only above 88.72: the same limit, not a precision hazard.
  if (Ranges->formatOf(Exp->Call) != kb::Format::FP16)
    return;
  const Expr *X = resolveStableLocals(Exp->TC.Self, *Ranges);
  if (isShiftedByMax(X, *Ranges))
    return;
  double Limit = std::log(limitsOf(kb::Format::FP16).Max);
  Interval Arg = Ranges->rangeOf(Exp->TC.Self);
  if (Arg.isBoundedAbove() && !Arg.mayExceed(Limit))
    return;
  std::string Message = "softmax written as exp(x) / exp(x).sum() without subtracting the "
                        "maximum: " +
                        Exp->TC.spelled() +
                        " in fp16 overflows to inf for x > 11.09 (exp(11.09) = 65504), and "
                        "inf / inf is NaN";
  if (Arg.isBoundedAbove())
    Message += "; here x reaches " + formatNumber(Arg.Hi);
  Subject About{&Division, KB.findById("exp"), kb::RiskKind::Overflow, kb::Severity::Warning,
                kb::toString(kb::Format::FP16)};
  report(Ctx, About, Division.getExprLoc(), Message,
         "use torch::softmax(x, dim) (it subtracts the row maximum), or shift first: "
         "x - x.amax(dim, /*keepdim=*/true)",
         Why, softmaxFix(Division, Numerator, Denominator, *Exp, *Sum, Ctx));
}

} // namespace clang::tidy::mpnanny
