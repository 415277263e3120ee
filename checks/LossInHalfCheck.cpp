//===--- LossInHalfCheck.cpp - mpnanny -------------------------------------===//
#include "LossInHalfCheck.h"

#include "utils/HalfData.h"
#include "llvm/ADT/StringSwitch.h"
#include <algorithm>

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
    else
      checkReducedTotal(*Call, Ctx);
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

/// True when the call asks for a sum reduction: `torch::kSum`, also inside options
/// (`NLLLossFuncOptions().reduction(torch::kSum)`), `at::Reduction::Sum`, or kl_div's
/// `torch::kBatchMean` (LibTorch sums, then divides by the batch size).
static bool requestsSumReduction(const TorchCall &Call) {
  bool Found = false;
  for (const Expr *Arg : Call.Args)
    visitDescendants(Arg, [&](const Stmt *S) {
      if (const auto *Ref = dyn_cast<DeclRefExpr>(S)) {
        const ValueDecl *D = Ref->getDecl();
        Found = D->getIdentifier() && (D->getName() == "kSum" || D->getName() == "kBatchMean" ||
                                       (isa<EnumConstantDecl>(D) && D->getName() == "Sum"));
      }
      return !Found;
    });
  return Found;
}

/// True when the call smooths its labels: `CrossEntropyFuncOptions().label_smoothing(0.1)`
/// with a nonzero (or non-constant) value.
static bool smoothsLabels(const TorchCall &Call, const ASTContext &Ctx) {
  bool Found = false;
  for (const Expr *Arg : Call.Args)
    visitDescendants(Arg, [&](const Stmt *S) {
      if (const auto *Member = dyn_cast<CXXMemberCallExpr>(S))
        if (const CXXMethodDecl *M = Member->getMethodDecl(); M && M->getIdentifier() &&
                                                              M->getName() == "label_smoothing" &&
                                                              Member->getNumArgs() == 1) {
          auto Value = evaluateNumber(Member->getArg(0), Ctx);
          Found = !Value || *Value != 0;
        }
      return !Found;
    });
  return Found;
}

// The kernels of the built-in losses sum in float (acc_type) but store the result in the
// input's type: a mean divides before rounding, a sum does not. The rules keep that overflow
// as a note (documentation); a call that asks for the sum, or for cross_entropy's label
// smoothing (a sum of log-probabilities over the classes), makes it a finding.
void LossInHalfCheck::checkReducedTotal(const CallExpr &Call, ASTContext &Ctx) {
  auto TC = classifyTorchCall(Call);
  if (!TC)
    return;
  const kb::Op *Op = lookupOp(*TC, *knowledgeBase());
  if (!Op || Op->Check != Owner || (!requestsSumReduction(*TC) && !smoothsLabels(*TC, Ctx)))
    return;
  const PrecisionContext &PC = precisionContext(Ctx);
  PrecisionReason Why = PC.at(Call);
  if (Why.Value == kb::Precision::FP32)
    return;
  std::optional<kb::Format> Format = PC.computeFormatOf(*TC, Op);
  if (!Format)
    return;
  for (const kb::Risk &R : Op->Risks) {
    if (R.Kind != kb::RiskKind::Overflow ||
        std::find(R.Formats.begin(), R.Formats.end(), *Format) == R.Formats.end())
      continue;
    std::string PrecisionName = kb::toString(*Format);
    std::string Spelled = TC->spelled();
    report(Ctx, Subject{&Call, Op, kb::RiskKind::Overflow, kb::Severity::Warning, PrecisionName},
           Call.getExprLoc(), expand(R.Message, Spelled, PrecisionName),
           expand(R.Fix, Spelled, PrecisionName), Why);
    return;
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
  bool Reduction = false, Sum = false, Arithmetic = false, Square = false, BuiltIn = false;
  visitDescendants(E, [&](const Stmt *S) {
    if (const auto *Sub = dyn_cast<Expr>(S); Sub && !Square && squareOf(Sub, Ctx))
      Square = true;
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
        Sum = Sum || TC->Name == "sum" || TC->Name == "nansum";
        Arithmetic = Arithmetic || isArithmetic(TC->Name);
      }
    return true;
  });
  if (!Reduction || !Arithmetic || BuiltIn)
    return;
  // A mean of unsquared terms ((p - y).abs().mean(), -(ratio * adv).mean()) is no hazard:
  // CUDA's mean accumulates and divides in float (ReduceMomentKernel.cu), and recent 2.x
  // releases cast Half and BFloat16 to float first in the CPU mean (ReduceOps.cpp, mean_out),
  // so only the loss value is rounded. (1.13's CPU mean stores the sum in half first, but
  // 1.13 cannot train in fp16 on the CPU.) What leaves fp16 is a square (an error above
  // 255.9) or a total stored by sum() (above 65504).
  if (!Square && !Sum)
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
  std::string Message = "hand-written loss " + What.str() + " is computed in fp16: ";
  if (Square)
    Message += "its errors are squared in fp16, and an error above 255.9 squares past 65504 "
               "to inf";
  if (Square && Sum)
    Message += ", and ";
  if (Sum)
    Message += "sum() stores its total in fp16 (it adds in float), which is inf above 65504";
  Message += "; backward() then starts from inf or NaN";
  std::string Fix = "compute the loss in fp32: upcast the operands first, e.g. "
                    "(pred.to(torch::kFloat) - target.to(torch::kFloat)).pow(2).mean(), or use "
                    "the built-in loss under autocast, which computes it in fp32";
  report(Ctx,
         Subject{E, knowledgeBase()->findById(Sum ? "sum" : "mean"), kb::RiskKind::Overflow,
                 kb::Severity::Warning, kb::toString(kb::Format::FP16)},
         Loc, Message, Fix, Why);
}

} // namespace clang::tidy::mpnanny
