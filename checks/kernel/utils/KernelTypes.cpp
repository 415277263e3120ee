//===--- KernelTypes.cpp - mpnanny -----------------------------------------===//
#include "KernelTypes.h"

#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/Support/Path.h"
#include <set>

namespace clang::tidy::mpnanny::kernel {

std::optional<kb::Format> halfFormatOf(QualType T, const kb::KnowledgeBase &KB) {
  if (T.isNull())
    return std::nullopt;
  QualType Canonical = T.getCanonicalType().getUnqualifiedType();
  if (const auto *Builtin = dyn_cast<BuiltinType>(Canonical.getTypePtr())) {
    switch (Builtin->getKind()) {
    case BuiltinType::Float16:
    case BuiltinType::Half: return kb::Format::FP16;
    case BuiltinType::BFloat16: return kb::Format::BF16;
    default: return std::nullopt;
    }
  }
  const RecordDecl *Record = Canonical->getAsRecordDecl();
  if (!Record || !Record->getIdentifier())
    return std::nullopt;
  if (const kb::KernelName *Entry =
          KB.findKernelName("half-type", Record->getQualifiedNameAsString()))
    return Entry->In;
  return std::nullopt;
}

std::optional<kb::Format> halfPointeeFormatOf(QualType T, const kb::KnowledgeBase &KB) {
  if (T.isNull() || !(T->isPointerType() || T->isReferenceType()))
    return std::nullopt;
  return halfFormatOf(T->getPointeeType(), KB);
}

std::string displayName(QualType T, const ASTContext &Ctx) {
  QualType Canonical = T.getCanonicalType().getUnqualifiedType();
  std::string Name = Canonical.getAsString(PrintingPolicy(Ctx.getLangOpts()));
  // c10::Half is at::Half to the people who write kernels.
  llvm::StringRef Spelled = Name;
  if (Spelled.consume_front("c10::"))
    return "at::" + Spelled.str();
  return Name;
}

const kb::KernelName *calleeRule(const CallExpr &Call, const std::string &Role,
                                 const kb::KnowledgeBase &KB) {
  const FunctionDecl *Callee = Call.getDirectCallee();
  if (!Callee || !Callee->getIdentifier())
    return nullptr;
  if (const kb::KernelName *Entry = KB.findKernelName(Role, Callee->getQualifiedNameAsString()))
    return Entry;
  return KB.findKernelName(Role, Callee->getName().str());
}

const Expr *throughConversions(const Expr *E) {
  while (E) {
    const Expr *Before = E;
    E = E->IgnoreImplicit()->IgnoreParens();
    if (const auto *Temporary = dyn_cast<MaterializeTemporaryExpr>(E))
      E = Temporary->getSubExpr();
    if (const auto *Bound = dyn_cast<CXXBindTemporaryExpr>(E))
      E = Bound->getSubExpr();
    if (const auto *Cast = dyn_cast<ExplicitCastExpr>(E))
      E = Cast->getSubExpr();
    // Half -> float through the class's conversion operator.
    if (const auto *Member = dyn_cast<CXXMemberCallExpr>(E))
      if (isa_and_nonnull<CXXConversionDecl>(Member->getMethodDecl()))
        E = Member->getImplicitObjectArgument();
    // float -> Half through its converting constructor.
    if (const auto *Construct = dyn_cast<CXXConstructExpr>(E))
      if (Construct->getNumArgs() == 1)
        E = Construct->getArg(0);
    if (E == Before)
      break;
  }
  return E;
}

const Expr *halfConversionOf(const Expr &E, const kb::KnowledgeBase &KB, ASTContext &Ctx) {
  DynTypedNodeList Parents = Ctx.getParents(E);
  for (int Depth = 0; !Parents.empty() && Depth < 16; ++Depth) {
    const auto *Parent = Parents[0].get<Expr>();
    if (!Parent)
      return nullptr;
    if (halfFormatOf(Parent->getType(), KB))
      return Parent;
    const bool PassesThrough =
        isa<ImplicitCastExpr, ParenExpr, MaterializeTemporaryExpr, CXXBindTemporaryExpr,
            ExprWithCleanups, ExplicitCastExpr>(Parent) ||
        (isa<CXXConstructExpr>(Parent) && cast<CXXConstructExpr>(Parent)->getNumArgs() == 1);
    if (!PassesThrough)
      return nullptr;
    Parents = Ctx.getParents(*Parent);
  }
  return nullptr;
}

const FunctionDecl *enclosingFunctionOf(const Stmt &S, ASTContext &Ctx) {
  DynTypedNodeList Parents = Ctx.getParents(S);
  for (int Depth = 0; !Parents.empty() && Depth < 1024; ++Depth) {
    const DynTypedNode &Parent = Parents[0];
    if (const auto *Function = Parent.get<FunctionDecl>())
      return Function;
    if (const auto *Lambda = Parent.get<LambdaExpr>())
      return Lambda->getCallOperator();
    Parents = Ctx.getParents(Parent);
  }
  return nullptr;
}

namespace {

/// "k.cpp:12": where a macro is invoked, or where code is written.
std::string placeOf(SourceLocation Loc, const SourceManager &SM) {
  SourceLocation At = SM.getExpansionLoc(Loc);
  return llvm::sys::path::filename(SM.getFilename(At)).str() + ":" +
         std::to_string(SM.getExpansionLineNumber(At));
}

/// The macro whose invocation in the file holds Loc (AT_DISPATCH_FLOATING_TYPES_AND_HALF for
/// code in its lambda argument), or "" outside macros.
std::string macroAt(SourceLocation Loc, const ASTContext &Ctx) {
  if (!Loc.isMacroID())
    return "";
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation At = SM.getExpansionLoc(Loc);
  return Lexer::getSourceText(CharSourceRange::getTokenRange(At, At), SM, Ctx.getLangOpts()).str();
}

struct Origin {
  std::string Text; ///< "from AT_DISPATCH_... at k.cpp:12", "explicit instantiation at ..."
  SourceLocation Where;
};

Origin originOf(SourceLocation PointOfInstantiation, TemplateSpecializationKind Kind,
                const ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  if (PointOfInstantiation.isInvalid())
    return {};
  if (Kind == TSK_ExplicitInstantiationDefinition || Kind == TSK_ExplicitInstantiationDeclaration)
    return {"explicit instantiation at " + placeOf(PointOfInstantiation, SM), PointOfInstantiation};
  if (std::string Macro = macroAt(PointOfInstantiation, Ctx); !Macro.empty())
    return {"from " + Macro + " at " + placeOf(PointOfInstantiation, SM),
            SM.getExpansionLoc(PointOfInstantiation)};
  return {"from the call at " + placeOf(PointOfInstantiation, SM), PointOfInstantiation};
}

struct Binding {
  std::string Parameter;
  Origin From;
};

/// The parameter of Parameters that Arguments binds to Wanted: the one named Name, or, when Name
/// is empty, the first type argument that is Wanted.
std::optional<std::string> parameterBound(const TemplateParameterList &Parameters,
                                          llvm::ArrayRef<TemplateArgument> Arguments,
                                          llvm::StringRef Name, QualType Wanted) {
  for (unsigned I = 0; I < Parameters.size() && I < Arguments.size(); ++I) {
    const NamedDecl *Parameter = Parameters.getParam(I);
    if (Arguments[I].getKind() != TemplateArgument::Type || !Parameter->getIdentifier())
      continue;
    const bool Matches =
        Name.empty() ? Arguments[I].getAsType().getCanonicalType().getUnqualifiedType() == Wanted
                     : Parameter->getName() == Name;
    if (Matches)
      return Parameter->getName().str();
  }
  return std::nullopt;
}

/// The innermost specialization around Function (itself, the classes and functions that hold
/// it) that binds a parameter to the half type.
std::optional<Binding> specializationBinding(const FunctionDecl &Function, llvm::StringRef Name,
                                             QualType Wanted, const ASTContext &Ctx) {
  for (const DeclContext *Context = &Function; Context; Context = Context->getParent()) {
    if (const auto *F = dyn_cast<FunctionDecl>(Context)) {
      const TemplateArgumentList *Arguments = F->getTemplateSpecializationArgs();
      const FunctionTemplateDecl *Primary = F->getPrimaryTemplate();
      if (Arguments && Primary)
        if (auto Parameter = parameterBound(*Primary->getTemplateParameters(), Arguments->asArray(),
                                            Name, Wanted))
          return Binding{*Parameter, originOf(F->getPointOfInstantiation(),
                                              F->getTemplateSpecializationKind(), Ctx)};
    } else if (const auto *Class = dyn_cast<ClassTemplateSpecializationDecl>(Context)) {
      if (auto Parameter = parameterBound(*Class->getSpecializedTemplate()->getTemplateParameters(),
                                          Class->getTemplateArgs().asArray(), Name, Wanted))
        return Binding{*Parameter, originOf(Class->getPointOfInstantiation(),
                                            Class->getSpecializationKind(), Ctx)};
    }
  }
  return std::nullopt;
}

/// The dtype named by E: at::kHalf, at::ScalarType::BFloat16, torch::kFloat16.
std::optional<kb::Format> dtypeNamed(const Expr *E) {
  const auto *Ref = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
  if (!Ref || !Ref->getDecl()->getIdentifier())
    return std::nullopt;
  llvm::StringRef Name = Ref->getDecl()->getName();
  if (Name == "kHalf" || Name == "kFloat16" || Name == "Half")
    return kb::Format::FP16;
  if (Name == "kBFloat16" || Name == "BFloat16")
    return kb::Format::BF16;
  return std::nullopt;
}

/// A comparison `x.scalar_type() == at::kHalf` in Function's body (a TORCH_CHECK's condition)
/// that requires Format.
const Expr *dtypeGuard(const FunctionDecl &Function, kb::Format Format) {
  const Expr *Found = nullptr;
  llvm::SmallVector<const Stmt *, 32> Work = {Function.getBody()};
  while (!Work.empty() && !Found) {
    const Stmt *Current = Work.pop_back_val();
    if (!Current)
      continue;
    const Expr *Left = nullptr, *Right = nullptr;
    if (const auto *Op = dyn_cast<BinaryOperator>(Current); Op && Op->getOpcode() == BO_EQ) {
      Left = Op->getLHS();
      Right = Op->getRHS();
    } else if (const auto *Call = dyn_cast<CXXOperatorCallExpr>(Current);
               Call && Call->getOperator() == OO_EqualEqual && Call->getNumArgs() == 2) {
      Left = Call->getArg(0);
      Right = Call->getArg(1);
    }
    for (int Swap = 0; Left && Right && Swap < 2; ++Swap, std::swap(Left, Right)) {
      const auto *Member = dyn_cast<CXXMemberCallExpr>(Left->IgnoreParenImpCasts());
      const CXXMethodDecl *Method = Member ? Member->getMethodDecl() : nullptr;
      if (Method && Method->getIdentifier() &&
          (Method->getName() == "scalar_type" || Method->getName() == "dtype") &&
          dtypeNamed(Right) == Format)
        Found = cast<Expr>(Current);
    }
    for (const Stmt *Child : Current->children())
      Work.push_back(Child);
  }
  return Found;
}

} // namespace

PrecisionReason halfReason(const Stmt &S, QualType T, kb::Format Format, ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  PrecisionReason Why;
  Why.Value = Format == kb::Format::BF16 ? kb::Precision::BF16 : kb::Precision::FP16;
  const std::string TypeName = displayName(T, Ctx);
  QualType Wanted = T.getCanonicalType().getUnqualifiedType();

  // The sugar of the type says how the code names it: an alias a dispatch macro declares
  // (`using scalar_t = ...` in each case of AT_DISPATCH_*), or a template parameter.
  std::string Parameter;
  const Type *Sugar = T.getTypePtrOrNull();
  for (int Steps = 0; Sugar && Steps < 32; ++Steps) {
    if (const auto *Alias = dyn_cast<TypedefType>(Sugar)) {
      const TypedefNameDecl *Decl = Alias->getDecl();
      SourceLocation Loc = Decl->getLocation();
      if (Loc.isMacroID()) {
        Why.Why = Decl->getName().str() + " = " + TypeName + ", from " + macroAt(Loc, Ctx) +
                  " at " + placeOf(Loc, SM);
        Why.Where = SM.getExpansionLoc(Loc);
        return Why;
      }
      if (!SM.isInSystemHeader(Loc)) {
        Why.Why = Decl->getName().str() + " = " + TypeName + ", declared at " + placeOf(Loc, SM);
        Why.Where = Loc;
        return Why;
      }
    }
    if (const auto *Substituted = dyn_cast<SubstTemplateTypeParmType>(Sugar)) {
      if (const TemplateTypeParmDecl *Replaced = Substituted->getReplacedParameter())
        if (Replaced->getIdentifier())
          Parameter = Replaced->getName().str();
      break;
    }
    QualType Next = Sugar->getLocallyUnqualifiedSingleStepDesugaredType();
    if (Next.getTypePtr() == Sugar)
      break;
    Sugar = Next.getTypePtr();
  }

  // The instantiation that binds it: of the function, or of a class or function around it.
  if (const FunctionDecl *Function = enclosingFunctionOf(S, Ctx))
    if (auto Bound = specializationBinding(*Function, Parameter, Wanted, Ctx)) {
      Why.Why = Bound->Parameter + " = " + TypeName;
      if (!Bound->From.Text.empty())
        Why.Why += ", " + Bound->From.Text;
      Why.Where = Bound->From.Where.isValid() ? Bound->From.Where : S.getBeginLoc();
      return Why;
    }
  // `TORCH_CHECK(x.scalar_type() == at::kHalf)` fixes the dtype of the code after it, in the
  // function or around the lambda.
  if (const FunctionDecl *Function = enclosingFunctionOf(S, Ctx))
    for (const DeclContext *Context = Function; Context; Context = Context->getParent())
      if (const auto *Around = dyn_cast<FunctionDecl>(Context))
        if (const Expr *Guard = dtypeGuard(*Around, Format)) {
          Why.Why = TypeName + ", the dtype the check at " + placeOf(Guard->getBeginLoc(), SM) +
                    " requires";
          Why.Where = SM.getExpansionLoc(Guard->getBeginLoc());
          return Why;
        }
  Why.Why = "the values are " + TypeName;
  Why.Where = S.getBeginLoc();
  return Why;
}

std::vector<const Stmt *> loopsRepeating(const Stmt &S, const VarDecl &Var, ASTContext &Ctx) {
  std::set<const Stmt *> AroundDeclaration;
  DynTypedNodeList Parents = Ctx.getParents(Var);
  for (int Depth = 0; !Parents.empty() && Depth < 1024; ++Depth) {
    if (Parents[0].get<FunctionDecl>())
      break;
    if (const auto *Around = Parents[0].get<Stmt>())
      AroundDeclaration.insert(Around);
    Parents = Ctx.getParents(Parents[0]);
  }
  std::vector<const Stmt *> Loops;
  Parents = Ctx.getParents(S);
  for (int Depth = 0; !Parents.empty() && Depth < 1024; ++Depth) {
    if (Parents[0].get<FunctionDecl>())
      break;
    if (const auto *Around = Parents[0].get<Stmt>()) {
      if (AroundDeclaration.count(Around))
        break;
      if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(Around))
        Loops.push_back(Around);
    }
    Parents = Ctx.getParents(Parents[0]);
  }
  return Loops;
}

static std::optional<int64_t> constantInteger(const Expr *E, const ASTContext &Ctx) {
  if (!E || E->isValueDependent() || E->isTypeDependent())
    return std::nullopt;
  Expr::EvalResult Result;
  if (!E->EvaluateAsInt(Result, Ctx))
    return std::nullopt;
  return Result.Val.getInt().getExtValue();
}

std::optional<uint64_t> constantTripCount(const Stmt &Loop, ASTContext &Ctx) {
  if (const auto *Range = dyn_cast<CXXForRangeStmt>(&Loop)) {
    const Expr *Init = Range->getRangeInit();
    if (const auto *Array =
            Init ? Ctx.getAsConstantArrayType(Init->getType().getNonReferenceType()) : nullptr)
      return Array->getSize().getZExtValue();
    return std::nullopt;
  }
  const auto *For = dyn_cast<ForStmt>(&Loop);
  if (!For)
    return std::nullopt;
  // The counter and its first value: `int i = 0` or `i = 0`.
  const VarDecl *Counter = nullptr;
  std::optional<int64_t> Start;
  if (const auto *Declared = dyn_cast_or_null<DeclStmt>(For->getInit())) {
    if (Declared->isSingleDecl())
      if ((Counter = dyn_cast<VarDecl>(Declared->getSingleDecl())))
        Start = constantInteger(Counter->getInit(), Ctx);
  } else if (const auto *Assigned = dyn_cast_or_null<BinaryOperator>(For->getInit())) {
    if (Assigned->getOpcode() == BO_Assign)
      if (const auto *Ref = dyn_cast<DeclRefExpr>(Assigned->getLHS()->IgnoreParenImpCasts())) {
        Counter = dyn_cast<VarDecl>(Ref->getDecl());
        Start = constantInteger(Assigned->getRHS(), Ctx);
      }
  }
  const auto *Condition = dyn_cast_or_null<BinaryOperator>(
      For->getCond() ? For->getCond()->IgnoreParenImpCasts() : nullptr);
  if (!Counter || !Start || !Condition)
    return std::nullopt;
  auto IsCounter = [&](const Expr *E) {
    const auto *Ref = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
    return Ref && Ref->getDecl() == Counter;
  };
  BinaryOperatorKind Op = Condition->getOpcode();
  std::optional<int64_t> End;
  if (IsCounter(Condition->getLHS())) {
    End = constantInteger(Condition->getRHS(), Ctx);
  } else if (IsCounter(Condition->getRHS())) {
    End = constantInteger(Condition->getLHS(), Ctx);
    Op = BinaryOperator::reverseComparisonOp(Op);
  }
  if (!End)
    return std::nullopt;
  int64_t Count = 0;
  switch (Op) {
  case BO_LT: Count = *End - *Start; break;
  case BO_LE: Count = *End - *Start + 1; break;
  case BO_GT: Count = *Start - *End; break;
  case BO_GE: Count = *Start - *End + 1; break;
  case BO_NE: Count = *End > *Start ? *End - *Start : *Start - *End; break;
  default: return std::nullopt;
  }
  return Count < 0 ? 0 : static_cast<uint64_t>(Count);
}

} // namespace clang::tidy::mpnanny::kernel
