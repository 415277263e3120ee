//===--- LogSoftmaxCheck.h - mpnanny -----------------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_LOGSOFTMAXCHECK_H
#define MPNANNY_CHECKS_LOGSOFTMAXCHECK_H

#include "utils/MpnannyCheck.h"
#include "utils/RangeAnalysis.h"
#include "llvm/ADT/DenseSet.h"

namespace clang::tidy::mpnanny {

/// A softmax whose probabilities reach a log: `log(softmax(x))`, through locals,
/// views, conversions, an added eps or a clamp.
/// Flags the log of a softmax (`log(softmax(x))`, with an eps or a clamp in between,
/// and `nll_loss(log(softmax(x)))`): use log_softmax, or cross_entropy.
///
/// For the user-facing documentation see: knowledge/mpnanny-log-softmax.md
class LogSoftmaxCheck : public MpnannyCheck {
public:
  using MpnannyCheck::MpnannyCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
  void onStartOfTranslationUnit() override;

private:
  std::unique_ptr<RangeAnalysis> Ranges;
  llvm::DenseSet<const CallExpr *> ReportedThroughLoss;
};

} // namespace clang::tidy::mpnanny

#endif
