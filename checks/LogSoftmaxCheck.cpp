//===--- LogSoftmaxCheck.cpp - mpnanny -------------------------------------===//
#include "LogSoftmaxCheck.h"

#include "utils/SoftmaxShapes.h"
#include "utils/TorchCalls.h"
#include "clang/Lex/Lexer.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void LogSoftmaxCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (knowledgeBase())
    Finder->addMatcher(knowledgeBaseCall().bind("call"), this);
}

void LogSoftmaxCheck::onStartOfTranslationUnit() {
  MpnannyCheck::onStartOfTranslationUnit();
  Ranges.reset();
  ReportedThroughLoss.clear();
}

/// The location of the callee's name: `softmax` in `torch::softmax(x, 1)` and in
/// `x.softmax(1)`; invalid for other callee shapes.
static SourceLocation calleeNameLoc(const CallExpr &Call) {
  const Expr *Callee = Call.getCallee()->IgnoreImpCasts();
  if (const auto *Member = dyn_cast<MemberExpr>(Callee))
    return Member->getMemberLoc();
  if (const auto *Ref = dyn_cast<DeclRefExpr>(Callee))
    return Ref->getLocation();
  return {};
}

/// `torch::log(torch::softmax(x, d))` -> `torch::log_softmax(x, d)` and
/// `x.softmax(d).log()` -> `x.log_softmax(d)`: the softmax call's own text with
/// `log_` before its name, so the dim and dtype arguments carry over as written.
static std::optional<FixItHint> logSoftmaxFix(const CallExpr &Log, const CallExpr &Softmax,
                                              const ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation Name = calleeNameLoc(Softmax);
  if (Name.isInvalid() || Name.isMacroID() || Log.getBeginLoc().isMacroID() ||
      Log.getEndLoc().isMacroID() || Softmax.getBeginLoc().isMacroID() ||
      Softmax.getEndLoc().isMacroID())
    return std::nullopt;
  CharSourceRange SoftmaxRange = CharSourceRange::getTokenRange(Softmax.getSourceRange());
  llvm::StringRef Text = Lexer::getSourceText(SoftmaxRange, SM, Ctx.getLangOpts());
  unsigned Begin = SM.getFileOffset(Softmax.getBeginLoc());
  unsigned At = SM.getFileOffset(Name);
  if (Text.empty() || At < Begin || At - Begin > Text.size())
    return std::nullopt;
  std::string Replacement =
      Text.substr(0, At - Begin).str() + "log_" + Text.substr(At - Begin).str();
  return FixItHint::CreateReplacement(CharSourceRange::getTokenRange(Log.getSourceRange()),
                                      Replacement);
}

void LogSoftmaxCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  ASTContext &Ctx = *Result.Context;
  auto TC = classifyTorchCall(*Call);
  if (!TC || !TC->Self)
    return;
  const kb::Op *Op = lookupOp(*TC, *knowledgeBase());
  if (!Op || (Op->Id != "log" && Op->Id != "log_" && Op->Id != "nll_loss"))
    return;
  if (ReportedThroughLoss.count(Call))
    return;
  PrecisionReason Why = precisionContext(Ctx).at(*Call);
  if (Why.Value == kb::Precision::FP32)
    return;
  if (!Ranges)
    Ranges = std::make_unique<RangeAnalysis>(Ctx, *knowledgeBase(), precisionContext(Ctx));

  const CallExpr *Log = Call;
  std::optional<TorchCall> LogCall = TC;
  if (Op->Id == "nll_loss") {
    // Only the inline form: through a local, the log itself is reported.
    Log = dyn_cast<CallExpr>(ignoreConversions(TC->Self));
    LogCall = Log ? classifyTorchCall(*Log) : std::nullopt;
    const kb::Op *Inner = LogCall ? lookupOp(*LogCall, *knowledgeBase()) : nullptr;
    if (!Inner || Inner->Id != "log" || !LogCall->Self)
      return;
  }
  auto Found = findSoftmaxUnderLog(LogCall->Self, *Ranges, *knowledgeBase(), Ctx);
  if (!Found)
    return;
  auto SoftmaxCall = classifyTorchCall(*Found->Softmax);
  kb::Format Format = Ranges->formatOf(Found->Softmax);
  const char *FormatName = kb::toString(Format);
  double Flush = limitsOf(Format).flushBelow();

  std::string Message = LogCall->spelled() + " of " + SoftmaxCall->spelled() +
                        " probabilities (computed in " + FormatName + "): a probability below " +
                        formatNumber(Flush) + " is exactly 0 in " + FormatName +
                        " and log(0) = -inf, whose gradient is NaN";
  if (Found->Eps) {
    if (*Found->Eps < Flush)
      Message += "; the added " + formatNumber(*Found->Eps) + " is 0 in " + FormatName +
                 " and guards nothing";
    else
      Message += "; the added " + formatNumber(*Found->Eps) +
                 " hides the -inf but bends the log-probabilities of every rare class";
  } else if (Found->Clamped) {
    Message += "; the clamp hides the -inf but stops the gradient of every clamped entry";
  }
  std::string Fix;
  std::optional<FixItHint> Exact;
  if (Call != Log) {
    Message = TC->spelled() + " of " + Message;
    Fix = "use torch::nn::functional::cross_entropy(logits, target): it is log_softmax and "
          "nll_loss in one, computed without forming the probabilities";
    ReportedThroughLoss.insert(Log);
  } else {
    std::string Stable =
        SoftmaxCall->Kind == Spelling::Module
            ? std::string("torch::nn::LogSoftmax")
            : SoftmaxCall->spelled().substr(0, SoftmaxCall->spelled().size() - 7) + "log_softmax";
    Fix = "use " + Stable +
          " (same dim and dtype): it computes x - logsumexp(x) without forming the "
          "probabilities";
    if (Found->Plain &&
        (LogCall->Kind == Spelling::Function || LogCall->Kind == Spelling::Method) &&
        (SoftmaxCall->Kind == Spelling::Function || SoftmaxCall->Kind == Spelling::Method))
      Exact = logSoftmaxFix(*Log, *Found->Softmax, Ctx);
  }
  Subject About{Call, Op, kb::RiskKind::Underflow, kb::Severity::Warning, FormatName};
  report(Ctx, About, Call->getExprLoc(), Message, Fix, Why, Exact);
}

} // namespace clang::tidy::mpnanny
