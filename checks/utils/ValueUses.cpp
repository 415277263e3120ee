//===--- ValueUses.cpp - mpnanny -------------------------------------------===//
#include "ValueUses.h"

#include "TorchCalls.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSwitch.h"
#include <algorithm>

namespace clang::tidy::mpnanny {

const char *toString(UseKind K) {
  switch (K) {
  case UseKind::PrefixSum: return "prefix-sum";
  case UseKind::Log: return "log";
  case UseKind::Divisor: return "divisor";
  case UseKind::Threshold: return "threshold";
  }
  return "?";
}

std::optional<UseKind> parseUseKind(llvm::StringRef Name) {
  for (UseKind K : {UseKind::PrefixSum, UseKind::Log, UseKind::Divisor, UseKind::Threshold})
    if (Name == toString(K))
      return K;
  return std::nullopt;
}

namespace {

/// True when Child is the object Call is made on: the object itself, or the member
/// expression (`value.method`) the walk up from the object passes through.
bool isObjectOf(const CXXMemberCallExpr &Call, const Expr &Child) {
  const Expr *Self = Child.IgnoreParenImpCasts();
  return Call.getImplicitObjectArgument()->IgnoreParenImpCasts() == Self ||
         Call.getCallee()->IgnoreParenImpCasts() == Self;
}

/// A node that holds its child's value unchanged: parentheses, casts to the same value,
/// temporaries, and a one-argument construction (a copy, a Scalar from a number).
bool holdsChildValue(const Stmt &Parent) {
  return isa<ImplicitCastExpr, ParenExpr, MaterializeTemporaryExpr, CXXBindTemporaryExpr,
             ExprWithCleanups>(&Parent) ||
         (isa<CXXConstructExpr>(&Parent) && cast<CXXConstructExpr>(&Parent)->getNumArgs() == 1);
}

/// Conversions, device moves and reorderings, whose result holds the same values: the use of
/// their result is a use of their input. Views and joins are the knowledge base's (passesOn).
bool convertsOrReorders(llvm::StringRef Name) {
  return llvm::StringSwitch<bool>(Name)
      .Cases("to", "float", "half", "bfloat16", "double", "type", "cpu", "cuda", true)
      // Reorderings (top-p sorts the probabilities before it sums them); their tuple's first
      // element, taken by std::get or a structured binding, holds the values.
      .Cases("sort", "msort", "topk", "get", true)
      .Default(false);
}

/// A LibTorch call whose result holds the values of its operand or of its list's elements.
bool passesOn(const CallExpr &Call, const kb::KnowledgeBase &KB) {
  auto TC = classifyTorchCall(Call);
  const kb::Op *Op = TC ? lookupOp(*TC, KB) : nullptr;
  return Op && (Op->Transfer == "identity" || Op->Transfer == "union");
}

std::optional<UseKind> useByCall(llvm::StringRef Name, bool AsDivisor) {
  if (Name == "cumsum" || Name == "cumprod" || Name == "cumsum_" || Name == "cumprod_")
    return UseKind::PrefixSum;
  if (Name == "log" || Name == "log2" || Name == "log10" || Name == "log1p" || Name == "log_")
    return UseKind::Log;
  if (Name == "reciprocal" || Name == "reciprocal_" || Name == "rsqrt" ||
      ((Name == "div" || Name == "divide" || Name == "true_divide") && AsDivisor))
    return UseKind::Divisor;
  if (Name == "lt" || Name == "gt" || Name == "le" || Name == "ge" || Name == "less" ||
      Name == "greater" || Name == "less_equal" || Name == "greater_equal")
    return UseKind::Threshold;
  return std::nullopt;
}

class UseFinder {
public:
  UseFinder(const std::vector<UseKind> &Kinds, const kb::KnowledgeBase &KB, ASTContext &Ctx)
      : Kinds(Kinds), KB(KB), Ctx(Ctx) {}

  std::optional<ValueUse> from(const Expr &Value, int Depth) {
    if (Depth > 6 || !Seen.insert(&Value).second)
      return std::nullopt;
    const Stmt *Node = &Value;
    for (int Step = 0; Step < 24; ++Step) {
      DynTypedNodeList Parents = Ctx.getParents(*Node);
      if (Parents.empty())
        return std::nullopt;
      const DynTypedNode &P = Parents[0];
      if (const auto *Var = P.get<VarDecl>())
        return throughLocal(*Var, Depth);
      const auto *Parent = P.get<Stmt>();
      if (!Parent)
        return std::nullopt;
      // The elements of a list (`torch::cat({probs, other})`) up to the call that takes it.
      if (holdsChildValue(*Parent) ||
          isa<CXXFunctionalCastExpr, InitListExpr, CXXStdInitializerListExpr>(Parent)) {
        Node = Parent;
        continue;
      }
      if (auto Use = classify(*Parent, *cast<Expr>(Node)))
        return Use;
      // probs[i]: the element holds the probabilities' values.
      if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Parent);
          Op && Op->getOperator() == OO_Subscript && Op->getNumArgs() == 2 &&
          Op->getArg(0)->IgnoreParenImpCasts() == cast<Expr>(Node)->IgnoreParenImpCasts()) {
        Node = Parent;
        continue;
      }
      if (const auto *Call = dyn_cast<CallExpr>(Parent); Call && !isa<CXXMemberCallExpr>(Call))
        if (const FunctionDecl *Callee = Call->getDirectCallee();
            Callee && Callee->getIdentifier() &&
            (convertsOrReorders(Callee->getName()) || passesOn(*Call, KB)) &&
            Call->getNumArgs() > 0 &&
            Call->getArg(0)->IgnoreParenImpCasts() == cast<Expr>(Node)->IgnoreParenImpCasts()) {
          Node = Parent;
          continue;
        }
      if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Parent))
        if (isObjectOf(*Member, *cast<Expr>(Node)) && Member->getMethodDecl() &&
            Member->getMethodDecl()->getIdentifier() &&
            (convertsOrReorders(Member->getMethodDecl()->getName()) || passesOn(*Member, KB))) {
          Node = Parent;
          continue;
        }
      if (const auto *Member = dyn_cast<MemberExpr>(Parent)) {
        Node = Member; // the callee of a method call on the value: the call is above it
        continue;
      }
      return std::nullopt;
    }
    return std::nullopt;
  }

private:
  bool wanted(UseKind K) const { return std::find(Kinds.begin(), Kinds.end(), K) != Kinds.end(); }

  std::optional<ValueUse> found(UseKind K, const Expr *At) const {
    if (!wanted(K))
      return std::nullopt;
    return ValueUse{K, At};
  }

  /// How Parent uses Child, when that is one of the kinds looked for.
  std::optional<ValueUse> classify(const Stmt &Parent, const Expr &Child) {
    const Expr *Self = Child.IgnoreParenImpCasts();
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(&Parent)) {
      OverloadedOperatorKind K = Op->getOperator();
      if ((K == OO_Slash || K == OO_SlashEqual) && Op->getNumArgs() == 2 &&
          Op->getArg(1)->IgnoreParenImpCasts() == Self)
        return found(UseKind::Divisor, Op);
      if (K == OO_Less || K == OO_Greater || K == OO_LessEqual || K == OO_GreaterEqual)
        return found(UseKind::Threshold, Op);
      return std::nullopt;
    }
    if (const auto *Member = dyn_cast<CXXMemberCallExpr>(&Parent)) {
      const CXXMethodDecl *M = Member->getMethodDecl();
      if (!M || !M->getIdentifier())
        return std::nullopt;
      const bool OnValue = isObjectOf(*Member, Child);
      if (auto K = useByCall(M->getName(), /*AsDivisor=*/!OnValue);
          K && (OnValue || *K == UseKind::Divisor))
        return found(*K, Member);
      return std::nullopt;
    }
    if (const auto *Call = dyn_cast<CallExpr>(&Parent)) {
      const FunctionDecl *Callee = Call->getDirectCallee();
      if (!Callee || !Callee->getIdentifier())
        return std::nullopt;
      const bool First = Call->getNumArgs() > 0 && Call->getArg(0)->IgnoreParenImpCasts() == Self;
      if (auto K = useByCall(Callee->getName(), /*AsDivisor=*/!First))
        if (First || *K == UseKind::Divisor)
          return found(*K, Call);
    }
    return std::nullopt;
  }

  std::optional<ValueUse> throughLocal(const VarDecl &Var, int Depth) {
    const auto *FD = dyn_cast_or_null<FunctionDecl>(Var.getParentFunctionOrMethod());
    if (!FD || !FD->getBody() || !Var.isLocalVarDecl())
      return std::nullopt;
    // `auto [values, indices] = probs.sort(...)`: the values are the first binding's.
    const ValueDecl *Holder = &Var;
    if (const auto *Bound = dyn_cast<DecompositionDecl>(&Var)) {
      if (Bound->bindings().empty())
        return std::nullopt;
      Holder = Bound->bindings().front();
    }
    std::optional<ValueUse> First;
    visitDescendants(FD->getBody(), [&](const Stmt *S) {
      if (First)
        return false;
      if (const auto *Ref = dyn_cast<DeclRefExpr>(S); Ref && Ref->getDecl() == Holder)
        First = from(*Ref, Depth + 1);
      return !First;
    });
    return First;
  }

  const std::vector<UseKind> &Kinds;
  const kb::KnowledgeBase &KB;
  ASTContext &Ctx;
  llvm::DenseSet<const Expr *> Seen;
};

} // namespace

/// A scalar operand that is not a literal 0 (a name or a constant expression).
static bool isNonzeroScalar(const Expr &E, ASTContext &Ctx) {
  if (isTensorType(E.getType().getNonReferenceType()))
    return false;
  auto V = evaluateNumber(&E, Ctx);
  return !V || *V != 0;
}

/// A value that cannot itself be an inf of the other sign: a named tensor or a scalar.
static bool isPlainOperand(const Expr &E) {
  const Expr *Inner = ignoreConversions(&E);
  return !isTensorType(E.getType().getNonReferenceType()) || isa<DeclRefExpr>(Inner) ||
         isa<MemberExpr>(Inner);
}

const CallExpr *saturatingConsumer(const Expr &Value, ASTContext &Ctx) {
  const Stmt *Node = &Value;
  for (int Step = 0; Step < 24; ++Step) {
    DynTypedNodeList Parents = Ctx.getParents(*Node);
    if (Parents.size() != 1)
      return nullptr;
    const auto *Parent = Parents[0].get<Expr>();
    if (!Parent)
      return nullptr;
    if (holdsChildValue(*Parent) || isa<CXXFunctionalCastExpr, MemberExpr>(Parent)) {
      Node = Parent;
      continue;
    }
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Parent)) {
      if (Op->getNumArgs() != 2)
        return nullptr;
      const bool Left =
          Op->getArg(0)->IgnoreParenImpCasts() == cast<Expr>(Node)->IgnoreParenImpCasts();
      const Expr &Other = *Op->getArg(Left ? 1 : 0);
      switch (Op->getOperator()) {
      case OO_Plus:
      case OO_Minus:
        if (!isPlainOperand(Other))
          return nullptr;
        break;
      case OO_Star:
        if (!isNonzeroScalar(Other, Ctx))
          return nullptr;
        break;
      case OO_Slash:
        if (!Left || !isNonzeroScalar(Other, Ctx))
          return nullptr;
        break;
      default: return nullptr;
      }
      Node = Parent;
      continue;
    }
    const auto *Call = dyn_cast<CallExpr>(Parent);
    auto TC = Call ? classifyTorchCall(*Call) : std::nullopt;
    if (TC && llvm::StringSwitch<bool>(TC->Name)
                  .Cases("tanh", "sigmoid", "erf", "atan", "arctan", true)
                  .Default(false))
      return Call;
    return nullptr;
  }
  return nullptr;
}

static bool isComparison(BinaryOperatorKind K) { return BinaryOperator::isComparisonOp(K); }

static bool isComparison(OverloadedOperatorKind K) {
  return K == OO_EqualEqual || K == OO_ExclaimEqual || K == OO_Less || K == OO_Greater ||
         K == OO_LessEqual || K == OO_GreaterEqual;
}

static bool isZero(const Expr &E, ASTContext &Ctx) {
  auto V = evaluateNumber(&E, Ctx);
  return V && *V == 0;
}

bool onlyComparedWithZero(const Expr &Value, ASTContext &Ctx) {
  const Stmt *Node = &Value;
  for (int Step = 0; Step < 16; ++Step) {
    DynTypedNodeList Parents = Ctx.getParents(*Node);
    if (Parents.size() != 1)
      return false;
    const auto *Parent = Parents[0].get<Expr>();
    if (!Parent)
      return false;
    const Expr *Child = cast<Expr>(Node);
    auto OtherIsZero = [&](const Expr &L, const Expr &R) {
      const bool Left = ignoreConversions(&L) == ignoreConversions(Child);
      return isZero(Left ? R : L, Ctx);
    };
    if (const auto *Op = dyn_cast<BinaryOperator>(Parent))
      return isComparison(Op->getOpcode()) && OtherIsZero(*Op->getLHS(), *Op->getRHS());
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Parent))
      return Op->getNumArgs() == 2 && isComparison(Op->getOperator()) &&
             OtherIsZero(*Op->getArg(0), *Op->getArg(1));
    if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Parent)) {
      const CXXMethodDecl *M = Member->getMethodDecl();
      if (!M || !M->getIdentifier() || !isObjectOf(*Member, *Child))
        return false;
      llvm::StringRef Name = M->getName();
      if (Name == "item") { // the value as a number, compared above
        Node = Parent;
        continue;
      }
      return llvm::StringSwitch<bool>(Name)
                 .Cases("eq", "ne", "gt", "lt", "ge", "le", true)
                 .Default(false) &&
             Member->getNumArgs() == 1 && isZero(*Member->getArg(0), Ctx);
    }
    if (holdsChildValue(*Parent) || isa<MemberExpr>(Parent)) {
      Node = Parent;
      continue;
    }
    return false;
  }
  return false;
}

std::optional<ValueUse> firstUseAs(const Expr &Value, const std::vector<UseKind> &Kinds,
                                   const kb::KnowledgeBase &KB, ASTContext &Ctx) {
  UseFinder Finder(Kinds, KB, Ctx);
  return Finder.from(Value, 0);
}

} // namespace clang::tidy::mpnanny
