//===--- LossScaling.cpp - mpnanny ----------------------------------------===//
#include "LossScaling.h"

#include "TorchCalls.h"
#include "TrainingStep.h"
#include "UserCodeVisitor.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace clang::tidy::mpnanny {

static bool saysScale(llvm::StringRef Name) {
  std::string L = Name.lower();
  return L.find("scale") != std::string::npos && L.find("unscale") == std::string::npos;
}

/// The declaration an expression names: a variable, a member, or a called function.
static const NamedDecl *namedBy(const Expr *E) {
  E = ignoreConversions(E);
  if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E))
    return Ref->getDecl();
  if (const auto *Member = dyn_cast_or_null<MemberExpr>(E))
    return Member->getMemberDecl();
  if (const auto *Call = dyn_cast_or_null<CallExpr>(E))
    return Call->getDirectCallee();
  return nullptr;
}

static bool mentionsScaleName(const Stmt *S) {
  bool Found = false;
  visitDescendants(S, [&](const Stmt *X) {
    if (const auto *E = dyn_cast<Expr>(X))
      if (const NamedDecl *D = namedBy(E); D && D->getIdentifier() && saysScale(D->getName()))
        Found = true;
    return !Found;
  });
  return Found;
}

bool isScaleFactor(const Expr *E, ASTContext &Ctx) {
  E = ignoreConversions(E);
  if (!E)
    return false;
  if (auto V = evaluateNumber(E, Ctx))
    return *V > 1;
  if (mentionsScaleName(E))
    return true;
  if (isTensorType(E->getType()))
    return false;
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E))
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl()); Var && Var->getInit())
      if (auto V = evaluateNumber(Var->getInit(), Ctx))
        return *V > 1;
  // A scalar of unknown value may well be the scale.
  return true;
}

static bool scaledExpr(const Expr *E, unsigned Before, ASTContext &Ctx, int Depth);

/// Rescaling of a local between its definition and `Before`: `loss *= scale`,
/// `loss = loss * scale`, `loss.mul_(scale)`.
static bool rescaledBefore(const VarDecl &V, unsigned Before, ASTContext &Ctx, int Depth) {
  // The function that declares the local; a lambda's locals belong to the function holding it.
  const FunctionDecl *F = dyn_cast_or_null<FunctionDecl>(V.getParentFunctionOrMethod());
  while (F && isa<CXXMethodDecl>(F) && cast<CXXMethodDecl>(F)->getParent()->isLambda())
    F = dyn_cast_or_null<FunctionDecl>(
        cast<CXXMethodDecl>(F)->getParent()->getParentFunctionOrMethod());
  if (!F || !F->getBody())
    return false;
  const SourceManager &SM = Ctx.getSourceManager();
  bool Found = false;
  auto RefersToV = [&](const Expr *X) {
    const auto *Ref = dyn_cast_or_null<DeclRefExpr>(ignoreConversions(X));
    return Ref && Ref->getDecl() == &V;
  };
  forEachStatement(*F, [&](const Stmt &S) {
    if (Found || orderOf(S, SM) >= Before)
      return;
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(&S);
        Op && Op->getNumArgs() == 2 && RefersToV(Op->getArg(0))) {
      if (Op->getOperator() == OO_StarEqual && isScaleFactor(Op->getArg(1), Ctx))
        Found = true;
      else if (Op->getOperator() == OO_Equal && scaledExpr(Op->getArg(1), Before, Ctx, Depth + 1))
        Found = true;
    } else if (const auto *Call = dyn_cast<CallExpr>(&S)) {
      if (auto TC = classifyTorchCall(*Call); TC && TC->Kind == Spelling::Method &&
                                              TC->Name == "mul_" && RefersToV(TC->Self) &&
                                              !TC->Args.empty() && isScaleFactor(TC->Args[0], Ctx))
        Found = true;
    }
  });
  return Found;
}

static bool scaledExpr(const Expr *E, unsigned Before, ASTContext &Ctx, int Depth) {
  if (!E || Depth > 8)
    return false;
  E = ignoreConversions(E);
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
    if (Op->getNumArgs() != 2)
      return false;
    if (Op->getOperator() == OO_Star) {
      for (unsigned I = 0; I < 2; ++I) {
        const Expr *Other = Op->getArg(1 - I);
        if (isTensorType(Other->getType()) && isScaleFactor(Op->getArg(I), Ctx) &&
            !isTensorType(ignoreConversions(Op->getArg(I))->getType()))
          return true;
        if (isTensorType(Op->getArg(I)->getType()) && mentionsScaleName(Op->getArg(I)))
          return true;
        if (scaledExpr(Op->getArg(I), Before, Ctx, Depth + 1))
          return true;
      }
      return false;
    }
    if (Op->getOperator() == OO_Slash)
      return scaledExpr(Op->getArg(0), Before, Ctx, Depth + 1);
    return false;
  }
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    const FunctionDecl *Callee = Call->getDirectCallee();
    if (Callee && Callee->getIdentifier() && saysScale(Callee->getName()))
      return true; // scaler.scale(loss), scale_loss(loss)
    if (auto TC = classifyTorchCall(*Call); TC && TC->Kind == Spelling::Method && TC->Self) {
      if ((TC->Name == "mul" || TC->Name == "mul_") && !TC->Args.empty() &&
          isScaleFactor(TC->Args[0], Ctx))
        return true;
      return scaledExpr(TC->Self, Before, Ctx, Depth + 1);
    }
    return false;
  }
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
    const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
    if (!Var)
      return false;
    if (Var->getIdentifier() && saysScale(Var->getName()))
      return true; // scaled_loss
    if (!Var->isLocalVarDecl())
      return false;
    if (Var->getInit() && scaledExpr(Var->getInit(), Before, Ctx, Depth + 1))
      return true;
    return rescaledBefore(*Var, Before, Ctx, Depth);
  }
  return false;
}

bool isScaledBackward(const CallExpr &Backward, const Expr *Loss, ASTContext &Ctx) {
  unsigned Before = orderOf(Backward, Ctx.getSourceManager());
  if (scaledExpr(Loss, Before, Ctx, 0))
    return true;
  // An explicit gradient seed carries the scale: loss.backward(torch::full({}, scale)).
  unsigned First = isa<CXXMemberCallExpr>(Backward) ? 0 : 1;
  for (unsigned I = First; I < Backward.getNumArgs(); ++I) {
    const Expr *Arg = Backward.getArg(I);
    if (isa<CXXDefaultArgExpr>(Arg))
      continue;
    if (mentionsScaleName(Arg))
      return true;
    bool Big = false;
    visitDescendants(Arg, [&](const Stmt *S) {
      if (const auto *X = dyn_cast<Expr>(S);
          X && (isa<FloatingLiteral>(X) || isa<IntegerLiteral>(X)))
        if (auto V = evaluateNumber(X, Ctx); V && *V > 1)
          Big = true;
      return !Big;
    });
    if (Big)
      return true;
  }
  return false;
}

static bool unscalesImpl(const Stmt &S, ASTContext &Ctx, int Depth,
                         llvm::SmallPtrSetImpl<const FunctionDecl *> &Seen) {
  bool Found = false;
  visitDescendants(&S, [&](const Stmt *X) {
    if (Found)
      return false;
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(X);
        Op && Op->getNumArgs() == 2 && mentionsGrad(Op->getArg(0))) {
      const Expr *Rhs = Op->getArg(1);
      if (Op->getOperator() == OO_SlashEqual ||
          (Op->getOperator() == OO_StarEqual && mentionsScaleName(Rhs)))
        Found = true;
      else if (Op->getOperator() == OO_Equal) {
        bool Divides = mentionsScaleName(Rhs);
        visitDescendants(Rhs, [&](const Stmt *Y) {
          if (const auto *D = dyn_cast<CXXOperatorCallExpr>(Y); D && D->getOperator() == OO_Slash)
            Divides = true;
          return !Divides;
        });
        Found = Divides;
      }
      if (Found)
        return false;
    }
    const auto *Call = dyn_cast<CallExpr>(X);
    if (!Call)
      return true;
    if (scalerMethod(*Call) == std::optional<std::string>("unscale_"))
      return !(Found = true);
    const FunctionDecl *Callee = Call->getDirectCallee();
    if (!Callee)
      return true;
    if (Callee->getIdentifier()) {
      std::string N = Callee->getName().lower();
      if (N.find("unscale") != std::string::npos || N == "_foreach_div_")
        return !(Found = true);
      if (N == "_foreach_mul_" && mentionsScaleName(Call))
        return !(Found = true);
    }
    if (auto TC = classifyTorchCall(*Call);
        TC && TC->Kind == Spelling::Method && TC->Self && mentionsGrad(TC->Self)) {
      if (TC->Name == "div_")
        return !(Found = true);
      if ((TC->Name == "mul_" || TC->Name == "copy_") && mentionsScaleName(Call))
        return !(Found = true);
      if (TC->Name == "mul_" && !TC->Args.empty())
        if (auto V = evaluateNumber(TC->Args[0], Ctx); V && *V > 0 && *V < 1)
          return !(Found = true);
    }
    // A user helper that unscales: `unscale_gradients(model, scale)` by another name.
    if (Depth < 3 && !inSystemHeader(*Callee))
      if (const FunctionDecl *Def = Callee->getDefinition();
          Def && Def->getBody() && Seen.insert(Def).second)
        if (unscalesImpl(*Def->getBody(), Ctx, Depth + 1, Seen))
          return !(Found = true);
    return true;
  });
  return Found;
}

bool unscalesGradients(const Stmt &S, ASTContext &Ctx) {
  llvm::SmallPtrSet<const FunctionDecl *, 8> Seen;
  return unscalesImpl(S, Ctx, 0, Seen);
}

bool isLossScaling(const Expr &Product, const Expr *Tensor, const Expr *Factor, ASTContext &Ctx) {
  // Only loss scaling: a loss, a factor named as a scale, or a product fed to backward().
  auto NameOf = [](const Expr *E) -> std::string {
    E = ignoreConversions(E);
    if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E))
      return Ref->getDecl()->getNameAsString();
    if (const auto *Member = dyn_cast_or_null<MemberExpr>(E))
      return Member->getMemberDecl()->getNameAsString();
    return "";
  };
  bool LossLike = llvm::StringRef(NameOf(Tensor)).contains_insensitive("loss") ||
                  llvm::StringRef(NameOf(Factor)).contains_insensitive("scale");
  if (!LossLike) {
    DynTypedNodeList Parents = Ctx.getParents(Product);
    for (int Depth = 0; Depth < 4 && !Parents.empty() && !LossLike; ++Depth) {
      if (const auto *Member = Parents[0].get<CXXMemberCallExpr>())
        LossLike = Member->getMethodDecl() && Member->getMethodDecl()->getIdentifier() &&
                   Member->getMethodDecl()->getName() == "backward";
      Parents = Ctx.getParents(Parents[0]);
    }
  }
  return LossLike;
}

} // namespace clang::tidy::mpnanny
