//===--- SoftmaxShapes.h - mpnanny -------------------------------*- C++ -*-===//
//
// The shapes a softmax takes in user code, shared by the checks that reason about it:
// a softmax under a log (log-softmax, unsafe-math) and a shift by the maximum before an
// exp (naive-softmax, unsafe-math). Locals are followed through their stable initializers.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_UTILS_SOFTMAXSHAPES_H
#define MPNANNY_CHECKS_UTILS_SOFTMAXSHAPES_H

#include "KnowledgeBase.h"
#include "RangeAnalysis.h"
#include "clang/AST/Expr.h"
#include <optional>

namespace clang::tidy::mpnanny {

/// A tensor expression with conversions stripped and stable locals replaced by their
/// initializers; Direct (when given) is set to false when a local was crossed.
const Expr *resolveStableLocals(const Expr *E, const RangeAnalysis &Ranges, bool *Direct = nullptr);

struct SoftmaxUnderLog {
  const CallExpr *Softmax = nullptr;
  bool Plain = true;         ///< the log's argument is the softmax call itself
  std::optional<double> Eps; ///< the constant added to the probabilities
  bool Clamped = false;
};
/// The softmax whose probabilities reach a log's argument: directly, through locals, an
/// added eps, a clamp or a conversion.
std::optional<SoftmaxUnderLog> findSoftmaxUnderLog(const Expr *LogArgument,
                                                   const RangeAnalysis &Ranges,
                                                   const kb::KnowledgeBase &KB,
                                                   const ASTContext &Ctx);

/// X is `y - max(y)` (or `y.sub(amax)`, `y - logsumexp(y)`), through locals: an exp of it
/// cannot overflow.
bool isShiftedByMax(const Expr *X, const RangeAnalysis &Ranges);

} // namespace clang::tidy::mpnanny

#endif
