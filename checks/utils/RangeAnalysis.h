//===--- RangeAnalysis.h - mpnanny -------------------------------*- C++ -*-===//
//
// Intervals over the tensor-valued expressions and locals of one function, with
// transfer functions from the knowledge base (`range:` and `transfer:` of each op),
// constants rounded as the computing format rounds them (1e-8 is 0 in fp16), and
// locals followed to their initializer unless they are reassigned or mutated.
// Unknown stays unknown: the full real line, which no check reports on.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_RANGEANALYSIS_H
#define MPNANNY_CHECKS_RANGEANALYSIS_H

#include "KnowledgeBase.h"
#include "PrecisionContext.h"
#include "clang/AST/ASTContext.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::mpnanny {

/// A set of reals [Lo, Hi], each end possibly open; infinite ends are open.
struct Interval {
  double Lo = -std::numeric_limits<double>::infinity();
  double Hi = std::numeric_limits<double>::infinity();
  bool LoOpen = true, HiOpen = true;
  /// Where the decisive bound comes from, for messages: "torch::softmax outputs [0, 1]".
  std::string Origin;
  /// The origin includes a constant that the format stores as the very value it was written
  /// to keep away from: a nonzero eps or floor stored as 0 (1e-8 in fp16, a clamp bound of
  /// 1e-20), an upper clamp bound below 1 stored as 1 (1 - 1e-7 in fp16).
  /// mpnanny-fp16-constant-range reports that constant, so a zero it lets through is already
  /// reported there.
  bool FlushedConstant = false;

  static Interval unknown() { return {}; }
  static Interval point(double V) { return {V, V, false, false, "", false}; }
  static Interval closed(double Lo, double Hi) { return {Lo, Hi, false, false, "", false}; }

  /// True when nothing is known: no check may report on such a value.
  bool isUnknown() const;
  bool contains(double V) const;
  bool mayBeZero() const { return contains(0); }
  bool mayBeNegative() const { return Lo < 0; }
  /// True when the value may be above X. Infinite Hi counts: test isBoundedAbove.
  bool mayExceed(double X) const { return Hi > X; }
  bool isBoundedAbove() const { return Hi < std::numeric_limits<double>::infinity(); }
  /// "[0, 1]", "(0, inf)", "[-20, 20]".
  std::string str() const;
};

/// The value V takes once stored in F: IEEE round to nearest, ties to even, subnormals
/// included, inf beyond the largest finite value. fp16(1 - 1e-7) is exactly 1, fp16(1e-7) is
/// the subnormal 1.19e-7, bf16(1.001) is 1, fp16(1e-8) is 0.
double storedValue(double V, kb::Format F);
/// The number of fraction bits F stores: 10 in fp16, 7 in bf16, 23 in fp32.
int mantissaBits(kb::Format F);

/// True when a clamp bound inside (-1, 1) is stored in F as the unit it was written to stay
/// away from: an upper bound below 1 that becomes 1 (1 - 1e-7 in fp16 and bf16), a lower bound
/// above -1 that becomes -1. The clamped value then reaches the unit, where log(1 - p),
/// log1p(-p) and atanh(p) are infinite.
bool roundsOntoUnit(double Bound, bool Upper, kb::Format F);

/// The analysis of one translation unit's user functions, on demand and memoized.
class RangeAnalysis {
public:
  RangeAnalysis(ASTContext &Ctx, const kb::KnowledgeBase &KB, const PrecisionContext &Precision);
  ~RangeAnalysis();

  /// The values E may take, in the format it is computed in (inferred from the
  /// precision context and the code), or in Assumed when nothing says otherwise.
  Interval rangeOf(const Expr *E, std::optional<kb::Format> Assumed = std::nullopt) const;

  /// The format a tensor value is computed in: the op's format under the precision
  /// context, the known format of its operands, else the context's own format.
  kb::Format formatOf(const Expr *E) const;

  /// The local variable's initializer when the local is never reassigned or
  /// mutated in place in its function: the expression its uses stand for.
  const Expr *stableInitializer(const VarDecl *Var) const;
  /// What a local or member read stands for: its initializer when nothing changes it, else
  /// the value that reaches the read in straight-line code (ValueFlow::reachingValue).
  const Expr *valueAt(const Expr *Read, bool InPlaceOps) const;

  /// The tensors a list argument holds (`torch::cat({a, b}, 1)`, `torch::stack(parts)` with
  /// `std::vector<torch::Tensor> parts{a, b};` never changed after): the written elements, for
  /// questions whose answer is their union. Nullopt when the list is built another way
  /// (push_back, a parameter, a function's result).
  std::optional<std::vector<const Expr *>> elementsOf(const Expr *List) const;

private:
  Interval rangeImpl(const Expr *E, std::optional<kb::Format> Assumed, int Depth) const;
  Interval rangeOfCall(const CallExpr &Call, std::optional<kb::Format> Assumed, int Depth) const;
  Interval rangeOfOperator(const CXXOperatorCallExpr &Op, std::optional<kb::Format> Assumed,
                           int Depth) const;
  /// The union of the elements' intervals (cat, stack); unknown when one is unknown.
  Interval unionOf(llvm::ArrayRef<const Expr *> Elements, std::optional<kb::Format> Assumed,
                   int Depth) const;
  /// The values an element of Container holds: `x[i]` of a tensor, `x.chunk(2)[0]` of the list
  /// a view op returns.
  Interval rangeOfElement(const Expr &Container, int Depth) const;
  /// E's format from its inputs' formats; an input not known yet is added to Missing
  /// (and the result is then meaningless) so that formatOf can work it out first.
  kb::Format computeFormat(const Expr *E, llvm::SmallVectorImpl<const Expr *> &Missing) const;

  ASTContext &Ctx;
  const kb::KnowledgeBase &KB;
  const PrecisionContext &Precision;
  struct Cache;
  std::unique_ptr<Cache> Memo;
};

} // namespace clang::tidy::mpnanny

#endif
