//===--- TrainingStep.cpp - mpnanny ----------------------------------------===//
#include "TrainingStep.h"

#include "TorchCalls.h"
#include "UserCodeVisitor.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace clang::tidy::mpnanny {

unsigned orderOf(const Stmt &S, const SourceManager &SM) {
  return SM.getFileOffset(SM.getExpansionLoc(S.getBeginLoc()));
}

void forEachStatement(const FunctionDecl &F, const std::function<void(const Stmt &)> &Fn) {
  visitDescendants(F.getBody(), [&](const Stmt *S) {
    Fn(*S);
    return true;
  });
}

const Expr *stripImplicit(const Expr *E) {
  while (E) {
    const Expr *Before = E;
    E = E->IgnoreImplicit()->IgnoreParens();
    if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(E))
      E = FC->getSubExpr();
    if (E == Before)
      break;
  }
  return E;
}

bool inSystemHeader(const Decl &D) {
  return D.getASTContext().getSourceManager().isInSystemHeader(D.getLocation());
}

const VarDecl *rootVariable(const Expr *E) { return dyn_cast_or_null<VarDecl>(rootDeclaration(E)); }

const ValueDecl *rootDeclaration(const Expr *E) {
  for (int Depth = 0; E && Depth < 16; ++Depth) {
    E = ignoreConversions(E);
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E))
      return dyn_cast<VarDecl>(Ref->getDecl());
    if (const auto *M = dyn_cast<MemberExpr>(E);
        M && isa<CXXThisExpr>(M->getBase()->IgnoreParenImpCasts()))
      return dyn_cast<FieldDecl>(M->getMemberDecl());
    if (const auto *Member = dyn_cast<CXXMemberCallExpr>(E))
      E = Member->getImplicitObjectArgument();
    else if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E);
             Op && (Op->getOperator() == OO_Arrow || Op->getOperator() == OO_Star) &&
             Op->getNumArgs() == 1)
      E = Op->getArg(0);
    else if (const auto *U = dyn_cast<UnaryOperator>(E); U && U->getOpcode() == UO_Deref)
      E = U->getSubExpr();
    else if (const auto *M = dyn_cast<MemberExpr>(E))
      E = M->getBase();
    else
      return nullptr;
  }
  return nullptr;
}

bool isScalerRecord(const CXXRecordDecl *RD) {
  return RD && RD->getIdentifier() && RD->getName().lower().find("scaler") != std::string::npos;
}

std::optional<std::string> scalerMethod(const CallExpr &Call) {
  const auto *Member = dyn_cast<CXXMemberCallExpr>(&Call);
  if (!Member || !Member->getMethodDecl() || !Member->getMethodDecl()->getIdentifier())
    return std::nullopt;
  llvm::StringRef N = Member->getMethodDecl()->getName();
  if (N != "scale" && N != "unscale_" && N != "step" && N != "update")
    return std::nullopt;
  if (!isScalerRecord(objectRecordOf(*Member)) &&
      !isScalerRecord(Member->getMethodDecl()->getParent()))
    return std::nullopt;
  return N.str();
}

bool isOptimizerRecord(const CXXRecordDecl *RD) {
  if (!RD)
    return false;
  if (RD->getQualifiedNameAsString() == "torch::optim::Optimizer")
    return true;
  if (!RD->hasDefinition())
    return false;
  for (const auto &Base : RD->getDefinition()->bases())
    if (isOptimizerRecord(Base.getType()->getAsCXXRecordDecl()))
      return true;
  return false;
}

std::optional<const Expr *> backwardLoss(const CallExpr &Call) {
  const FunctionDecl *Callee = Call.getDirectCallee();
  if (!Callee || !Callee->getIdentifier() || Callee->getName() != "backward")
    return std::nullopt;
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(&Call)) {
    const Expr *Self = Member->getImplicitObjectArgument();
    if (Self && isTensorType(Self->getType()))
      return Self;
    return std::nullopt;
  }
  if (Callee->getQualifiedNameAsString() != "torch::autograd::backward" || Call.getNumArgs() == 0)
    return std::nullopt;
  const Expr *Loss = nullptr;
  visitDescendants(Call.getArg(0), [&](const Stmt *S) {
    if (Loss)
      return false;
    if (const auto *E = dyn_cast<Expr>(S); E && isTensorType(E->getType())) {
      Loss = ignoreConversions(E);
      return false;
    }
    return true;
  });
  if (!Loss)
    return std::nullopt;
  return Loss;
}

bool isClipGradCall(const CallExpr &Call) {
  const FunctionDecl *Callee = Call.getDirectCallee();
  if (!Callee || !Callee->getIdentifier())
    return false;
  llvm::StringRef N = Callee->getName();
  return (N == "clip_grad_norm_" || N == "clip_grad_value_") &&
         llvm::StringRef(Callee->getQualifiedNameAsString()).starts_with("torch::nn::utils::");
}

bool isOptimizerStep(const CallExpr &Call) {
  const auto *Member = dyn_cast<CXXMemberCallExpr>(&Call);
  if (!Member || !Member->getMethodDecl() || !Member->getMethodDecl()->getIdentifier() ||
      Member->getMethodDecl()->getName() != "step")
    return false;
  if (isOptimizerRecord(objectRecordOf(*Member)))
    return true;
  return scalerMethod(Call) && Call.getNumArgs() >= 1;
}

bool isAutocastCacheClear(const CallExpr &Call) {
  const FunctionDecl *Callee = Call.getDirectCallee();
  return Callee && Callee->getQualifiedNameAsString() == "at::autocast::clear_cache";
}

bool mentionsGrad(const Stmt *S) {
  bool Found = false;
  visitDescendants(S, [&](const Stmt *X) {
    if (const auto *Call = dyn_cast<CallExpr>(X))
      if (const FunctionDecl *Callee = Call->getDirectCallee(); Callee && Callee->getIdentifier())
        if (Callee->getName() == "grad" || Callee->getName() == "mutable_grad")
          Found = true;
    return !Found;
  });
  return Found;
}

static bool callsNamed(const Stmt *S, llvm::StringRef Name) {
  bool Found = false;
  visitDescendants(S, [&](const Stmt *X) {
    if (const auto *Call = dyn_cast<CallExpr>(X))
      if (const FunctionDecl *Callee = Call->getDirectCallee();
          Callee && Callee->getIdentifier() && Callee->getName() == Name)
        Found = true;
    return !Found;
  });
  return Found;
}

/// A parameter: the loop variable over `model->parameters()`, or a variable whose
/// name says so (`param`, `weight`).
static bool isParameterVariable(const VarDecl *V, ASTContext &Ctx) {
  if (!V || !V->getIdentifier())
    return false;
  std::string Name = V->getName().lower();
  if (Name.find("param") != std::string::npos || Name.find("weight") != std::string::npos)
    return true;
  for (const DynTypedNode &P : Ctx.getParents(*V))
    if (const auto *DS = P.get<DeclStmt>())
      for (const DynTypedNode &Q : Ctx.getParents(*DS))
        if (const auto *For = Q.get<CXXForRangeStmt>(); For && For->getLoopVariable() == V) {
          const Expr *Range = For->getRangeInit();
          if (callsNamed(Range, "parameters") || callsNamed(Range, "named_parameters"))
            return true;
          if (const VarDecl *R = rootVariable(Range);
              R && R->getIdentifier() && R->getName().lower().find("param") != std::string::npos)
            return true;
        }
  return false;
}

static bool underNoGradGuard(const Stmt &S, ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  unsigned At = orderOf(S, SM);
  DynTypedNodeList Parents = Ctx.getParents(S);
  for (int Depth = 0; Depth < 256 && !Parents.empty(); ++Depth) {
    const DynTypedNode &P = Parents[0];
    if (P.get<FunctionDecl>())
      return false;
    if (const auto *CS = P.get<CompoundStmt>())
      for (const Stmt *Child : CS->body())
        if (const auto *DS = dyn_cast<DeclStmt>(Child); DS && orderOf(*DS, SM) < At)
          for (const Decl *D : DS->decls())
            if (const auto *V = dyn_cast<VarDecl>(D))
              if (const auto *RD = V->getType()->getAsCXXRecordDecl(); RD && RD->getIdentifier())
                if (RD->getName() == "NoGradGuard" || RD->getName() == "InferenceMode" ||
                    RD->getName() == "AutoGradMode")
                  return true;
    Parents = Ctx.getParents(P);
  }
  return false;
}

bool isInPlaceWeightUpdate(const CallExpr &Call, ASTContext &Ctx) {
  auto TC = classifyTorchCall(Call);
  if (!TC || TC->Kind != Spelling::Method || !TC->Self)
    return false;
  static const char *const Updates[] = {"add_",  "sub_",     "mul_",     "div_",
                                        "copy_", "addcdiv_", "addcmul_", "lerp_"};
  if (std::find(std::begin(Updates), std::end(Updates), TC->Name) == std::end(Updates))
    return false;
  if (mentionsGrad(TC->Self) || !isParameterVariable(rootVariable(TC->Self), Ctx))
    return false;
  return callsNamed(TC->Self, "data") || underNoGradGuard(Call, Ctx);
}

static bool clearsImpl(const Stmt &S, int Depth,
                       llvm::SmallPtrSetImpl<const FunctionDecl *> &Seen) {
  bool Found = false;
  auto Enter = [&](const FunctionDecl *FD) {
    if (!FD || Depth >= 4 || inSystemHeader(*FD))
      return;
    const FunctionDecl *Def = FD->getDefinition();
    if (Def && Def->getBody() && Seen.insert(Def).second &&
        clearsImpl(*Def->getBody(), Depth + 1, Seen))
      Found = true;
  };
  visitDescendants(&S, [&](const Stmt *X) {
    if (Found)
      return false;
    if (const auto *Call = dyn_cast<CallExpr>(X)) {
      if (isAutocastCacheClear(*Call))
        return !(Found = true);
      Enter(Call->getDirectCallee());
    }
    if (const auto *Construct = dyn_cast<CXXConstructExpr>(X))
      if (const CXXConstructorDecl *Ctor = Construct->getConstructor()) {
        Enter(Ctor);
        if (const CXXRecordDecl *RD = Ctor->getParent(); RD && RD->hasDefinition())
          Enter(RD->getDestructor()); // a guard that clears when its scope ends
      }
    return !Found;
  });
  return Found;
}

bool clearsAutocastCache(const Stmt &S) {
  llvm::SmallPtrSet<const FunctionDecl *, 8> Seen;
  return clearsImpl(S, 0, Seen);
}

static bool usesMixedPrecisionImpl(const FunctionDecl &F, const PrecisionContext &Context,
                                   int Depth) {
  if (!F.getBody())
    return false;
  if (Context.at(*F.getBody()).Value != kb::Precision::FP32)
    return true;
  bool Found = false;
  visitDescendants(F.getBody(), [&](const Stmt *S) {
    if (Found || !isa<CallExpr>(S))
      return !Found;
    if (Context.at(*S).Value != kb::Precision::FP32)
      return !(Found = true);
    // A helper that runs the forward under autocast makes its caller a mixed step.
    if (const FunctionDecl *Callee = cast<CallExpr>(S)->getDirectCallee(); Callee && Depth < 3)
      if (const FunctionDecl *Def = Callee->getDefinition();
          Def && Def != &F && !inSystemHeader(*Def) &&
          usesMixedPrecisionImpl(*Def, Context, Depth + 1))
        Found = true;
    return !Found;
  });
  return Found;
}

bool usesMixedPrecision(const FunctionDecl &F, const PrecisionContext &Context) {
  return usesMixedPrecisionImpl(F, Context, 0);
}

namespace {
class MixedPrecisionFinder : public RecursiveASTVisitor<MixedPrecisionFinder> {
public:
  MixedPrecisionFinder(const PrecisionContext &Context, const SourceManager &SM)
      : Context(Context), SM(SM) {}
  bool TraverseDecl(Decl *D) {
    if (Found)
      return false;
    if (D && !isa<TranslationUnitDecl>(D) && D->getLocation().isValid() &&
        SM.isInSystemHeader(D->getLocation()))
      return true;
    return RecursiveASTVisitor::TraverseDecl(D);
  }
  bool VisitFunctionDecl(FunctionDecl *FD) {
    if (FD->doesThisDeclarationHaveABody() && usesMixedPrecision(*FD, Context))
      Found = true;
    return !Found;
  }
  bool Found = false;

private:
  const PrecisionContext &Context;
  const SourceManager &SM;
};
} // namespace

namespace {
class CacheSwitchFinder : public RecursiveASTVisitor<CacheSwitchFinder> {
public:
  explicit CacheSwitchFinder(ASTContext &Ctx) : Ctx(Ctx) {}
  bool TraverseDecl(Decl *D) {
    if (D && !isa<TranslationUnitDecl>(D) && D->getLocation().isValid() &&
        Ctx.getSourceManager().isInSystemHeader(D->getLocation()))
      return true;
    return RecursiveASTVisitor::TraverseDecl(D);
  }
  bool VisitCallExpr(CallExpr *C) {
    if (const FunctionDecl *Callee = C->getDirectCallee();
        Callee &&
        Callee->getQualifiedNameAsString() == "at::autocast::set_autocast_cache_enabled" &&
        C->getNumArgs() == 1)
      if (auto V = evaluateNumber(C->getArg(0), Ctx); V && *V == 0)
        Found = true;
    return !Found;
  }
  bool Found = false;

private:
  ASTContext &Ctx;
};
} // namespace

namespace {
/// What the unit's user code does with gradients: uses them (an optimizer step, a weight
/// update, clipping, unscaling, a scaler, a read of a tensor's grad()) or throws them away (a
/// zero_grad(), `p.mutable_grad() = torch::Tensor()`, `p.grad().zero_()`).
class GradientUseFinder : public UserCodeVisitor<GradientUseFinder> {
public:
  explicit GradientUseFinder(ASTContext &Ctx) : UserCodeVisitor(Ctx.getSourceManager()), Ctx(Ctx) {}
  bool VisitCallExpr(CallExpr *C) {
    const FunctionDecl *Callee = C->getDirectCallee();
    llvm::StringRef Name =
        Callee && Callee->getIdentifier() ? Callee->getName() : llvm::StringRef();
    if (isOptimizerStep(*C) || isClipGradCall(*C) || scalerMethod(*C) ||
        Name.contains_insensitive("unscale") || isInPlaceWeightUpdate(*C, Ctx))
      Uses = true;
    else if (Name == "zero_grad")
      Discards = true;
    else if (isa<CXXMemberCallExpr>(C) && (Name == "grad" || Name == "mutable_grad"))
      (resets(*C) ? Discards : Uses) = true;
    return !Uses;
  }
  bool Uses = false;
  bool Discards = false;

private:
  /// `g = torch::Tensor()`, `g.zero_()`, `g.reset()`, `g.defined()` of the gradient G:
  /// nothing reads its values.
  bool resets(const CallExpr &Grad) {
    const Expr *Child = &Grad;
    DynTypedNodeList Parents = Ctx.getParents(*Child);
    while (!Parents.empty() &&
           (Parents[0].get<ImplicitCastExpr>() || Parents[0].get<MaterializeTemporaryExpr>() ||
            Parents[0].get<MemberExpr>())) {
      Child = Parents[0].get<Expr>();
      Parents = Ctx.getParents(Parents[0]);
    }
    if (Parents.empty())
      return false;
    if (const auto *Member = Parents[0].get<CXXMemberCallExpr>()) {
      const CXXMethodDecl *M = Member->getMethodDecl();
      llvm::StringRef N = M && M->getIdentifier() ? M->getName() : "";
      return N == "zero_" || N == "detach_" || N == "reset" || N == "defined";
    }
    const auto *Assign = Parents[0].get<CXXOperatorCallExpr>();
    if (!Assign || Assign->getOperator() != OO_Equal || Assign->getNumArgs() != 2 ||
        Assign->getArg(0)->IgnoreImplicit() != Grad.IgnoreImplicit())
      return false;
    const Expr *Value = Assign->getArg(1)->IgnoreImplicit();
    if (const auto *Construct = dyn_cast<CXXConstructExpr>(Value)) // torch::Tensor()
      return Construct->getNumArgs() == 0;
    if (const auto *List = dyn_cast<InitListExpr>(Value))
      return List->getNumInits() == 0;
    return false;
  }
  ASTContext &Ctx;
};
} // namespace

bool unitOnlyDiscardsGradients(ASTContext &Ctx) {
  GradientUseFinder Finder(Ctx);
  Finder.TraverseDecl(Ctx.getTranslationUnitDecl());
  return Finder.Discards && !Finder.Uses;
}

namespace {
class WeightUpdateFinder : public UserCodeVisitor<WeightUpdateFinder> {
public:
  explicit WeightUpdateFinder(ASTContext &Ctx)
      : UserCodeVisitor(Ctx.getSourceManager()), Ctx(Ctx) {}
  bool VisitCallExpr(CallExpr *C) {
    if (isOptimizerStep(*C) || isInPlaceWeightUpdate(*C, Ctx))
      Found = C;
    return !Found;
  }
  const CallExpr *Found = nullptr;

private:
  ASTContext &Ctx;
};
} // namespace

const CallExpr *firstWeightUpdate(ASTContext &Ctx) {
  WeightUpdateFinder Finder(Ctx);
  Finder.TraverseDecl(Ctx.getTranslationUnitDecl());
  return Finder.Found;
}

bool autocastCacheDisabled(ASTContext &Ctx) {
  CacheSwitchFinder Finder(Ctx);
  Finder.TraverseDecl(Ctx.getTranslationUnitDecl());
  return Finder.Found;
}

bool translationUnitUsesMixedPrecision(ASTContext &Ctx, const PrecisionContext &Context) {
  MixedPrecisionFinder Finder(Context, Ctx.getSourceManager());
  Finder.TraverseDecl(Ctx.getTranslationUnitDecl());
  return Finder.Found;
}

/// A loop over a model's parameters (`for (auto &p : model->parameters())`): the
/// update loop inside a step, not the training loop.
static bool isParameterLoop(const Stmt &Loop) {
  const auto *For = dyn_cast<CXXForRangeStmt>(&Loop);
  if (!For)
    return false;
  bool Found = false;
  visitDescendants(For->getRangeInit(), [&](const Stmt *S) {
    if (const auto *Call = dyn_cast<CallExpr>(S))
      if (const FunctionDecl *Callee = Call->getDirectCallee(); Callee && Callee->getIdentifier())
        Found |= Callee->getName().contains("parameters") || Callee->getName() == "param_groups";
    if (const auto *Ref = dyn_cast<DeclRefExpr>(S))
      Found |= Ref->getDecl()->getName().contains_insensitive("param");
    return !Found;
  });
  return Found;
}

const Stmt *trainingLoopAround(const Stmt &S, ASTContext &Ctx) {
  DynTypedNodeList Parents = Ctx.getParents(S);
  for (int Depth = 0; Depth < 256 && !Parents.empty(); ++Depth) {
    const DynTypedNode &P = Parents[0];
    if (P.get<FunctionDecl>() || P.get<LambdaExpr>())
      return nullptr;
    if (const auto *L = P.get<Stmt>())
      if ((isa<ForStmt>(L) || isa<WhileStmt>(L) || isa<DoStmt>(L) || isa<CXXForRangeStmt>(L)) &&
          !isParameterLoop(*L))
        return L;
    Parents = Ctx.getParents(P);
  }
  return nullptr;
}

bool clearsGradients(const Stmt &Region, llvm::ArrayRef<const ValueDecl *> Owners) {
  if (mentionsGrad(&Region))
    return true; // `p.grad().zero_()`, `p.mutable_grad() = {}`: read as clearing
  bool Clears = false;
  visitDescendants(&Region, [&](const Stmt *S) {
    const auto *Call = dyn_cast<CXXMemberCallExpr>(S);
    const CXXMethodDecl *M = Call ? Call->getMethodDecl() : nullptr;
    if (M && M->getIdentifier() && M->getName() == "zero_grad") {
      const ValueDecl *Of = rootDeclaration(Call->getImplicitObjectArgument());
      Clears |= !Of || llvm::is_contained(Owners, Of);
    }
    return !Clears;
  });
  return Clears;
}

} // namespace clang::tidy::mpnanny
