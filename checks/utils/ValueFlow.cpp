//===--- ValueFlow.cpp - mpnanny -------------------------------------------===//
#include "ValueFlow.h"

#include "UserCodeVisitor.h"

#include "TorchCalls.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include <map>

namespace clang::tidy::mpnanny {

namespace {
/// Deeper than any realistic chain of locals, parameters and members; a cycle (a recursive
/// function passing its parameter on) stops here as "not complete".
constexpr int MaxDepth = 8;
/// Products of several uncertain operands are not worth following further.
constexpr size_t MaxValues = 16;
/// How many earlier statements reachingValue reads before it gives up.
constexpr int MaxStatementsBack = 256;
} // namespace

struct ValueFlow::Index {
  llvm::DenseMap<const FunctionDecl *, std::vector<const Expr *>> Calls;
  llvm::DenseMap<const FieldDecl *, std::vector<const Expr *>> MemberWrites;
  llvm::DenseSet<const FieldDecl *> MemberChangedInPlace;
  llvm::DenseMap<const VarDecl *, bool> Mutated;
  llvm::DenseSet<const Stmt *> WalkedBodies;
  /// What one function body does to its locals, for valuesGivenTo: the values each is given by
  /// `x = value;`, how many of its writes those (and, without in-place ops, compound
  /// assignments) account for, and how many writes forEachWrite sees.
  struct BodyWrites {
    llvm::DenseMap<const ValueDecl *, std::vector<const Expr *>> Assigned;
    llvm::DenseMap<const ValueDecl *, int> Followed, Writes;
  };
  /// By function body and InPlaceOps: one walk of a body answers every local in it (a walk per
  /// local is n^2 steps over a generated function).
  std::map<std::pair<const Stmt *, bool>, BodyWrites> WritesInBody;
};

namespace {

/// The user code's calls and member writes, never entering system headers.
class IndexBuilder : public UserCodeVisitor<IndexBuilder> {
public:
  IndexBuilder(const SourceManager &SM, ValueFlow::Index &Out) : UserCodeVisitor(SM), Out(Out) {}
  bool VisitCallExpr(CallExpr *Call) {
    if (const FunctionDecl *Callee = Call->getDirectCallee())
      Out.Calls[Callee->getCanonicalDecl()].push_back(Call);
    return true;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr *Construct) {
    if (const CXXConstructorDecl *Ctor = Construct->getConstructor())
      Out.Calls[Ctor->getCanonicalDecl()].push_back(Construct);
    return true;
  }
  bool VisitBinaryOperator(BinaryOperator *BO) {
    if (BO->isAssignmentOp())
      write(BO->getLHS(), BO->getOpcode() == BO_Assign ? BO->getRHS() : nullptr);
    return true;
  }
  bool VisitCXXOperatorCallExpr(CXXOperatorCallExpr *Op) {
    if (Op->isAssignmentOp() && Op->getNumArgs() == 2)
      write(Op->getArg(0), Op->getOperator() == OO_Equal ? Op->getArg(1) : nullptr);
    return true;
  }
  bool VisitUnaryOperator(UnaryOperator *UO) {
    if (UO->isIncrementDecrementOp() || UO->getOpcode() == UO_AddrOf)
      write(UO->getSubExpr(), nullptr);
    return true;
  }

private:
  /// A member written: with its new value, or changed in a way not followed (Value null).
  void write(const Expr *Target, const Expr *Value) {
    const auto *Member = Target ? dyn_cast<MemberExpr>(Target->IgnoreParenImpCasts()) : nullptr;
    const auto *Field = Member ? dyn_cast<FieldDecl>(Member->getMemberDecl()) : nullptr;
    if (!Field)
      return;
    if (Value)
      Out.MemberWrites[Field].push_back(Value);
    else
      Out.MemberChangedInPlace.insert(Field);
  }

  ValueFlow::Index &Out;
};

std::string lineOf(SourceLocation Loc, const ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  return Loc.isValid() ? "line " + std::to_string(SM.getExpansionLineNumber(Loc)) : "";
}

std::string joined(const std::string &Outer, const std::string &Inner) {
  if (Outer.empty())
    return Inner;
  if (Inner.empty())
    return Outer;
  return Outer + ", " + Inner;
}

struct CacheEntry {
  ASTContext *Ctx;
  std::unique_ptr<ValueFlow> Flow;
};
thread_local std::vector<CacheEntry> Cache;

} // namespace

void forEachWrite(const Stmt *Root, const std::function<void(const ValueDecl *)> &Written,
                  bool InPlaceOps) {
  auto Write = [&](const Expr *E) {
    if (const ValueDecl *D = namedValue(E))
      Written(D);
  };
  visitDescendants(Root, [&](const Stmt *S) {
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S)) {
      if (Op->isAssignmentOp() && Op->getNumArgs() > 0)
        Write(Op->getArg(0));
    } else if (const auto *BO = dyn_cast<BinaryOperator>(S)) {
      if (BO->isAssignmentOp())
        Write(BO->getLHS());
    } else if (const auto *UO = dyn_cast<UnaryOperator>(S)) {
      if (UO->getOpcode() == UO_AddrOf || UO->isIncrementDecrementOp())
        Write(UO->getSubExpr());
    }
    if (const auto *Member = dyn_cast<CXXMemberCallExpr>(S)) {
      const CXXMethodDecl *M = Member->getMethodDecl();
      bool InPlace = M && M->getIdentifier() && M->getName().ends_with("_");
      if (M && (InPlace ? InPlaceOps : !M->isConst()))
        Write(Member->getImplicitObjectArgument());
    }
    if (const auto *Call = dyn_cast<CallExpr>(S))
      if (const FunctionDecl *Callee = Call->getDirectCallee()) {
        unsigned First = isa<CXXOperatorCallExpr>(Call) && isa<CXXMethodDecl>(Callee) ? 1 : 0;
        for (unsigned A = First; A < Call->getNumArgs(); ++A) {
          unsigned P = A - First;
          if (P >= Callee->getNumParams())
            continue;
          QualType T = Callee->getParamDecl(P)->getType();
          if (T->isReferenceType() && !T.getNonReferenceType().isConstQualified())
            Write(Call->getArg(A));
        }
      }
    if (const auto *Lambda = dyn_cast<LambdaExpr>(S))
      for (const LambdaCapture &C : Lambda->captures())
        if (C.capturesVariable() && C.getCaptureKind() == LCK_ByRef)
          if (const auto *V = dyn_cast<VarDecl>(C.getCapturedVar()))
            Written(V);
    return true;
  });
}

namespace {

/// `Target = Value;` as a statement (a plain assignment, through its cleanups): Value.
const Expr *assignedValue(const Stmt *S, const ValueDecl *Target) {
  const auto *E = dyn_cast<Expr>(S);
  if (!E)
    return nullptr;
  E = E->IgnoreImplicit();
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E))
    if (Op->getOperator() == OO_Equal && Op->getNumArgs() == 2 &&
        namedValue(Op->getArg(0)) == Target)
      return Op->getArg(1);
  if (const auto *BO = dyn_cast<BinaryOperator>(E))
    if (BO->getOpcode() == BO_Assign && namedValue(BO->getLHS()) == Target)
      return BO->getRHS();
  return nullptr;
}

bool mayWrite(const Stmt *S, const ValueDecl *Target, bool InPlaceOps) {
  bool Found = false;
  forEachWrite(
      S, [&](const ValueDecl *D) { Found |= D == Target; }, InPlaceOps);
  return Found;
}

} // namespace

const ValueFlow &ValueFlow::get(ASTContext &Ctx) {
  for (auto &E : Cache)
    if (E.Ctx == &Ctx)
      return *E.Flow;
  Cache.push_back({&Ctx, std::make_unique<ValueFlow>(Ctx)});
  return *Cache.back().Flow;
}

void ValueFlow::reset() { Cache.clear(); }

ValueFlow::ValueFlow(ASTContext &Ctx) : Ctx(Ctx) {}
ValueFlow::~ValueFlow() = default;

void ValueFlow::index() const {
  if (Indexed)
    return;
  auto *Self = const_cast<ValueFlow *>(this);
  Self->Indexed = std::make_unique<Index>();
  IndexBuilder Builder(Ctx.getSourceManager(), *Self->Indexed);
  Builder.TraverseDecl(Ctx.getTranslationUnitDecl());
}

bool ValueFlow::isMutated(const VarDecl *Var) const {
  index();
  Index &I = *Indexed;
  auto It = I.Mutated.find(Var);
  if (It != I.Mutated.end())
    return It->second;
  const auto *FD = dyn_cast_or_null<FunctionDecl>(Var->getParentFunctionOrMethod());
  const Stmt *Body = FD ? FD->getBody() : nullptr;
  if (!Body)
    return I.Mutated[Var] = true;
  // One walk of the function marks every variable it mutates; each local is then answered
  // from the map (a walk per local was n^2 steps in a generated 10k-statement function).
  if (I.WalkedBodies.insert(Body).second)
    forEachWrite(Body, [&](const ValueDecl *Target) {
      if (const auto *V = dyn_cast<VarDecl>(Target))
        I.Mutated[V] = true;
    });
  auto Found = I.Mutated.find(Var);
  const bool Mutated = Found != I.Mutated.end() && Found->second;
  I.Mutated[Var] = Mutated;
  return Mutated;
}

const Expr *ValueFlow::stableInitializer(const VarDecl *Var) const {
  if (!Var || !Var->isLocalVarDecl() || !Var->getInit() || Var->getType()->isReferenceType() ||
      isa<ParmVarDecl>(Var))
    return nullptr;
  if (isMutated(Var))
    return nullptr;
  return Var->getInit();
}

std::optional<std::vector<const Expr *>> ValueFlow::valuesGivenTo(const VarDecl &Var,
                                                                  bool InPlaceOps) const {
  const auto *FD = dyn_cast_or_null<FunctionDecl>(Var.getParentFunctionOrMethod());
  const Stmt *Body = FD ? FD->getBody() : nullptr;
  if (!Body || !Var.isLocalVarDecl() || Var.getType()->isReferenceType())
    return std::nullopt;
  index();
  auto [It, New] = Indexed->WritesInBody.try_emplace({Body, InPlaceOps});
  Index::BodyWrites &W = It->second;
  if (New) {
    visitDescendants(Body, [&](const Stmt *S) {
      const auto *Op = dyn_cast<CXXOperatorCallExpr>(S);
      const auto *BO = dyn_cast<BinaryOperator>(S);
      if (!(Op && Op->isAssignmentOp() && Op->getNumArgs() == 2) && !(BO && BO->isAssignmentOp()))
        return true;
      const ValueDecl *Target = namedValue(Op ? Op->getArg(0) : BO->getLHS());
      if (!Target)
        return true;
      if (const Expr *Value = assignedValue(S, Target)) {
        W.Assigned[Target].push_back(Value);
        ++W.Followed[Target];
      } else if (!InPlaceOps) {
        ++W.Followed[Target]; // `x += y`: changes x in place
      }
      return true;
    });
    forEachWrite(
        Body, [&](const ValueDecl *D) { ++W.Writes[D]; }, InPlaceOps);
  }
  // Each write forEachWrite sees must be one of the assignments collected, or a compound
  // assignment (an in-place op on a tensor); any other write is not followed.
  if (W.Writes.lookup(&Var) != W.Followed.lookup(&Var))
    return std::nullopt;
  std::vector<const Expr *> Values;
  if (const Expr *Init = Var.getInit()) {
    const auto *Construct = dyn_cast<CXXConstructExpr>(Init->IgnoreImplicit());
    if (!Construct || Construct->getNumArgs() > 0)
      Values.push_back(Init);
  }
  if (auto Assigned = W.Assigned.find(&Var); Assigned != W.Assigned.end())
    Values.insert(Values.end(), Assigned->second.begin(), Assigned->second.end());
  return Values;
}

const Expr *ValueFlow::reachingValue(const Expr *Use, bool InPlaceOps) const {
  const Expr *Read = Use ? Use->IgnoreParenImpCasts() : nullptr;
  const ValueDecl *Target = namedValue(Read);
  if (!Target)
    return nullptr;
  if (const auto *Member = dyn_cast<MemberExpr>(Read)) {
    if (!isa<CXXThisExpr>(Member->getBase()->IgnoreParenImpCasts()))
      return nullptr;
  } else if (const auto *Var = dyn_cast<VarDecl>(Target);
             !Var || !(Var->isLocalVarDecl() || isa<ParmVarDecl>(Var))) {
    return nullptr;
  }
  DynTypedNode Node = DynTypedNode::create(*Read);
  int Walked = 0;
  // Up through the enclosing statements to the function body: in each block, the
  // statements before the one that holds Use, nearest first.
  for (int Level = 0; Level < 64; ++Level) {
    DynTypedNodeList Parents = Ctx.getParents(Node);
    if (Parents.empty())
      return nullptr;
    const DynTypedNode &Parent = Parents[0];
    if (const auto *Block = Parent.get<CompoundStmt>()) {
      const Stmt *Here = Node.get<Stmt>();
      const auto *It = llvm::find(Block->body(), Here);
      if (It == Block->body_end())
        return nullptr;
      while (It != Block->body_begin()) {
        // Generated functions hold thousands of statements: a read that far from its last
        // assignment is left unknown rather than walked back for (n^2 over the function).
        if (++Walked > MaxStatementsBack)
          return nullptr;
        const Stmt *Before = *--It;
        if (const Expr *Value = assignedValue(Before, Target))
          return Value;
        if (const auto *DS = dyn_cast<DeclStmt>(Before))
          for (const Decl *D : DS->decls())
            if (D == Target)
              return cast<VarDecl>(D)->getInit();
        if (mayWrite(Before, Target, InPlaceOps))
          return nullptr;
      }
    } else if (Parent.get<ForStmt>() || Parent.get<WhileStmt>() || Parent.get<DoStmt>() ||
               Parent.get<CXXForRangeStmt>()) {
      // A write anywhere in a loop around Use may come from an earlier iteration.
      if (mayWrite(Parent.get<Stmt>(), Target, InPlaceOps))
        return nullptr;
    } else if (Parent.get<LambdaExpr>() || (Parent.get<Decl>() && !Parent.get<VarDecl>())) {
      return nullptr; // the function's (or a lambda's) body: nothing before it
    }
    Node = Parent;
  }
  return nullptr;
}

FlowValues ValueFlow::valuesOf(const Expr *E) const {
  FlowValues Out;
  Out.Complete = true;
  valuesInto(E, Out, "", 0);
  if (Out.Values.empty())
    Out.Complete = false;
  return Out;
}

std::optional<FlowValue> ValueFlow::constantOf(const Expr *E) const {
  FlowValues V = valuesOf(E);
  if (!V.Complete)
    return std::nullopt;
  for (const FlowValue &X : V.Values)
    if (X.Value != V.Values.front().Value)
      return std::nullopt;
  return V.Values.front();
}

void ValueFlow::valuesInto(const Expr *E, FlowValues &Out, const std::string &Via,
                           int Depth) const {
  E = E ? ignoreConversions(E) : nullptr;
  if (E)
    E = E->IgnoreParenImpCasts();
  if (!E || Depth > MaxDepth || Out.Values.size() >= MaxValues) {
    Out.Complete = false;
    return;
  }
  if (auto V = evaluateNumber(E, Ctx)) {
    Out.Values.push_back({*V, Via});
    return;
  }
  if (const auto *Default = dyn_cast<CXXDefaultArgExpr>(E))
    return valuesInto(Default->getExpr(), Out, Via, Depth + 1);
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
    if (const auto *Param = dyn_cast<ParmVarDecl>(Ref->getDecl()))
      return parameterValues(*Param, Out, Via, Depth);
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl()))
      if (const Expr *Init = stableInitializer(Var))
        return valuesInto(Init, Out,
                          joined(Via, "through '" + Var->getNameAsString() + "' (" +
                                          lineOf(Var->getLocation(), Ctx) + ")"),
                          Depth + 1);
    Out.Complete = false;
    return;
  }
  if (const auto *Member = dyn_cast<MemberExpr>(E)) {
    if (const auto *Field = dyn_cast<FieldDecl>(Member->getMemberDecl()))
      return memberValues(*Field, Out, Via, Depth);
    Out.Complete = false;
    return;
  }
  if (const auto *Cond = dyn_cast<ConditionalOperator>(E)) {
    valuesInto(Cond->getTrueExpr(), Out, Via, Depth + 1);
    valuesInto(Cond->getFalseExpr(), Out, Via, Depth + 1);
    return;
  }
  if (const auto *UO = dyn_cast<UnaryOperator>(E); UO && UO->getOpcode() == UO_Minus) {
    FlowValues Inner;
    Inner.Complete = true;
    valuesInto(UO->getSubExpr(), Inner, Via, Depth + 1);
    for (FlowValue &V : Inner.Values)
      Out.Values.push_back({-V.Value, V.Via});
    Out.Complete = Out.Complete && Inner.Complete;
    return;
  }
  if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->isAdditiveOp()) {
    // `1 - eps`: each side's constants, combined (the few there are).
    FlowValues L, R;
    L.Complete = R.Complete = true;
    valuesInto(BO->getLHS(), L, Via, Depth + 1);
    valuesInto(BO->getRHS(), R, Via, Depth + 1);
    for (const FlowValue &A : L.Values)
      for (const FlowValue &B : R.Values)
        if (Out.Values.size() < MaxValues)
          Out.Values.push_back({BO->getOpcode() == BO_Add ? A.Value + B.Value : A.Value - B.Value,
                                joined(A.Via, B.Via)});
    Out.Complete =
        Out.Complete && L.Complete && R.Complete && !L.Values.empty() && !R.Values.empty();
    return;
  }
  Out.Complete = false;
}

/// The argument a call (or construction) passes for the parameter at Position of FD;
/// null where the default is used.
static const Expr *argumentAt(const Expr &Site, const FunctionDecl &FD, unsigned Position,
                              bool DefaultsToo) {
  const Expr *Arg = nullptr;
  unsigned Offset = 0;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(&Site); Op && isa<CXXMethodDecl>(FD))
    Offset = 1; // the object is argument 0 of a member operator call
  if (const auto *Call = dyn_cast<CallExpr>(&Site)) {
    if (Position + Offset < Call->getNumArgs())
      Arg = Call->getArg(Position + Offset);
  } else if (const auto *Construct = dyn_cast<CXXConstructExpr>(&Site)) {
    if (Position < Construct->getNumArgs())
      Arg = Construct->getArg(Position);
  }
  if (const auto *Default =
          dyn_cast_or_null<CXXDefaultArgExpr>(Arg ? Arg->IgnoreImplicit() : nullptr))
    return DefaultsToo ? Default->getExpr() : nullptr;
  return Arg;
}

const std::vector<const Expr *> &ValueFlow::callsOf(const FunctionDecl &F) const {
  static const std::vector<const Expr *> None;
  index();
  auto It = Indexed->Calls.find(F.getCanonicalDecl());
  return It == Indexed->Calls.end() ? None : It->second;
}

std::optional<std::vector<const Expr *>> ValueFlow::argumentsPassedFor(const ParmVarDecl &Param,
                                                                       bool DefaultsToo) const {
  index();
  const auto *FD = dyn_cast_or_null<FunctionDecl>(Param.getDeclContext());
  if (!FD)
    return std::nullopt;
  auto It = Indexed->Calls.find(FD->getCanonicalDecl());
  if (It == Indexed->Calls.end() || It->second.empty())
    return std::nullopt;
  std::vector<const Expr *> Arguments;
  for (const Expr *Site : It->second) {
    const Expr *Arg = argumentAt(*Site, *FD, Param.getFunctionScopeIndex(), DefaultsToo);
    if (!Arg)
      return std::nullopt;
    Arguments.push_back(Arg);
  }
  return Arguments;
}

bool ValueFlow::isAssigned(const FieldDecl &Field) const {
  index();
  auto It = Indexed->MemberWrites.find(&Field);
  return (It != Indexed->MemberWrites.end() && !It->second.empty()) ||
         Indexed->MemberChangedInPlace.count(&Field);
}

std::vector<const Expr *> ValueFlow::valuesAssignedTo(const FieldDecl &Field) const {
  index();
  std::vector<const Expr *> Values;
  if (const Expr *Init = Field.getInClassInitializer())
    Values.push_back(Init);
  if (const auto *Class = dyn_cast<CXXRecordDecl>(Field.getParent()))
    for (const CXXConstructorDecl *Ctor : Class->ctors())
      for (const CXXCtorInitializer *Init : Ctor->inits())
        if (Init->isWritten() && Init->getMember() == &Field)
          Values.push_back(Init->getInit());
  if (auto It = Indexed->MemberWrites.find(&Field); It != Indexed->MemberWrites.end())
    Values.insert(Values.end(), It->second.begin(), It->second.end());
  return Values;
}

void ValueFlow::parameterValues(const ParmVarDecl &Param, FlowValues &Out, const std::string &Via,
                                int Depth) const {
  index();
  const auto *FD = dyn_cast_or_null<FunctionDecl>(Param.getDeclContext());
  if (!FD) {
    Out.Complete = false;
    return;
  }
  const unsigned Position = Param.getFunctionScopeIndex();
  const std::string Name = "'" + Param.getNameAsString() + "'";
  auto It = Indexed->Calls.find(FD->getCanonicalDecl());
  bool DefaultUsed = false;
  if (It == Indexed->Calls.end() || It->second.empty()) {
    // No call in this unit: the callers are elsewhere and may pass anything; the default
    // is what a caller that passes nothing gets.
    Out.Complete = false;
    DefaultUsed = true;
  } else {
    for (const Expr *Site : It->second) {
      const Expr *Arg = argumentAt(*Site, *FD, Position, /*DefaultsToo=*/false);
      if (!Arg) {
        DefaultUsed = true;
        continue;
      }
      valuesInto(Arg, Out,
                 joined(Via, "passed as " + Name + " at " + lineOf(Site->getBeginLoc(), Ctx)),
                 Depth + 1);
    }
  }
  if (!DefaultUsed)
    return;
  if (Param.hasDefaultArg() && !Param.hasUnparsedDefaultArg() &&
      !Param.hasUninstantiatedDefaultArg())
    valuesInto(Param.getDefaultArg(), Out,
               joined(Via, "the default of " + Name + " in '" + FD->getNameAsString() + "'"),
               Depth + 1);
  else
    Out.Complete = false;
}

void ValueFlow::memberValues(const FieldDecl &Field, FlowValues &Out, const std::string &Via,
                             int Depth) const {
  index();
  const std::string Name = "member '" + Field.getNameAsString() + "'";
  if (Indexed->MemberChangedInPlace.count(&Field))
    Out.Complete = false;
  const auto *Class = dyn_cast<CXXRecordDecl>(Field.getParent());
  bool InClassUsed = !Class || Class->ctors().empty();
  if (Class)
    for (const CXXConstructorDecl *Ctor : Class->ctors()) {
      if (!Ctor->doesThisDeclarationHaveABody() && !Ctor->isDefaulted()) {
        // Defined in another unit: what it does is not seen here.
        Out.Complete = false;
        continue;
      }
      bool Written = false;
      for (const CXXCtorInitializer *Init : Ctor->inits())
        if (Init->isWritten() && Init->getMember() == &Field) {
          Written = true;
          valuesInto(
              Init->getInit(), Out,
              joined(Via, Name + " initialised at " + lineOf(Init->getSourceLocation(), Ctx)),
              Depth + 1);
        }
      if (!Written)
        InClassUsed = true;
    }
  if (InClassUsed) {
    if (const Expr *Init = Field.getInClassInitializer())
      valuesInto(Init, Out,
                 joined(Via, Name + " initialised at " + lineOf(Field.getLocation(), Ctx)),
                 Depth + 1);
    else
      Out.Complete = false;
  }
  if (auto It = Indexed->MemberWrites.find(&Field); It != Indexed->MemberWrites.end())
    for (const Expr *Value : It->second)
      valuesInto(Value, Out, joined(Via, Name + " set at " + lineOf(Value->getBeginLoc(), Ctx)),
                 Depth + 1);
}

} // namespace clang::tidy::mpnanny
