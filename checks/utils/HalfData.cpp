//===--- HalfData.cpp - mpnanny --------------------------------------------===//
#include "HalfData.h"

#include "ValueFlow.h"
#include "ValueUses.h"

#include "clang/AST/ParentMapContext.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringSwitch.h"

namespace clang::tidy::mpnanny {

static bool isIntegralDtypeName(const NamedDecl &D) {
  if (!D.getIdentifier())
    return false;
  llvm::StringRef N = D.getName();
  if (isa<EnumConstantDecl>(D)) {
    const auto *Enum = dyn_cast<EnumDecl>(D.getDeclContext());
    return Enum && Enum->getName() == "ScalarType" &&
           llvm::StringSwitch<bool>(N)
               .Cases("Byte", "Char", "Short", "Int", "Long", "Bool", true)
               .Default(false);
  }
  if (!isa<VarDecl>(D))
    return false;
  return llvm::StringSwitch<bool>(N)
      .Cases("kByte", "kChar", "kShort", "kInt", "kLong", "kBool", true)
      .Cases("kInt8", "kInt16", "kInt32", "kInt64", "kUInt8", true)
      .Default(false);
}

static bool namesIntegralDtype(const Stmt *S) {
  bool Found = false;
  visitDescendants(S, [&](const Stmt *X) {
    if (const auto *Ref = dyn_cast<DeclRefExpr>(X))
      Found = Found || isIntegralDtypeName(*Ref->getDecl());
    return !Found;
  });
  return Found;
}

bool requestsIntegralDtype(const TorchCall &Call) {
  for (const Expr *Arg : Call.Args)
    if (namesIntegralDtype(Arg))
      return true;
  return false;
}

static bool isIntegralDataImpl(const Expr *E, int Depth);

/// A typed view of a tensor's elements with an integer type: `data_ptr<int64_t>()`,
/// `accessor<int, 3>()`. ATen checks the element type when the view is made (item<T>()
/// converts instead, so it is not here).
static bool isIntegerElementView(const CXXMemberCallExpr &Call) {
  const CXXMethodDecl *M = Call.getMethodDecl();
  if (!M || !M->getIdentifier() ||
      !llvm::StringSwitch<bool>(M->getName())
           .Cases("data_ptr", "const_data_ptr", "mutable_data_ptr", "accessor", true)
           .Cases("packed_accessor32", "packed_accessor64", "generic_packed_accessor", true)
           .Default(false))
    return false;
  const TemplateArgumentList *Args = M->getTemplateSpecializationArgs();
  return Args && Args->size() > 0 && Args->get(0).getKind() == TemplateArgument::Type &&
         Args->get(0).getAsType()->isIntegerType();
}

static bool refersTo(const Expr *E, const VarDecl &Var) {
  const auto *Ref = E ? dyn_cast<DeclRefExpr>(ignoreConversions(E)) : nullptr;
  return Ref && Ref->getDecl() == &Var;
}

/// What the function that declares Var shows of its type by using it: an integer element
/// view of it, an index argument (ATen's `index` and `indices` parameters take integer
/// tensors only), or an in-place op that requires its source's dtype and is given integers
/// (`offset2bag.index_add_(0, offsets, ones_like(offsets))`). This covers parameters, which
/// have no initializer to read.
static bool usedAsIntegral(const VarDecl &Var, int Depth) {
  const auto *Function = dyn_cast_or_null<FunctionDecl>(Var.getParentFunctionOrMethod());
  const Stmt *Body = Function ? Function->getBody() : nullptr;
  if (!Body || !isTensorType(Var.getType().getNonReferenceType()))
    return false;
  bool Found = false;
  visitDescendants(Body, [&](const Stmt *S) {
    if (Found)
      return false;
    const auto *Call = dyn_cast<CallExpr>(S);
    if (!Call)
      return true;
    if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call);
        Member && refersTo(Member->getImplicitObjectArgument(), Var) &&
        isIntegerElementView(*Member)) {
      Found = true;
      return false;
    }
    auto TC = classifyTorchCall(*Call);
    if (!TC)
      return true;
    bool SameDtypeAsSource = llvm::StringSwitch<bool>(TC->Name)
                                 .Cases("index_add_", "index_copy_", "scatter_add_", true)
                                 .Default(false);
    for (unsigned I = 0; I < TC->Args.size() && !Found; ++I) {
      const ParmVarDecl *P = parameterOf(*TC, I);
      if (!P)
        continue;
      llvm::StringRef Name = P->getName();
      if ((Name == "index" || Name == "indices") && refersTo(TC->Args[I], Var))
        Found = true;
      else if (SameDtypeAsSource && (Name == "source" || Name == "src") && refersTo(TC->Self, Var))
        Found = isIntegralDataImpl(TC->Args[I], Depth + 1);
    }
    return !Found;
  });
  return Found;
}

/// `ones_like(x)`, `zeros_like(x, x.options())`: the type of x, unless options or a dtype
/// of something else are given.
static bool isLikeOfIntegral(const TorchCall &TC, int Depth) {
  const Expr *Input = TC.Self ? TC.Self : (TC.Args.empty() ? nullptr : TC.Args[0]);
  if (!Input || !isIntegralDataImpl(Input, Depth + 1))
    return false;
  for (const Expr *Arg : TC.Args) {
    if (Arg == Input || !isOptionsOrDtype(Arg->getType()))
      continue;
    const auto *Options = dyn_cast<CXXMemberCallExpr>(ignoreConversions(Arg));
    const CXXMethodDecl *M = Options ? Options->getMethodDecl() : nullptr;
    if (!M || !M->getIdentifier() || M->getName() != "options" ||
        !isIntegralDataImpl(Options->getImplicitObjectArgument(), Depth + 1))
      return false;
  }
  return true;
}

static bool isIntegralDataImpl(const Expr *E, int Depth) {
  if (!E || Depth > 8)
    return false;
  E = ignoreConversions(E);
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
    const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
    if (!Var)
      return false;
    if (Var->isLocalVarDecl() && Var->getInit() && isIntegralDataImpl(Var->getInit(), Depth + 1))
      return true;
    return usedAsIntegral(*Var, Depth);
  }
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
    switch (Op->getOperator()) {
    case OO_EqualEqual:
    case OO_ExclaimEqual:
    case OO_Less:
    case OO_Greater:
    case OO_LessEqual:
    case OO_GreaterEqual:
    case OO_AmpAmp:
    case OO_PipePipe:
    case OO_Exclaim:
    case OO_Tilde: return true;
    case OO_Amp:
    case OO_Pipe:
    case OO_Caret: // masks combined: integral iff an operand is
      return Op->getNumArgs() == 2 && (isIntegralDataImpl(Op->getArg(0), Depth + 1) ||
                                       isIntegralDataImpl(Op->getArg(1), Depth + 1));
    default: return false;
    }
  }
  const auto *Call = dyn_cast<CallExpr>(E);
  if (!Call)
    return false;
  auto TC = classifyTorchCall(*Call);
  if (!TC)
    return false;
  llvm::StringRef N = TC->Name;
  if (llvm::StringSwitch<bool>(N)
          .Cases("eq", "ne", "gt", "lt", "ge", "le", true)
          .Cases("logical_not", "logical_and", "logical_or", "logical_xor", true)
          .Cases("isfinite", "isnan", "isinf", "isclose", "argmax", "argmin", "nonzero", true)
          .Cases("randint", "randint_like", true)
          .Default(false))
    return true;
  if (N == "to" || N == "toType" || N == "type")
    return namesIntegralDtype(Call);
  // Factories and reshapes keep the type they are given or find.
  if (llvm::StringSwitch<bool>(N)
          .Cases("arange", "ones", "zeros", "full", "empty", "ones_like", "zeros_like", true)
          .Default(false) &&
      requestsIntegralDtype(*TC))
    return true;
  if (llvm::StringSwitch<bool>(N)
          .Cases("ones_like", "zeros_like", "empty_like", "full_like", true)
          .Default(false))
    return isLikeOfIntegral(*TC, Depth);
  if (llvm::StringSwitch<bool>(N)
          .Cases("view", "reshape", "squeeze", "unsqueeze", "transpose", "contiguous", true)
          .Cases("clone", "detach", "flatten", "expand", "select", "narrow", "permute", true)
          .Default(false))
    return isIntegralDataImpl(TC->Self, Depth + 1);
  return false;
}

bool isIntegralData(const Expr *E) { return isIntegralDataImpl(E, 0); }

static llvm::StringRef textOf(const Expr *E, const ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  return Lexer::getSourceText(CharSourceRange::getTokenRange(E->getSourceRange()), SM,
                              Ctx.getLangOpts());
}

static bool sameOperand(const Expr *A, const Expr *B, const ASTContext &Ctx) {
  A = ignoreConversions(A);
  B = ignoreConversions(B);
  if (const auto *RA = dyn_cast<DeclRefExpr>(A))
    if (const auto *RB = dyn_cast<DeclRefExpr>(B))
      return RA->getDecl() == RB->getDecl();
  llvm::StringRef TA = textOf(A, Ctx), TB = textOf(B, Ctx);
  return !TA.empty() && TA == TB;
}

std::optional<Square> squareOf(const Expr *E, const ASTContext &Ctx) {
  if (!E)
    return std::nullopt;
  E = ignoreConversions(E);
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E))
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
        Var && Var->isLocalVarDecl() && Var->getInit())
      E = ignoreConversions(Var->getInit());
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
    if (Op->getOperator() == OO_Star && Op->getNumArgs() == 2 &&
        isTensorType(Op->getArg(0)->getType()) && isTensorType(Op->getArg(1)->getType()) &&
        sameOperand(Op->getArg(0), Op->getArg(1), Ctx))
      return Square{E, ignoreConversions(Op->getArg(0)), std::nullopt};
    return std::nullopt;
  }
  const auto *Call = dyn_cast<CallExpr>(E);
  if (!Call)
    return std::nullopt;
  auto TC = classifyTorchCall(*Call);
  if (!TC || !TC->Self)
    return std::nullopt;
  if (TC->Name == "square" && TC->Args.empty())
    return Square{E, ignoreConversions(TC->Self), TC};
  if (TC->Name == "pow" && TC->Args.size() == 1)
    if (auto Exponent = evaluateNumber(TC->Args[0], Ctx); Exponent && *Exponent == 2)
      return Square{E, ignoreConversions(TC->Self), TC};
  if (TC->Name == "mul" && TC->Args.size() == 1 && isTensorType(TC->Args[0]->getType()) &&
      sameOperand(TC->Self, TC->Args[0], Ctx))
    return Square{E, ignoreConversions(TC->Self), std::nullopt};
  return std::nullopt;
}

/// The node above N, when there is exactly one.
static DynTypedNode parentOf(const DynTypedNode &N, ASTContext &Ctx) {
  auto Parents = Ctx.getParents(N);
  return Parents.size() == 1 ? Parents[0] : DynTypedNode();
}

const CallExpr *meanOf(const Expr &E, ASTContext &Ctx) {
  DynTypedNode N = DynTypedNode::create(E);
  const Expr *Inner = ignoreConversions(&E);
  for (int Level = 0; Level < 8; ++Level) {
    N = parentOf(N, Ctx);
    const auto *P = N.get<Expr>();
    if (!P)
      return nullptr;
    const auto *Call = dyn_cast<CallExpr>(P);
    if (!Call)
      continue; // parentheses, temporaries, the member access of a method call
    if (isa<CXXConstructExpr>(P))
      continue;
    auto TC = classifyTorchCall(*Call);
    if (TC && TC->Name == "mean" && TC->Self && ignoreConversions(TC->Self) == Inner)
      return Call;
    return nullptr;
  }
  return nullptr;
}

bool isSquareOfStatistic(const CallExpr &Call, ASTContext &Ctx) {
  auto S = squareOf(&Call, Ctx);
  return S && S->Node == &Call && meanOf(Call, Ctx);
}

/// How many dimensions a written list names: `{1, 2, 3}` at the call, or held by a local or a
/// parameter whose every known value is such a list (its default argument and what the unit's
/// calls pass). std::nullopt when any of them is not a list written out.
static std::optional<unsigned> listedDimensions(const Expr *E, ASTContext &Ctx, int Depth = 0) {
  if (!E || Depth > 4)
    return std::nullopt;
  if (const auto *List = firstOutsideCalls<InitListExpr>(E))
    return List->getNumInits();
  const auto *Ref = firstOutsideCalls<DeclRefExpr>(E);
  if (!Ref)
    return std::nullopt;
  const ValueFlow &Flow = ValueFlow::get(Ctx);
  if (const auto *Param = dyn_cast<ParmVarDecl>(Ref->getDecl())) {
    std::vector<const Expr *> Values;
    if (Param->hasDefaultArg() && !Param->hasUninstantiatedDefaultArg())
      Values.push_back(Param->getDefaultArg());
    if (auto Passed = Flow.argumentsPassedFor(*Param))
      Values.insert(Values.end(), Passed->begin(), Passed->end());
    std::optional<unsigned> Fewest;
    for (const Expr *V : Values) {
      auto N = listedDimensions(V, Ctx, Depth + 1);
      if (!N)
        return std::nullopt;
      Fewest = Fewest ? std::min(*Fewest, *N) : *N;
    }
    return Fewest;
  }
  if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl()))
    return listedDimensions(Flow.stableInitializer(Var), Ctx, Depth + 1);
  return std::nullopt;
}

bool sumsAWholeSample(const TorchCall &Call, ASTContext &Ctx) {
  if (!namesDimensions(Call))
    return true;
  for (unsigned I = 0; I < Call.Args.size(); ++I)
    if (const ParmVarDecl *P = parameterOf(Call, I))
      if (P->getName() == "dim" || P->getName() == "dims") {
        auto N = listedDimensions(Call.Args[I], Ctx);
        return N && *N >= 3;
      }
  return false;
}

const CallExpr *wholeSampleSumOf(const Expr &E, ASTContext &Ctx) {
  DynTypedNode N = DynTypedNode::create(E);
  const Expr *Below = &E;
  for (int Level = 0; Level < 32; ++Level) {
    N = parentOf(N, Ctx);
    const auto *P = N.get<Expr>();
    if (!P)
      return nullptr;
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(P)) {
      // Element-wise arithmetic passes each element on: x.pow(2) + var - 1.
      switch (Op->getOperator()) {
      case OO_Plus:
      case OO_Minus:
      case OO_Star:
      case OO_Slash: Below = P; continue;
      default: return nullptr;
      }
    }
    if (const auto *Call = dyn_cast<CallExpr>(P); Call && !isa<CXXConstructExpr>(P)) {
      auto TC = classifyTorchCall(*Call);
      if (!TC)
        return nullptr;
      if ((TC->Name == "sum" || TC->Name == "nansum") && TC->Self &&
          ignoreConversions(TC->Self) == ignoreConversions(Below))
        return sumsAWholeSample(*TC, Ctx) ? Call : nullptr;
      if (TC->Name == "add" || TC->Name == "sub" || TC->Name == "mul" || TC->Name == "div") {
        Below = P;
        continue;
      }
      return nullptr;
    }
    // parentheses, casts, temporaries, the member access of a method call
  }
  return nullptr;
}

bool isLossName(llvm::StringRef Name) {
  std::string Lower = Name.lower();
  llvm::StringRef L = Lower;
  return L.contains("loss") && !L.contains("scale");
}

bool feedsLoss(const Expr &E, ASTContext &Ctx) {
  DynTypedNode N = DynTypedNode::create(E);
  const Stmt *Below = &E;
  for (int Level = 0; Level < 64; ++Level) {
    DynTypedNode P = parentOf(N, Ctx);
    if (const auto *Var = P.get<VarDecl>())
      return Var->getIdentifier() && isLossName(Var->getName());
    if (const auto *FD = P.get<FunctionDecl>())
      return FD->getIdentifier() && isLossName(FD->getName()); // returned by a *loss* function
    const auto *S = P.get<Stmt>();
    if (!S)
      return false;
    if (const auto *Assign = dyn_cast<CXXOperatorCallExpr>(S);
        Assign && Assign->getOperator() == OO_Equal && Assign->getNumArgs() == 2 &&
        Below != Assign->getArg(0))
      if (const auto *Ref = dyn_cast<DeclRefExpr>(ignoreConversions(Assign->getArg(0))))
        return Ref->getDecl()->getIdentifier() && isLossName(Ref->getDecl()->getName());
    if (const auto *Member = dyn_cast<CXXMemberCallExpr>(S))
      if (const CXXMethodDecl *M = Member->getMethodDecl(); M && M->getIdentifier() &&
                                                            M->getName() == "backward" &&
                                                            isTensorType(Member->getObjectType()))
        return true;
    // Only a return statement passes the value on; other statements end it.
    if (!isa<Expr>(S) && !isa<ReturnStmt>(S) && !isa<CompoundStmt>(S))
      return false;
    if (isa<CompoundStmt>(S) && !isa<ReturnStmt>(Below))
      return false;
    Below = S;
    N = P;
  }
  return false;
}

} // namespace clang::tidy::mpnanny
