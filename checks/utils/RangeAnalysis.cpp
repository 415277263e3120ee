//===--- RangeAnalysis.cpp - mpnanny ---------------------------------------===//
#include "RangeAnalysis.h"
#include "ValueFlow.h"

#include "MpnannyCheck.h"
#include "TorchCalls.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <tuple>

namespace clang::tidy::mpnanny {

namespace {
constexpr double Inf = std::numeric_limits<double>::infinity();
constexpr int MaxDepth = 32;
} // namespace

bool Interval::isUnknown() const { return Lo == -Inf && Hi == Inf; }

bool Interval::contains(double V) const {
  bool AboveLo = Lo < V || (Lo == V && !LoOpen);
  bool BelowHi = V < Hi || (Hi == V && !HiOpen);
  return AboveLo && BelowHi;
}

std::string Interval::str() const {
  auto Num = [](double V) {
    if (V == Inf)
      return std::string("inf");
    if (V == -Inf)
      return std::string("-inf");
    return formatNumber(V);
  };
  return std::string(LoOpen ? "(" : "[") + Num(Lo) + ", " + Num(Hi) + (HiOpen ? ")" : "]");
}

struct RangeAnalysis::Cache {
  /// formatOf follows each local to its initializer: without this, a chain of n locals
  /// each made from the last is walked again from every use, n^2 steps (a generated
  /// 10k-statement function took minutes).
  llvm::DenseMap<const Expr *, kb::Format> Formats;
  /// Expressions whose format is being worked out: met again as an input, they are a
  /// variable used in its own initializer (`torch::Tensor y = y.exp();` compiles).
  llvm::DenseSet<const Expr *> FormatsInProgress;
  /// rangeImpl per (expression, assumed format, depth): a local used twice in the next
  /// one's initializer (a1 = a0 + a0; a2 = a1 + a1; ...) doubles the walk at each line,
  /// 2^32 steps without this (24 such lines hung the scan).
  std::map<std::tuple<const Expr *, int, int>, Interval> Ranges;
};

RangeAnalysis::RangeAnalysis(ASTContext &Ctx, const kb::KnowledgeBase &KB,
                             const PrecisionContext &Precision)
    : Ctx(Ctx), KB(KB), Precision(Precision), Memo(std::make_unique<Cache>()) {}

RangeAnalysis::~RangeAnalysis() = default;

/// A computed result stored in the format. A positive lower bound that the format
/// cannot hold becomes an exact 0 (exp(-20) is 0 in fp16); an open 0 stays open,
/// because "positive, of unknown size" is not evidence of underflow. Except for a
/// probability map (0, 1] in fp16: the knowledge base closes the maps fp16 computes at 0,
/// since a softmax over thousands of logits does reach probabilities below 2.98e-8, and
/// a map computed in fp32 then stored in fp16 (`softmax(x, -1, kFloat).to(kHalf)`) loses
/// the same tail.
static Interval roundTo(Interval I, kb::Format F) {
  const FormatLimits &L = limitsOf(F);
  if (I.Lo > 0 && I.Lo < L.flushBelow()) {
    I.Lo = 0;
    I.LoOpen = false;
  }
  if (F == kb::Format::FP16 && I.Lo == 0 && I.LoOpen && I.Hi == 1) {
    I.LoOpen = false;
    I.Origin += (I.Origin.empty() ? "" : "; ") + std::string("fp16 stores probabilities below ") +
                formatNumber(L.flushBelow()) + " as 0";
  }
  if (I.Hi < 0 && I.Hi > -L.flushBelow()) {
    I.Hi = 0;
    I.HiOpen = false;
  }
  if (std::isfinite(I.Hi) && I.Hi > L.Max)
    I.Hi = Inf;
  if (std::isfinite(I.Lo) && I.Lo < -L.Max)
    I.Lo = -Inf;
  if (I.Hi == Inf)
    I.HiOpen = true;
  if (I.Lo == -Inf)
    I.LoOpen = true;
  return I;
}

static Interval intersect(const Interval &A, const Interval &B) {
  Interval R = A;
  if (B.Lo > R.Lo || (B.Lo == R.Lo && B.LoOpen)) {
    R.Lo = B.Lo;
    R.LoOpen = B.LoOpen;
  }
  if (B.Hi < R.Hi || (B.Hi == R.Hi && B.HiOpen)) {
    R.Hi = B.Hi;
    R.HiOpen = B.HiOpen;
  }
  if (R.Lo > R.Hi)
    return A; // contradictory facts: trust neither over the other
  return R;
}

/// Applies a monotone increasing (or, with Decreasing, decreasing) function.
template <typename Fn> static Interval monotone(const Interval &I, Fn F, bool Decreasing = false) {
  Interval R;
  double A = F(I.Lo), B = F(I.Hi);
  if (std::isnan(A) || std::isnan(B))
    return Interval::unknown();
  if (!Decreasing) {
    R.Lo = A, R.Hi = B, R.LoOpen = I.LoOpen, R.HiOpen = I.HiOpen;
  } else {
    R.Lo = B, R.Hi = A, R.LoOpen = I.HiOpen, R.HiOpen = I.LoOpen;
  }
  return R;
}

static Interval add(const Interval &A, const Interval &B) {
  Interval R;
  R.Lo = A.Lo + B.Lo;
  R.Hi = A.Hi + B.Hi;
  if (std::isnan(R.Lo) || std::isnan(R.Hi))
    return Interval::unknown();
  R.LoOpen = A.LoOpen || B.LoOpen;
  R.HiOpen = A.HiOpen || B.HiOpen;
  return R;
}

static Interval negate(const Interval &A) {
  Interval R;
  R.Lo = -A.Hi, R.Hi = -A.Lo, R.LoOpen = A.HiOpen, R.HiOpen = A.LoOpen;
  return R;
}

static Interval multiply(const Interval &A, const Interval &B) {
  if (A.isUnknown() || B.isUnknown())
    return Interval::unknown();
  struct End {
    double V;
    bool Open;
  };
  End Products[4] = {{A.Lo * B.Lo, A.LoOpen || B.LoOpen},
                     {A.Lo * B.Hi, A.LoOpen || B.HiOpen},
                     {A.Hi * B.Lo, A.HiOpen || B.LoOpen},
                     {A.Hi * B.Hi, A.HiOpen || B.HiOpen}};
  Interval R;
  R.Lo = Inf, R.Hi = -Inf;
  for (const End &P : Products) {
    if (std::isnan(P.V)) // 0 * inf: nothing sound to say cheaply
      return Interval::unknown();
    if (P.V < R.Lo || (P.V == R.Lo && !P.Open))
      R.Lo = P.V, R.LoOpen = P.Open;
    if (P.V > R.Hi || (P.V == R.Hi && !P.Open))
      R.Hi = P.V, R.HiOpen = P.Open;
  }
  // A point factor of 0 gives exactly 0 whatever the open ends say.
  if (R.Lo == R.Hi)
    R.LoOpen = R.HiOpen = false;
  return R;
}

static Interval reciprocalOf(const Interval &A) {
  if (A.contains(0) || A.isUnknown())
    return Interval::unknown();
  if (A.Lo >= 0 || A.Hi <= 0) {
    Interval R = monotone(
        A, [](double V) { return V == 0 ? Inf : 1 / V; }, true);
    if (A.Lo == 0) // (0, h]: 1/x reaches arbitrarily large values
      R.Hi = Inf, R.HiOpen = true;
    if (A.Hi == 0)
      R.Lo = -Inf, R.LoOpen = true;
    return R;
  }
  return Interval::unknown();
}

static Interval divide(const Interval &A, const Interval &B) {
  Interval Inv = reciprocalOf(B);
  if (Inv.isUnknown())
    return Interval::unknown();
  return multiply(A, Inv);
}

static Interval squareOf(const Interval &A) {
  if (A.Lo >= 0)
    return monotone(A, [](double V) { return V * V; });
  if (A.Hi <= 0)
    return monotone(
        A, [](double V) { return V * V; }, true);
  double Hi = std::max(A.Lo * A.Lo, A.Hi * A.Hi);
  Interval R = Interval::closed(0, Hi);
  R.HiOpen = Hi == Inf;
  return R;
}

static Interval absOf(const Interval &A) {
  if (A.Lo >= 0)
    return A;
  if (A.Hi <= 0)
    return negate(A);
  Interval R = Interval::closed(0, std::max(-A.Lo, A.Hi));
  R.HiOpen = R.Hi == Inf;
  return R;
}

static Interval powOf(const Interval &A, double N) {
  if (N == 1)
    return A;
  if (N == 2)
    return squareOf(A);
  if (N == 0)
    return Interval::point(1);
  if (N == -1)
    return reciprocalOf(A);
  if (A.Lo < 0) // fractional powers of negatives are NaN, odd powers flip: give up
    return Interval::unknown();
  auto P = [N](double V) { return V == 0 && N < 0 ? Inf : std::pow(V, N); };
  Interval R = monotone(A, P, N < 0);
  if (N < 0 && A.Lo == 0)
    R.HiOpen = true;
  return R;
}

/// Sum over at least one element: each term is within [Lo, Hi], the count is unknown.
/// A sum is 0 only if every term is, which intervals cannot show: a nonnegative sum
/// is taken to be positive (a softmax row sums to 1 even when most terms are 0).
static Interval sumOf(const Interval &A) {
  Interval R;
  if (A.Lo >= 0)
    R.Lo = A.Lo, R.LoOpen = A.Lo == 0 ? true : A.LoOpen;
  if (A.Hi <= 0)
    R.Hi = A.Hi, R.HiOpen = A.Hi == 0 ? true : A.HiOpen;
  return R;
}

static bool isHalf(kb::Format F) { return F == kb::Format::FP16 || F == kb::Format::BF16; }

static kb::Format contextFormat(kb::Precision P) {
  switch (P) {
  case kb::Precision::FP16: return kb::Format::FP16;
  case kb::Precision::BF16: return kb::Format::BF16;
  default:
    // Under autocast, tensors that no op produced (inputs, parameters) are fp32.
    return kb::Format::FP32;
  }
}

static kb::Format widest(kb::Format A, kb::Format B) {
  if (A == B)
    return A;
  return kb::Format::FP32; // fp32 with anything, or fp16 with bf16, promotes to fp32
}

kb::Format RangeAnalysis::formatOf(const Expr *E) const {
  if (auto It = Memo->Formats.find(E); It != Memo->Formats.end())
    return It->second;
  // An explicit work list, not recursion: a sum of 10k terms, or 10k locals each made
  // from the last, is an input chain 10k deep, more frames than a thread's stack holds
  // under ASan.
  llvm::SmallVector<const Expr *, 16> Work{E};
  while (!Work.empty()) {
    const Expr *Next = Work.back();
    if (Memo->Formats.count(Next)) {
      Work.pop_back();
      continue;
    }
    Memo->FormatsInProgress.insert(Next);
    llvm::SmallVector<const Expr *, 4> Missing;
    kb::Format F = computeFormat(Next, Missing);
    if (Missing.empty()) {
      Memo->Formats[Next] = F;
      Memo->FormatsInProgress.erase(Next);
      Work.pop_back();
    } else {
      Work.append(Missing.begin(), Missing.end());
    }
  }
  return Memo->Formats.find(E)->second;
}

kb::Format RangeAnalysis::computeFormat(const Expr *E,
                                        llvm::SmallVectorImpl<const Expr *> &Missing) const {
  auto InputFormat = [&](const Expr *Input) {
    if (auto It = Memo->Formats.find(Input); It != Memo->Formats.end())
      return It->second;
    // A cycle says nothing about the format; fp32 is the one that raises no finding.
    if (!Memo->FormatsInProgress.count(Input))
      Missing.push_back(Input);
    return kb::Format::FP32;
  };
  E = ignoreConversions(E);
  if (!E)
    return kb::Format::FP32;
  bool Unparsed = false;
  if (auto Known = Precision.knownFormat(E, &Unparsed))
    return *Known;
  if (Unparsed) // a value the parse lost: unknown, and fp32 is the format that raises no finding
    return kb::Format::FP32;
  const PrecisionReason Reason = Precision.at(*E);
  kb::Precision Context = Reason.Value;
  if (Context == kb::Precision::FP32)
    return kb::Format::FP32;
  if (isa<DeclRefExpr>(E) || isa<MemberExpr>(E)) {
    if (const Expr *Value = valueAt(E, /*InPlaceOps=*/false))
      return InputFormat(Value);
    return contextFormat(Context);
  }
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
    std::optional<kb::Format> Result;
    for (const Expr *Arg : Op->arguments())
      if (isTensorType(Arg->getType())) {
        kb::Format F = InputFormat(Arg);
        Result = Result ? widest(*Result, F) : F;
      }
    return Result ? *Result : contextFormat(Context);
  }
  const auto *Call = dyn_cast<CallExpr>(E);
  auto TC = Call ? classifyTorchCall(*Call) : std::nullopt;
  if (!TC)
    return contextFormat(Context);
  if (auto D = explicitDtype(*TC))
    return *D;
  if (const Expr *Donor = dtypeDonor(*TC)) // `probs.to(logits.dtype())`
    return InputFormat(Donor);
  const kb::Op *OpEntry = lookupOp(*TC, KB);
  kb::Format Input = TC->Self ? InputFormat(TC->Self) : contextFormat(Context);
  if (Context == kb::Precision::AutocastFP16 || Context == kb::Precision::AutocastBF16) {
    kb::Format Lowered =
        Context == kb::Precision::AutocastFP16 ? kb::Format::FP16 : kb::Format::BF16;
    switch (Precision.autocastPolicy(OpEntry, Reason)) {
    case kb::AutocastPolicy::Lower: return Lowered;
    case kb::AutocastPolicy::FP32:
    case kb::AutocastPolicy::FP32UnlessDtype:
    case kb::AutocastPolicy::Banned: return kb::Format::FP32;
    case kb::AutocastPolicy::Promote:
    case kb::AutocastPolicy::None: return Input;
    }
  }
  return Input;
}

const Expr *RangeAnalysis::stableInitializer(const VarDecl *Var) const {
  return ValueFlow::get(Ctx).stableInitializer(Var);
}

const Expr *RangeAnalysis::valueAt(const Expr *Read, bool InPlaceOps) const {
  const ValueFlow &Flow = ValueFlow::get(Ctx);
  if (const auto *Ref = dyn_cast<DeclRefExpr>(Read))
    if (const Expr *Init = stableInitializer(dyn_cast<VarDecl>(Ref->getDecl())))
      return Init;
  return Flow.reachingValue(Read, InPlaceOps);
}

std::optional<std::vector<const Expr *>> RangeAnalysis::elementsOf(const Expr *List) const {
  for (int Depth = 0; List && Depth < 8; ++Depth) {
    List = List->IgnoreImplicit()->IgnoreParens();
    if (isTensorType(List->getType())) // `ArrayRef<Tensor>(const Tensor &)`: a list of one
      return std::vector<const Expr *>{List};
    if (const auto *Init = dyn_cast<InitListExpr>(List))
      return std::vector<const Expr *>(Init->inits().begin(), Init->inits().end());
    if (const auto *Std = dyn_cast<CXXStdInitializerListExpr>(List)) {
      List = Std->getSubExpr();
    } else if (const auto *Construct = dyn_cast<CXXConstructExpr>(List)) {
      // An ArrayRef, ITensorListRef or std::vector made from one list (an allocator or other
      // trailing parameter left to its default).
      if (Construct->getNumArgs() == 0 ||
          !std::all_of(Construct->arg_begin() + 1, Construct->arg_end(),
                       [](const Expr *A) { return isa<CXXDefaultArgExpr>(A); }))
        return std::nullopt;
      List = Construct->getArg(0);
    } else if (const auto *Ref = dyn_cast<DeclRefExpr>(List)) {
      List = stableInitializer(dyn_cast<VarDecl>(Ref->getDecl()));
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

Interval RangeAnalysis::rangeOf(const Expr *E, std::optional<kb::Format> Assumed) const {
  return rangeImpl(E, Assumed, 0);
}

Interval RangeAnalysis::rangeImpl(const Expr *E, std::optional<kb::Format> Assumed,
                                  int Depth) const {
  if (!E || Depth > MaxDepth)
    return Interval::unknown();
  const auto Key = std::make_tuple(E, Assumed ? static_cast<int>(*Assumed) : -1, Depth);
  if (auto It = Memo->Ranges.find(Key); It != Memo->Ranges.end())
    return It->second;
  Interval Result = [&]() {
    E = ignoreConversions(E);
    if (!E)
      return Interval::unknown();
    if (!isTensorType(E->getType())) {
      // A constant, or the constants a local, parameter or member may hold (ValueFlow.h).
      FlowValues Values = ValueFlow::get(Ctx).valuesOf(E);
      if (!Values.Complete)
        return Interval::unknown();
      const kb::Format In = Assumed ? *Assumed : kb::Format::FP32;
      Interval R;
      for (size_t I = 0; I < Values.Values.size(); ++I) {
        const FlowValue &V = Values.Values[I];
        double Stored = storedValue(V.Value, In);
        if (I == 0)
          R = Interval::point(Stored);
        R.Lo = std::min(R.Lo, Stored);
        R.Hi = std::max(R.Hi, Stored);
        if (Stored == 0 && V.Value != 0 && R.Origin.empty()) {
          R.Origin = formatNumber(V.Value) + (V.Via.empty() ? "" : " (" + V.Via + ")") +
                     " is 0 in " + kb::toString(In);
          R.FlushedConstant = true;
        }
      }
      return R;
    }
    if (isa<DeclRefExpr>(E) || isa<MemberExpr>(E)) {
      const Expr *Value = valueAt(E, /*InPlaceOps=*/true);
      if (!Value)
        return Interval::unknown();
      return rangeImpl(Value, Assumed, Depth + 1);
    }
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E))
      return rangeOfOperator(*Op, Assumed, Depth);
    if (const auto *Call = dyn_cast<CallExpr>(E))
      return rangeOfCall(*Call, Assumed, Depth);
    return Interval::unknown();
  }();
  Memo->Ranges.emplace(Key, Result);
  return Result;
}

/// Gives R the origin of From (its text and whether it holds a flushed constant).
static void takeOrigin(Interval &R, const Interval &From) {
  R.Origin = From.Origin;
  R.FlushedConstant = From.FlushedConstant;
}

/// Gives R the origins of both operands.
static void joinOrigins(Interval &R, const Interval &A, const Interval &B) {
  R.Origin = A.Origin.empty() ? B.Origin : B.Origin.empty() ? A.Origin : A.Origin + "; " + B.Origin;
  R.FlushedConstant = A.FlushedConstant || B.FlushedConstant;
}

/// The smallest interval holding both, with the origins of both.
static Interval hull(const Interval &A, const Interval &B) {
  Interval R = A;
  if (B.Lo < R.Lo || (B.Lo == R.Lo && !B.LoOpen))
    R.Lo = B.Lo, R.LoOpen = B.LoOpen;
  if (B.Hi > R.Hi || (B.Hi == R.Hi && !B.HiOpen))
    R.Hi = B.Hi, R.HiOpen = B.HiOpen;
  if (A.Origin != B.Origin)
    joinOrigins(R, A, B);
  R.FlushedConstant = A.FlushedConstant || B.FlushedConstant;
  return R;
}

Interval RangeAnalysis::unionOf(llvm::ArrayRef<const Expr *> Elements,
                                std::optional<kb::Format> Assumed, int Depth) const {
  std::optional<Interval> R;
  for (const Expr *Element : Elements) {
    Interval I = rangeImpl(Element, Assumed, Depth + 1);
    if (I.isUnknown())
      return I;
    R = R ? hull(*R, I) : I;
  }
  return R ? *R : Interval::unknown();
}

Interval RangeAnalysis::rangeOfElement(const Expr &Container, int Depth) const {
  // `x[i]` is `x.index({i})` (TensorBody.h): it follows the method's entry, a view.
  const kb::Op *Index = KB.findMethod("index");
  if (!Index || Index->Transfer != "identity")
    return Interval::unknown();
  if (isTensorType(Container.getType()))
    return rangeImpl(&Container, std::nullopt, Depth + 1);
  // `x.chunk(2)[0]`, `parts[1]` with `auto parts = x.split(n, -1);`: an element of the list
  // a view op returns (its entry's transfer says so) holds values of its input.
  const Expr *Source = ignoreConversions(&Container);
  if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(Source))
    Source = stableInitializer(dyn_cast<VarDecl>(Ref->getDecl()));
  const auto *Call = dyn_cast_or_null<CallExpr>(Source ? ignoreConversions(Source) : nullptr);
  auto TC = Call ? classifyTorchCall(*Call) : std::nullopt;
  const kb::Op *Op = TC && TC->Self ? lookupOp(*TC, KB) : nullptr;
  if (!Op || Op->Transfer != "identity")
    return Interval::unknown();
  return rangeImpl(TC->Self, std::nullopt, Depth + 1);
}

Interval RangeAnalysis::rangeOfOperator(const CXXOperatorCallExpr &Op, std::optional<kb::Format>,
                                        int Depth) const {
  kb::Format F = formatOf(&Op);
  OverloadedOperatorKind K = Op.getOperator();
  if (K == OO_Subscript && Op.getNumArgs() == 2)
    return rangeOfElement(*Op.getArg(0), Depth);
  if (Op.getNumArgs() == 1) {
    if (K != OO_Minus)
      return Interval::unknown();
    Interval A = rangeImpl(Op.getArg(0), F, Depth + 1);
    Interval R = negate(A);
    takeOrigin(R, A);
    return R;
  }
  if (Op.getNumArgs() != 2)
    return Interval::unknown();
  Interval A = rangeImpl(Op.getArg(0), F, Depth + 1);
  Interval B = rangeImpl(Op.getArg(1), F, Depth + 1);
  Interval R;
  switch (K) {
  case OO_Plus: R = add(A, B); break;
  case OO_Minus: R = add(A, negate(B)); break;
  case OO_Star: R = multiply(A, B); break;
  case OO_Slash: R = divide(A, B); break;
  default: return Interval::unknown();
  }
  if (R.isUnknown())
    return R;
  joinOrigins(R, A, B);
  return roundTo(R, F);
}

int mantissaBits(kb::Format F) { return -std::ilogb(limitsOf(F).Epsilon); }

double storedValue(double V, kb::Format F) {
  if (V == 0 || !std::isfinite(V))
    return V;
  const FormatLimits &L = limitsOf(F);
  // The spacing of the format's values around |V|: 2^(e - mantissa bits) for a normal
  // number of exponent e, and the subnormals' fixed spacing below the smallest normal.
  // Dividing and multiplying by a power of two is exact in a double, so the only rounding
  // is std::nearbyint's, which rounds ties to even in the default rounding mode.
  const double Magnitude = std::fabs(V);
  const int Exponent = std::max(std::ilogb(Magnitude), std::ilogb(L.MinNormal));
  const double Spacing = std::ldexp(1.0, Exponent - mantissaBits(F));
  double Stored = std::nearbyint(Magnitude / Spacing) * Spacing;
  if (Stored > L.Max)
    Stored = Inf;
  return V < 0 ? -Stored : Stored;
}

bool roundsOntoUnit(double Bound, bool Upper, kb::Format F) {
  const double Unit = Upper ? 1 : -1;
  return std::fabs(Bound) < 1 && Bound * Unit > 0 && storedValue(Bound, F) == Unit;
}

/// The bounds of a clamp, told apart by the callee's parameter names (`min`, `max`), as
/// LibTorch declares clamp, clamp_min and clamp_max; each a constant written there or reaching
/// it (ValueFlow.h), stored as the format stores it.
static Interval clampBounds(const TorchCall &TC, kb::Format F, ASTContext &Ctx) {
  Interval R;
  for (unsigned I = 0; I < TC.Args.size(); ++I) {
    const ParmVarDecl *P = parameterOf(TC, I);
    if (!P)
      continue;
    llvm::StringRef Name = P->getName();
    auto V = ValueFlow::get(Ctx).constantOf(TC.Args[I]);
    if (!V)
      continue;
    const double Written = V->Value;
    double Stored = storedValue(Written, F);
    const bool Upper = Name == "max";
    if (Name == "min") {
      R.Lo = Stored, R.LoOpen = false;
      if (Stored == 0 && Written != 0)
        R.Origin = "the clamp bound " + formatNumber(Written) + " is 0 in " + kb::toString(F),
        R.FlushedConstant = true;
    } else if (Upper) {
      R.Hi = Stored, R.HiOpen = false;
    } else {
      continue;
    }
    // clamp(p, eps, 1 - 1e-7) in fp16: the bound is 1, so 1 - p reaches 0.
    if (roundsOntoUnit(Written, Upper, F))
      R.Origin = "the clamp bound " + formatExact(Written) + " is " + formatNumber(Stored) +
                 " in " + kb::toString(F),
      R.FlushedConstant = true;
  }
  return R;
}

Interval RangeAnalysis::rangeOfCall(const CallExpr &Call, std::optional<kb::Format> Assumed,
                                    int Depth) const {
  auto TC = classifyTorchCall(Call);
  if (!TC)
    return Interval::unknown();
  kb::Format F = formatOf(&Call);
  // Conversions keep the values, stored in the new format.
  if (TC->Kind == Spelling::Method &&
      (TC->Name == "to" || TC->Name == "toType" || TC->Name == "type" || TC->Name == "type_as" ||
       TC->Name == "half" || TC->Name == "float" || TC->Name == "double" ||
       TC->Name == "bfloat16")) {
    Interval In = rangeImpl(TC->Self, F, Depth + 1);
    return In.isUnknown() ? In : roundTo(In, F);
  }
  const kb::Op *Op = lookupOp(*TC, KB);
  if (!Op)
    return Interval::unknown();
  const std::string &T = Op->Transfer;
  bool ClampLike = T == "clamp" || (T.empty() && !Op->ValueArgs.empty() &&
                                    llvm::StringRef(Op->Id).starts_with("clamp"));
  if (T.empty() && !Op->Range && !ClampLike)
    return Interval::unknown();

  Interval In = TC->Self ? rangeImpl(TC->Self, F, Depth + 1) : Interval::unknown();
  Interval R = Interval::unknown();
  if (T == "identity" || T == "mean") {
    R = In;
  } else if (T == "union") {
    // torch::cat({a, b}), torch::stack(parts): every element of the list is one of theirs.
    const Expr *List = TC->Self ? TC->Self : TC->Args.empty() ? nullptr : TC->Args.front();
    if (auto Elements = elementsOf(List))
      R = unionOf(*Elements, F, Depth);
  } else if (T == "exp") {
    R = monotone(In, [](double V) { return std::exp(V); });
    if (In.Lo == -Inf)
      R.LoOpen = true;
  } else if (T == "log") {
    if (In.Lo >= 0 && !In.isUnknown()) {
      R = monotone(In, [](double V) { return V == 0 ? -Inf : std::log(V); });
      if (R.Lo == -Inf)
        R.LoOpen = true;
    }
  } else if (T == "sqrt") {
    if (In.Lo >= 0)
      R = monotone(In, [](double V) { return std::sqrt(V); });
  } else if (T == "rsqrt") {
    if (In.Lo > 0)
      R = monotone(
          In, [](double V) { return 1 / std::sqrt(V); }, true);
  } else if (T == "reciprocal") {
    R = reciprocalOf(In);
  } else if (T == "square") {
    R = squareOf(In);
  } else if (T == "abs") {
    R = absOf(In);
  } else if (T == "neg") {
    R = negate(In);
  } else if (T == "sum") {
    R = sumOf(In);
  } else if (T == "pow") {
    if (!TC->Args.empty())
      if (auto N = evaluateNumber(TC->Args[0], Ctx))
        R = powOf(In, *N);
  }
  if (ClampLike) {
    Interval Bounds = clampBounds(*TC, F, Ctx);
    R = intersect(T.empty() || T == "clamp" ? In : R, Bounds);
    takeOrigin(R, Bounds);
  }
  if (R.Origin.empty())
    takeOrigin(R, In);
  if (Op->Range) {
    Interval Fixed;
    Fixed.Lo = Op->Range->Min, Fixed.Hi = Op->Range->Max;
    Fixed.LoOpen = Op->Range->MinOpen || Fixed.Lo == -Inf;
    Fixed.HiOpen = Op->Range->MaxOpen || Fixed.Hi == Inf;
    // A probability map is closed at 0 in the knowledge base because fp16 rounds
    // probabilities below 2.98e-8 to 0; in bf16 that takes a logit gap above 93 and
    // in fp32 above 103, beyond what the checks call a finding.
    if (Fixed.Lo == 0 && !Fixed.LoOpen && Fixed.Hi == 1 && F != kb::Format::FP16)
      Fixed.LoOpen = true;
    Interval Before = R;
    R = intersect(R, Fixed);
    if (R.Lo == Fixed.Lo && R.Hi == Fixed.Hi)
      R.Origin = TC->spelled() + " gives " + Fixed.str(), R.FlushedConstant = false;
    else
      takeOrigin(R, Before);
  }
  if (R.isUnknown())
    return R;
  R = roundTo(R, F);
  (void)Assumed;
  (void)isHalf;
  return R;
}

} // namespace clang::tidy::mpnanny
