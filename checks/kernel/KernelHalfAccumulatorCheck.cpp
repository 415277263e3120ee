//===--- KernelHalfAccumulatorCheck.cpp - mpnanny --------------------------===//
#include "KernelHalfAccumulatorCheck.h"

#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/Lex/Lexer.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

using namespace kernel;

namespace {
/// Loops of at most this many iterations add a few bounded terms (bilinear weights: 4).
constexpr uint64_t MaxSmallTripCount = 8;

bool refersTo(const Expr *E, const VarDecl &Var) {
  const auto *Ref = dyn_cast_or_null<DeclRefExpr>(throughConversions(E));
  return Ref && Ref->getDecl() == &Var;
}

/// `a + b` or `a - b`, built in or overloaded: its two operands.
std::optional<std::pair<const Expr *, const Expr *>> additionOperands(const Expr *E) {
  if (const auto *Op = dyn_cast<BinaryOperator>(E))
    if (Op->getOpcode() == BO_Add || Op->getOpcode() == BO_Sub)
      return std::make_pair(Op->getLHS(), Op->getRHS());
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E))
    if ((Op->getOperator() == OO_Plus || Op->getOperator() == OO_Minus) && Op->getNumArgs() == 2)
      return std::make_pair(Op->getArg(0), Op->getArg(1));
  return std::nullopt;
}
} // namespace

void KernelHalfAccumulatorCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (!knowledgeBase())
    return;
  const auto Accumulator =
      ignoringParenImpCasts(declRefExpr(to(varDecl(hasLocalStorage()).bind("accumulator"))));
  const auto BuiltinUpdate =
      binaryOperator(hasAnyOperatorName("+=", "-=", "="), hasLHS(Accumulator),
                     unless(isExpansionInSystemHeader()));
  const auto OverloadedUpdate =
      cxxOperatorCallExpr(hasAnyOverloadedOperatorName("+=", "-=", "="),
                          hasArgument(0, Accumulator), unless(isExpansionInSystemHeader()));
  Finder->addMatcher(BuiltinUpdate.bind("update"), this);
  Finder->addMatcher(OverloadedUpdate.bind("update"), this);
  // cublasHgemm, cublasGemmEx with an fp16 compute type: the rules name them.
  Finder->addMatcher(
      callExpr(unless(cxxOperatorCallExpr()), unless(isExpansionInSystemHeader())).bind("call"),
      this);
}

void KernelHalfAccumulatorCheck::check(const MatchFinder::MatchResult &Result) {
  if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call"))
    return checkGemm(*Call, *Result.Context);
  const auto *Update = Result.Nodes.getNodeAs<Expr>("update");
  const auto *Accumulator = Result.Nodes.getNodeAs<VarDecl>("accumulator");
  if (Update && Accumulator)
    checkUpdate(*Update, *Accumulator, *Result.Context);
}

/// The accumulator's declared type, rewritten to accumulate in float: `scalar_t` (a parameter
/// or an alias bound to a half type) becomes `at::acc_type<scalar_t, true>`, a concrete scalar
/// half type `float`. Only for a declaration of one variable whose type is spelled in the file.
static std::optional<FixItHint> floatAccumulator(const VarDecl &Var, ASTContext &Ctx) {
  const TypeSourceInfo *Written = Var.getTypeSourceInfo();
  if (!Written)
    return std::nullopt;
  auto Parents = Ctx.getParents(Var);
  const auto *Statement = Parents.empty() ? nullptr : Parents[0].get<DeclStmt>();
  if (!Statement || !Statement->isSingleDecl())
    return std::nullopt;
  const SourceManager &SM = Ctx.getSourceManager();
  TypeLoc Spelled = Written->getTypeLoc().getUnqualifiedLoc();
  SourceLocation Begin = Spelled.getBeginLoc(), End = Spelled.getEndLoc();
  if (Begin.isMacroID() || End.isMacroID()) {
    // Written in a dispatch macro's lambda argument: the text is the user's.
    if (!SM.isMacroArgExpansion(Begin) || !SM.isMacroArgExpansion(End))
      return std::nullopt;
    Begin = SM.getSpellingLoc(Begin);
    End = SM.getSpellingLoc(End);
  }
  CharSourceRange Range = CharSourceRange::getTokenRange(Begin, End);
  llvm::StringRef Text = Lexer::getSourceText(Range, SM, Ctx.getLangOpts());
  if (Text.empty() || Text == "auto" || Text.contains(' '))
    return std::nullopt;
  const Type *Sugar = Written->getType().getTypePtr();
  if (const auto *Elaborated = dyn_cast<ElaboratedType>(Sugar))
    Sugar = Elaborated->getNamedType().getTypePtr();
  if (isa<TypedefType, SubstTemplateTypeParmType, TemplateTypeParmType>(Sugar))
    return FixItHint::CreateReplacement(Range, ("at::acc_type<" + Text + ", true>").str());
  // __half2 and __nv_bfloat162 hold two values: float is not their accumulator.
  if (Text.ends_with("2"))
    return std::nullopt;
  return FixItHint::CreateReplacement(Range, "float");
}

void KernelHalfAccumulatorCheck::checkUpdate(const Expr &Update, const VarDecl &Accumulator,
                                             ASTContext &Ctx) {
  if (!Accumulator.isLocalVarDecl())
    return;
  std::optional<kb::Format> Format = halfFormat(Accumulator.getType());
  if (!Format)
    return;
  // What the update does: `sum += x`, `sum = sum + x`, or `sum = __hfma(a, b, sum)`.
  bool Compound = false;
  const Expr *Value = nullptr;
  if (const auto *Op = dyn_cast<BinaryOperator>(&Update)) {
    Compound = Op->isCompoundAssignmentOp();
    Value = Op->getRHS();
  } else if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(&Update)) {
    Compound = Op->getOperator() != OO_Equal;
    Value = Op->getNumArgs() == 2 ? Op->getArg(1) : nullptr;
  }
  if (!Value)
    return;
  bool ByIntrinsic = false;
  if (!Compound) {
    const Expr *Sum = throughConversions(Value);
    auto Operands = additionOperands(Sum);
    if (Operands &&
        (refersTo(Operands->first, Accumulator) || refersTo(Operands->second, Accumulator))) {
      // sum = sum + x
    } else if (const auto *Call = dyn_cast<CallExpr>(Sum); Call && rule(*Call, "accumulate")) {
      ByIntrinsic = llvm::any_of(Call->arguments(),
                                 [&](const Expr *Arg) { return refersTo(Arg, Accumulator); });
      if (!ByIntrinsic)
        return;
    } else {
      return;
    }
  }
  // A running sum: the loop repeats the update while the accumulator keeps its value.
  std::vector<const Stmt *> Loops = loopsRepeating(Update, Accumulator, Ctx);
  if (Loops.empty())
    return;
  uint64_t Trips = 1;
  bool Small = true;
  for (const Stmt *Loop : Loops) {
    std::optional<uint64_t> Count = constantTripCount(*Loop, Ctx);
    if (!Count || (Trips *= *Count) > MaxSmallTripCount) {
      Small = false;
      break;
    }
  }
  if (Small)
    return;
  const char *Name = kb::toString(*Format);
  const std::string Limit = std::to_string(lastExactInteger(*Format));
  reportOnce(Ctx, Update, Accumulator.getLocation(), *Format, kb::RiskKind::PrecisionLoss,
             Accumulator.getType(),
             "'" + Accumulator.getName().str() + "' accumulates in " + Name +
                 " across a loop: the running sum stops growing at " + Limit + "x its addend",
             "accumulate in float: declare it at::acc_type<scalar_t, true> (at::opmath_type, or "
             "float for a concrete half type) and convert once after the loop",
             ByIntrinsic ? std::nullopt : floatAccumulator(Accumulator, Ctx));
}

void KernelHalfAccumulatorCheck::checkGemm(const CallExpr &Call, ASTContext &Ctx) {
  const FunctionDecl *Callee = Call.getDirectCallee();
  if (!Callee || !Callee->getIdentifier())
    return;
  PrecisionReason Why;
  Why.Value = kb::Precision::FP16;
  const std::string Name = Callee->getName().str();
  if (rule(Call, "half-gemm")) {
    reportOnce(Ctx, Call, Call.getBeginLoc(), kb::Format::FP16, kb::RiskKind::PrecisionLoss, Why,
               Name + " accumulates its dot products in fp16: a sum over K stops growing at "
                      "2048x its addend",
               "call cublasGemmEx with CUBLAS_COMPUTE_32F: fp16 inputs and outputs, fp32 "
               "accumulation");
    return;
  }
  const kb::KernelName *Gemm = rule(Call, "gemm-compute-type");
  if (!Gemm || !Gemm->Arg || *Gemm->Arg >= Call.getNumArgs())
    return;
  const Expr *ComputeType = throughConversions(Call.getArg(*Gemm->Arg));
  const auto *Ref = dyn_cast_or_null<DeclRefExpr>(ComputeType);
  if (!Ref || !Ref->getDecl()->getIdentifier())
    return;
  const kb::KernelName *Half =
      knowledgeBase()->findKernelName("half-compute-type", Ref->getDecl()->getName().str());
  if (!Half || !Half->In)
    return;
  reportOnce(Ctx, Call, ComputeType->getBeginLoc(), *Half->In, kb::RiskKind::PrecisionLoss, Why,
             Name + " with compute type " + Ref->getDecl()->getName().str() +
                 " accumulates its dot products in " + kb::toString(*Half->In),
             "pass CUBLAS_COMPUTE_32F (CUDA_R_32F before CUDA 11) as the compute type");
}

} // namespace clang::tidy::mpnanny
