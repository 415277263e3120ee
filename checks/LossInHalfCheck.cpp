//===--- LossInHalfCheck.cpp - mpnanny -------------------------------------===//
#include "LossInHalfCheck.h"

#include "utils/HalfData.h"
#include "llvm/ADT/StringSwitch.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void LossInHalfCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (!knowledgeBase())
    return;
  // Built-in losses: the knowledge-base ops with `check: mpnanny-loss-in-half`.
  Finder->addMatcher(knowledgeBaseCall().bind("call"), this);
  // Hand-written losses: where a value becomes the loss.
  Finder->addMatcher(
      varDecl(unless(isExpansionInSystemHeader()), hasInitializer(expr().bind("init"))).bind("var"),
      this);
  Finder->addMatcher(cxxOperatorCallExpr(unless(isExpansionInSystemHeader()),
                                         hasOverloadedOperatorName("="), argumentCountIs(2))
                         .bind("assign"),
                     this);
  Finder->addMatcher(cxxMemberCallExpr(unless(isExpansionInSystemHeader()),
                                       callee(cxxMethodDecl(hasName("backward"))))
                         .bind("backward"),
                     this);
  Finder->addMatcher(returnStmt(unless(isExpansionInSystemHeader()),
                                hasReturnValue(expr().bind("returned")),
                                forFunction(functionDecl().bind("function")))
                         .bind("return"),
                     this);
}

void LossInHalfCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call")) {
    if (auto Found = ownedRisk(*Call, Ctx))
      reportOwned(*Found, Ctx);
    return;
  }
  if (const auto *Var = Result.Nodes.getNodeAs<VarDecl>("var")) {
    if (Var->getIdentifier() && isLossName(Var->getName()) && isTensorType(Var->getType()))
      checkHandWritten(*Result.Nodes.getNodeAs<Expr>("init"), Var->getLocation(),
                       "'" + Var->getName().str() + "'", Ctx);
    return;
  }
  if (const auto *Assign = Result.Nodes.getNodeAs<CXXOperatorCallExpr>("assign")) {
    const auto *Ref = dyn_cast<DeclRefExpr>(ignoreConversions(Assign->getArg(0)));
    if (Ref && Ref->getDecl()->getIdentifier() && isLossName(Ref->getDecl()->getName()) &&
        isTensorType(Ref->getType()))
      checkHandWritten(*Assign->getArg(1), Assign->getOperatorLoc(),
                       "'" + Ref->getDecl()->getName().str() + "'", Ctx);
    return;
  }
  if (const auto *Backward = Result.Nodes.getNodeAs<CXXMemberCallExpr>("backward")) {
    const Expr *Object = Backward->getImplicitObjectArgument();
    // `loss.backward()` on a variable: the variable's definition is where it is judged.
    if (Object && isTensorType(Object->getType()) && !isa<DeclRefExpr>(ignoreConversions(Object)))
      checkHandWritten(*Object, Object->getBeginLoc(), "passed to backward()", Ctx);
    return;
  }
  if (const auto *Returned = Result.Nodes.getNodeAs<Expr>("returned")) {
    const auto *Function = Result.Nodes.getNodeAs<FunctionDecl>("function");
    if (Function->getIdentifier() && isLossName(Function->getName()) &&
        isTensorType(Function->getReturnType()))
      checkHandWritten(*Returned, Returned->getBeginLoc(),
                       "returned by '" + Function->getName().str() + "'", Ctx);
  }
}

static bool isReduction(llvm::StringRef Name) {
  return llvm::StringSwitch<bool>(Name)
      .Cases("mean", "sum", "nansum", "nanmean", true)
      .Default(false);
}

static bool isArithmetic(llvm::StringRef Name) {
  return llvm::StringSwitch<bool>(Name)
      .Cases("pow", "square", "sub", "subtract", "mul", "multiply", "div", "divide", true)
      .Cases("add", "abs", "log", "exp", "neg", "log1p", "clamp", "min", "max", true)
      .Cases("minimum", "maximum", "sqrt", "rsub", true)
      .Default(false);
}

void LossInHalfCheck::checkHandWritten(const Expr &Value, SourceLocation Loc, llvm::StringRef What,
                                       ASTContext &Ctx) {
  const Expr *E = ignoreConversions(&Value);
  if (!E || !isTensorType(E->getType()))
    return;
  const PrecisionContext &PC = precisionContext(Ctx);
  PrecisionReason Why = PC.at(*E);
  // In a model converted to fp16 the arithmetic runs in fp16. Under autocast mean,
  // mul and sub follow their inputs, whose type the code rarely shows; bf16 holds
  // the range: neither is reported.
  if (Why.Value != kb::Precision::FP16 || isIntegralData(E))
    return;
  bool Reduction = false, Arithmetic = false, BuiltIn = false;
  visitDescendants(E, [&](const Stmt *S) {
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S)) {
      switch (Op->getOperator()) {
      case OO_Plus:
      case OO_Minus:
      case OO_Star:
      case OO_Slash: Arithmetic = Arithmetic || isTensorType(Op->getType()); break;
      default: break;
      }
    }
    if (const auto *Call = dyn_cast<CallExpr>(S))
      if (auto TC = classifyTorchCall(*Call)) {
        if (const kb::Op *Op = lookupOp(*TC, *knowledgeBase()); Op && Op->Check == Owner) {
          BuiltIn = true; // reported at its own call
          return false;
        }
        Reduction = Reduction || isReduction(TC->Name);
        Arithmetic = Arithmetic || isArithmetic(TC->Name);
      }
    return true;
  });
  if (!Reduction || !Arithmetic || BuiltIn)
    return;
  // -(ratio * adv).mean(): a sign does not change the format of what it negates.
  const Expr *Signed = E;
  while (const auto *Neg = dyn_cast<CXXOperatorCallExpr>(Signed))
    if (Neg->getNumArgs() == 1 && (Neg->getOperator() == OO_Minus || Neg->getOperator() == OO_Plus))
      Signed = ignoreConversions(Neg->getArg(0));
    else
      break;
  if (auto Known = PC.knownFormat(Signed); Known && *Known != kb::Format::FP16)
    return; // upcast on the way (pred.to(torch::kFloat) - target) or explicitly bf16
  std::string Message =
      "hand-written loss " + What.str() +
      " is computed in fp16: an error above 255.9 squares past 65504 to inf, a sum of "
      "terms passes 65504, and the value keeps 11 significant bits (a loss near 2 moves in "
      "steps of 0.002), so small improvements vanish and backward() starts from inf or NaN";
  std::string Fix = "compute the loss in fp32: upcast the operands first, e.g. "
                    "(pred.to(torch::kFloat) - target.to(torch::kFloat)).pow(2).mean(), or use "
                    "the built-in loss under autocast, which computes it in fp32";
  report(Ctx,
         Subject{E, knowledgeBase()->findById("mean"), "overflow",
                 kb::toString(kb::Severity::Warning), kb::toString(kb::Format::FP16)},
         Loc, Message, Fix, Why);
}

} // namespace clang::tidy::mpnanny
