//===--- OptimizerParameters.cpp - mpnanny ---------------------------------===//
//
// The parameters an optimizer is built over, and the format they are in (TrainingStep.h).
//
//===----------------------------------------------------------------------===//
#include "TrainingStep.h"

#include "TorchCalls.h"
#include "ValueFlow.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/Basic/SourceManager.h"

namespace clang::tidy::mpnanny {

/// `model->to(torch::kHalf)` conversions of the module V (a variable or a member) in F;
/// the last one wins.
static std::optional<ParameterFormat> moduleConversionIn(const ValueDecl &V, const FunctionDecl &F,
                                                         ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  std::optional<ParameterFormat> Last;
  unsigned LastOrder = 0;
  forEachStatement(F, [&](const Stmt &S) {
    const auto *Member = dyn_cast<CXXMemberCallExpr>(&S);
    if (!Member || !Member->getMethodDecl() || !Member->getMethodDecl()->getIdentifier() ||
        Member->getMethodDecl()->getName() != "to" ||
        Member->getMethodDecl()->getParent()->getQualifiedNameAsString() != "torch::nn::Module" ||
        rootDeclaration(Member->getImplicitObjectArgument()) != &V)
      return;
    for (const Expr *Arg : Member->arguments())
      if (auto D = dtypeNamedIn(Arg)) {
        if (orderOf(S, SM) >= LastOrder) {
          LastOrder = orderOf(S, SM);
          Last = ParameterFormat{*D, SM.getExpansionLoc(Member->getBeginLoc()),
                                 "the model '" + V.getNameAsString() + "' is converted to " +
                                     kb::toString(*D) + " here"};
        }
        break;
      }
  });
  return Last;
}

/// The conversions of a module: in F, else, for a member, in the other methods of its
/// class (`void to_half() { net_->to(torch::kHalf); }`), when they agree.
static std::optional<ParameterFormat> moduleConversionOf(const ValueDecl &Module,
                                                         const FunctionDecl &F, ASTContext &Ctx) {
  if (auto InF = moduleConversionIn(Module, F, Ctx))
    return InF;
  const auto *Field = dyn_cast<FieldDecl>(&Module);
  const auto *Class = Field ? dyn_cast<CXXRecordDecl>(Field->getParent()) : nullptr;
  if (!Class)
    return std::nullopt;
  std::optional<ParameterFormat> Found;
  for (const CXXMethodDecl *M : Class->methods()) {
    const FunctionDecl *Def = M->getDefinition();
    if (!Def || Def == &F || !Def->getBody())
      continue;
    auto R = moduleConversionIn(Module, *Def, Ctx);
    if (!R)
      continue;
    if (Found && Found->Value != R->Value)
      return std::nullopt; // converted both ways: which one the optimizer sees is not known
    Found = R;
  }
  return Found;
}

static std::optional<ParameterFormat> parameterFormatImpl(const Expr *Params, const FunctionDecl &F,
                                                          const PrecisionContext &Context,
                                                          ASTContext &Ctx, int Depth);

/// The format of a list of tensors: half if an element is known half and none fp32.
static std::optional<ParameterFormat> elementsFormat(llvm::ArrayRef<const Expr *> Elements,
                                                     const FunctionDecl &F,
                                                     const PrecisionContext &Context,
                                                     ASTContext &Ctx, int Depth) {
  const SourceManager &SM = Ctx.getSourceManager();
  std::optional<ParameterFormat> Half;
  for (const Expr *E : Elements) {
    if (!isTensorType(E->getType())) {
      // A parameter group: the format of its list.
      const Expr *List = stripImplicit(E);
      if (const auto *CE = dyn_cast<CXXConstructExpr>(List); CE && CE->getNumArgs() >= 1)
        List = CE->getArg(0);
      auto R = parameterFormatImpl(List, F, Context, Ctx, Depth + 1);
      if (!R || R->Value == kb::Format::FP32)
        return std::nullopt; // an fp32 or unknown group: not all of it is half
      if (!Half)
        Half = R;
      continue;
    }
    std::optional<kb::Format> Known = Context.knownFormat(E);
    if (!Known) {
      // `for (auto &p : model->parameters()) list.push_back(p)`
      if (const VarDecl *V = rootVariable(E))
        for (const DynTypedNode &P : Ctx.getParents(*V))
          if (const auto *DS = P.get<DeclStmt>())
            for (const DynTypedNode &Q : Ctx.getParents(*DS))
              if (const auto *For = Q.get<CXXForRangeStmt>(); For && For->getLoopVariable() == V)
                if (auto R = parameterFormatImpl(For->getRangeInit(), F, Context, Ctx, Depth + 1)) {
                  Known = R->Value;
                  if (!Half && Known != kb::Format::FP32)
                    Half = R;
                }
      continue;
    }
    if (*Known == kb::Format::FP32)
      return std::nullopt; // a master copy in fp32
    if (!Half)
      Half = ParameterFormat{*Known, SM.getExpansionLoc(E->getBeginLoc()),
                             std::string("this parameter is ") + kb::toString(*Known)};
  }
  return Half;
}

/// `model->parameters()`, also as the one argument of an OptimizerParamGroup.
static bool isParameterList(const Expr *E) {
  E = stripImplicit(E);
  if (const auto *CE = dyn_cast_or_null<CXXConstructExpr>(E); CE && CE->getNumArgs() >= 1)
    E = stripImplicit(CE->getArg(0));
  const auto *Member = dyn_cast_or_null<CXXMemberCallExpr>(E);
  return Member && Member->getMethodDecl() && Member->getMethodDecl()->getIdentifier() &&
         Member->getMethodDecl()->getName() == "parameters";
}

static void collectElements(const Expr *E, llvm::SmallVectorImpl<const Expr *> &Out) {
  E = stripImplicit(E);
  if (!E)
    return;
  if (const auto *IL = dyn_cast<InitListExpr>(E)) {
    for (const Expr *Init : IL->inits())
      if (isTensorType(Init->getType()) || isParameterList(Init))
        Out.push_back(Init);
      else
        collectElements(Init, Out);
    return;
  }
  if (const auto *SIL = dyn_cast<CXXStdInitializerListExpr>(E))
    return collectElements(SIL->getSubExpr(), Out);
  if (const auto *CE = dyn_cast<CXXConstructExpr>(E))
    for (const Expr *Arg : CE->arguments())
      collectElements(Arg, Out);
}

static std::optional<ParameterFormat> parameterFormatImpl(const Expr *Params, const FunctionDecl &F,
                                                          const PrecisionContext &Context,
                                                          ASTContext &Ctx, int Depth) {
  if (!Params || Depth > 6)
    return std::nullopt;
  const Expr *P = stripImplicit(Params);
  // A copy of a list: std::vector<Tensor>(model->parameters()), or a local passed by value.
  if (const auto *CE = dyn_cast<CXXConstructExpr>(P);
      CE && CE->getNumArgs() >= 1 && !isTensorType(CE->getType()) &&
      (CE->getNumArgs() == 1 || isa<CXXDefaultArgExpr>(CE->getArg(1))))
    if (const Expr *Source = stripImplicit(CE->getArg(0));
        isa<CXXMemberCallExpr>(Source) || isa<DeclRefExpr>(Source))
      P = Source;
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(P)) {
    const CXXMethodDecl *M = Member->getMethodDecl();
    llvm::StringRef N = M && M->getIdentifier() ? M->getName() : "";
    const Expr *Object = Member->getImplicitObjectArgument();
    if (N == "values")
      if (const auto *Inner = dyn_cast_or_null<CXXMemberCallExpr>(ignoreConversions(Object));
          Inner && Inner->getMethodDecl() && Inner->getMethodDecl()->getIdentifier() &&
          Inner->getMethodDecl()->getName() == "named_parameters") {
        N = "parameters";
        Object = Inner->getImplicitObjectArgument();
      }
    if (N != "parameters")
      return std::nullopt;
    // The instance, not its class: a project may train one Net in fp32 and run another
    // in half.
    if (const ValueDecl *Model = rootDeclaration(Object))
      return moduleConversionOf(*Model, F, Ctx);
    return std::nullopt;
  }
  llvm::SmallVector<const Expr *, 8> Elements;
  if (const auto *Ref = dyn_cast<DeclRefExpr>(P)) {
    const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
    if (!Var || !Var->isLocalVarDecl())
      return std::nullopt;
    if (const Expr *Init = Var->getInit()) {
      const Expr *I = stripImplicit(Init);
      if (isa<CXXMemberCallExpr>(I) || isa<DeclRefExpr>(I))
        if (auto R = parameterFormatImpl(I, F, Context, Ctx, Depth + 1))
          return R;
      collectElements(Init, Elements);
    }
    forEachStatement(F, [&](const Stmt &S) {
      const auto *Member = dyn_cast<CXXMemberCallExpr>(&S);
      if (Member && Member->getMethodDecl() && Member->getMethodDecl()->getIdentifier() &&
          (Member->getMethodDecl()->getName() == "push_back" ||
           Member->getMethodDecl()->getName() == "emplace_back") &&
          Member->getNumArgs() == 1 && rootVariable(Member->getImplicitObjectArgument()) == Var)
        Elements.push_back(Member->getArg(0));
    });
  } else {
    collectElements(P, Elements);
  }
  if (Elements.empty())
    return std::nullopt;
  return elementsFormat(Elements, F, Context, Ctx, Depth);
}

std::optional<ParameterFormat> parameterFormat(const Expr *Params, const FunctionDecl &F,
                                               const PrecisionContext &Context, ASTContext &Ctx) {
  auto R = parameterFormatImpl(Params, F, Context, Ctx, 0);
  if (R && R->Value == kb::Format::FP32)
    return std::nullopt;
  return R;
}

const Expr *constructedOptimizerParameters(const Expr *Construction) {
  const Expr *E = stripImplicit(Construction);
  if (!E)
    return nullptr;
  if (const auto *New = dyn_cast<CXXNewExpr>(E))
    E = New->getConstructExpr();
  if (const auto *CE = dyn_cast_or_null<CXXConstructExpr>(E)) {
    if (CE->getNumArgs() >= 1 && isOptimizerRecord(CE->getConstructor()->getParent()))
      return CE->getArg(0);
    return nullptr;
  }
  // std::make_shared<torch::optim::Adam>(params, options)
  if (const auto *Call = dyn_cast_or_null<CallExpr>(E))
    if (const FunctionDecl *Callee = Call->getDirectCallee();
        Callee && Callee->getIdentifier() &&
        (Callee->getName() == "make_shared" || Callee->getName() == "make_unique") &&
        Call->getNumArgs() >= 1)
      if (const TemplateArgumentList *Args = Callee->getTemplateSpecializationArgs();
          Args && Args->size() >= 1 && Args->get(0).getKind() == TemplateArgument::Type &&
          isOptimizerRecord(Args->get(0).getAsType()->getAsCXXRecordDecl()))
        return Call->getArg(0);
  return nullptr;
}

bool replacedLater(const Expr &Construction, const FunctionDecl *F, ASTContext &Ctx) {
  const auto *Ctor = dyn_cast_or_null<CXXConstructorDecl>(F);
  if (!Ctor)
    return false;
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation At = SM.getExpansionLoc(Construction.getBeginLoc());
  for (const CXXCtorInitializer *Init : Ctor->inits()) {
    if (!Init->isWritten() || !Init->getMember() || !Init->getInit())
      continue;
    SourceRange R = Init->getInit()->getSourceRange();
    if (!SM.isBeforeInTranslationUnit(At, SM.getExpansionLoc(R.getBegin())) &&
        !SM.isBeforeInTranslationUnit(SM.getExpansionLoc(R.getEnd()), At))
      return ValueFlow::get(Ctx).isAssigned(*Init->getMember());
  }
  return false;
}

std::vector<const Expr *> optimizerConstructions(const Expr *Optimizer,
                                                 const PrecisionContext &Context, ASTContext &Ctx) {
  std::vector<const Expr *> Constructions;
  const ValueDecl *D = rootDeclaration(Optimizer);
  if (const auto *V = dyn_cast_or_null<VarDecl>(D); V && V->isLocalVarDecl() && V->getInit())
    Constructions.push_back(V->getInit());
  else if (const auto *Field = dyn_cast_or_null<FieldDecl>(D))
    for (const Expr *Value : ValueFlow::get(Ctx).valuesAssignedTo(*Field))
      if (!replacedLater(*Value, Context.enclosingFunction(*Value), Ctx))
        Constructions.push_back(Value);
  return Constructions;
}

std::optional<ParameterFormat>
optimizerParameterFormat(const Expr *Optimizer, const PrecisionContext &Context, ASTContext &Ctx) {
  std::optional<ParameterFormat> Result;
  for (const Expr *Construction : optimizerConstructions(Optimizer, Context, Ctx)) {
    const Expr *Params = constructedOptimizerParameters(Construction);
    const FunctionDecl *F = Context.enclosingFunction(*Construction);
    if (!Params || !F)
      return std::nullopt;
    auto R = parameterFormat(Params, *F, Context, Ctx);
    if (!R || (Result && Result->Value != R->Value))
      return std::nullopt;
    Result = R;
  }
  return Result;
}

const Expr *optimizerParameters(const Expr *Optimizer) {
  const VarDecl *V = rootVariable(Optimizer);
  if (!V || !V->isLocalVarDecl() || !V->getInit())
    return nullptr;
  return constructedOptimizerParameters(V->getInit());
}

} // namespace clang::tidy::mpnanny
