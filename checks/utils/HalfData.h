//===--- HalfData.h - mpnanny ------------------------------------*- C++ -*-===//
//
// What the checks on half-precision arithmetic need to know about an expression
// beyond its precision context: whether it holds integers or booleans (a count, a
// mask), whether it is the square at the heart of a hand-written statistic
// (x.pow(2), x.square(), x*x), and whether its value ends up in a loss.
// Used by mpnanny-softmax-dtype, -unscaled-sum, -norm-in-half and -loss-in-half,
// and by mpnanny-risky-op to leave hand-written statistics to -norm-in-half.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_HALFDATA_H
#define MPNANNY_CHECKS_HALFDATA_H

#include "TorchCalls.h"
#include "clang/AST/ASTContext.h"
#include <optional>

namespace clang::tidy::mpnanny {

/// True when E is known to hold integers or booleans: a comparison, a logical
/// operator, `.to(torch::kLong)`, `argmax`, or a local initialized from one.
/// Reductions of such tensors are exact integer arithmetic, not half.
bool isIntegralData(const Expr *E);
/// True when the call asks for an integer or boolean result type (x.sum(torch::kLong)).
bool requestsIntegralDtype(const TorchCall &Call);

/// The square of a hand-written statistic: x.pow(2), torch::pow(x, 2), x.square(),
/// x * x, x.mul(x) (also with the same parenthesized expression on both sides).
struct Square {
  const Expr *Node = nullptr;    ///< the squaring expression
  const Expr *Operand = nullptr; ///< x
  std::optional<TorchCall> Call; ///< for pow and square: the op call (autocast covers them)
};
/// The square E computes, seeing through parentheses and one local variable.
std::optional<Square> squareOf(const Expr *E, const ASTContext &Ctx);

/// The `mean` call that averages E directly (E is its self), if any.
const CallExpr *meanOf(const Expr &E, ASTContext &Ctx);
/// True for a pow/square call whose result is averaged by mean: a hand-written
/// statistic, which mpnanny-norm-in-half (or mpnanny-loss-in-half) reports.
bool isSquareOfStatistic(const CallExpr &Call, ASTContext &Ctx);

/// A sum with no dimension, or over three or more named dimensions (`sum(x, {1, 2, 3})`, a KL
/// or NLL over C, H and W, through a local or a parameter): it adds what a whole sample holds,
/// thousands of terms at least. One or two named dimensions of unknown size may be small.
bool sumsAWholeSample(const TorchCall &Call, ASTContext &Ctx);
/// The sum over a whole sample (sumsAWholeSample) that E's elements reach through
/// element-wise arithmetic: `torch::sum(x.pow(2) + var - 1, {1, 2, 3})` for the square.
const CallExpr *wholeSampleSumOf(const Expr &E, ASTContext &Ctx);

/// True when a variable's name says it holds a loss (loss, total_loss, policyLoss;
/// not loss_scale).
bool isLossName(llvm::StringRef Name);
/// True when E's value ends up in a loss: it is part of the initializer of (or the value
/// assigned to) a variable named like a loss, or of the tensor `.backward()` is called on.
bool feedsLoss(const Expr &E, ASTContext &Ctx);

} // namespace clang::tidy::mpnanny

#endif
