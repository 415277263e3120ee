//===--- GradScalerConfigCheck.cpp - mpnanny -------------------------------===//
#include "GradScalerConfigCheck.h"

#include "utils/TorchCalls.h"
#include "utils/TrainingStep.h"
#include "llvm/ADT/StringExtras.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

namespace {
enum class Setting { InitScale, GrowthFactor, BackoffFactor, GrowthInterval };

/// The scaler setting a name stands for: init_scale, kGrowthFactor, backoff_factor_...
std::optional<Setting> settingNamed(llvm::StringRef Name) {
  std::string Key;
  for (char C : Name)
    if (llvm::isAlnum(C))
      Key += llvm::toLower(C);
  llvm::StringRef K(Key);
  if (K.contains("initscale") || K.contains("initialscale") || K.contains("initlossscale"))
    return Setting::InitScale;
  if (K.contains("growthfactor"))
    return Setting::GrowthFactor;
  if (K.contains("backofffactor"))
    return Setting::BackoffFactor;
  if (K.contains("growthinterval"))
    return Setting::GrowthInterval;
  return std::nullopt;
}

const char *const ScalerName = "[Ss][Cc][Aa][Ll][Ee][Rr]";
const char *const Defaults = "use PyTorch's GradScaler defaults: init_scale 65536, growth_factor "
                             "2.0, backoff_factor 0.5, growth_interval 2000";

/// A number, also through a variable's or a member's initializer.
std::optional<double> valueOf(const Expr *E, ASTContext &Ctx) {
  if (auto V = evaluateNumber(E, Ctx))
    return V;
  E = ignoreConversions(E);
  if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E))
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl()); Var && Var->getInit())
      return evaluateNumber(Var->getInit(), Ctx);
  if (const auto *Member = dyn_cast_or_null<MemberExpr>(E))
    if (const auto *Field = dyn_cast<FieldDecl>(Member->getMemberDecl());
        Field && Field->hasInClassInitializer() && Field->getInClassInitializer())
      return evaluateNumber(Field->getInClassInitializer(), Ctx);
  return std::nullopt;
}
} // namespace

void GradScalerConfigCheck::onStartOfTranslationUnit() {
  MpnannyCheck::onStartOfTranslationUnit();
  MixedPrecisionTU.reset();
}

bool GradScalerConfigCheck::mixedPrecision(ASTContext &Ctx) {
  if (!MixedPrecisionTU)
    MixedPrecisionTU = translationUnitUsesMixedPrecision(Ctx, precisionContext(Ctx));
  return *MixedPrecisionTU;
}

void GradScalerConfigCheck::registerCheckMatchers(MatchFinder *Finder) {
  auto User = unless(isExpansionInSystemHeader());
  auto Scaler = cxxRecordDecl(matchesName(ScalerName));
  Finder->addMatcher(
      cxxConstructExpr(User, hasDeclaration(cxxConstructorDecl(ofClass(Scaler)))).bind("construct"),
      this);
  Finder->addMatcher(initListExpr(User).bind("init"), this);
  Finder->addMatcher(
      cxxMemberCallExpr(User, argumentCountIs(1), callee(cxxMethodDecl(ofClass(Scaler))))
          .bind("setter"),
      this);
  Finder->addMatcher(varDecl(User).bind("var"), this);
  Finder->addMatcher(fieldDecl(User, hasInClassInitializer(expr())).bind("field"), this);
  Finder->addMatcher(binaryOperator(User, isAssignmentOperator()).bind("assign"), this);
  Finder->addMatcher(
      cxxOperatorCallExpr(User, hasAnyOverloadedOperatorName("*", "*=")).bind("product"), this);
  Finder->addMatcher(
      cxxMemberCallExpr(User, callee(cxxMethodDecl(hasAnyName("mul", "mul_")))).bind("mul"), this);
  Finder->addMatcher(
      cxxMemberCallExpr(User, callee(cxxMethodDecl(hasAnyName("unscale_", "step"),
                                                   ofClass(hasName("::mpnanny::GradScaler")))))
          .bind("unscale"),
      this);
}

void GradScalerConfigCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  const auto &N = Result.Nodes;
  if (const auto *Construct = N.getNodeAs<CXXConstructExpr>("construct")) {
    const CXXConstructorDecl *Ctor = Construct->getConstructor();
    for (unsigned I = 0; I < Construct->getNumArgs() && I < Ctor->getNumParams(); ++I) {
      const Expr *Arg = Construct->getArg(I);
      // Named values are reported where they are defined.
      if (isa<CXXDefaultArgExpr>(Arg) || isa<DeclRefExpr>(ignoreConversions(Arg)))
        continue;
      if (const IdentifierInfo *Id = Ctor->getParamDecl(I)->getIdentifier())
        checkSetting(Id->getName(), Arg, *Construct, Ctx);
    }
  } else if (const auto *Init = N.getNodeAs<InitListExpr>("init")) {
    const InitListExpr *Semantic = Init->isSemanticForm() ? Init : Init->getSemanticForm();
    const auto *RD = Semantic ? Semantic->getType()->getAsCXXRecordDecl() : nullptr;
    if (!RD || !isScalerRecord(RD) || !RD->isAggregate() || Semantic != Init)
      return;
    unsigned I = 0;
    for (const FieldDecl *Field : RD->fields()) {
      if (I >= Semantic->getNumInits())
        break;
      const Expr *Value = Semantic->getInit(I++);
      if (Field->getIdentifier() && !isa<ImplicitValueInitExpr>(Value) &&
          !isa<CXXDefaultInitExpr>(Value) && !isa<DeclRefExpr>(ignoreConversions(Value)))
        checkSetting(Field->getName(), Value, *Semantic, Ctx);
    }
  } else if (const auto *Setter = N.getNodeAs<CXXMemberCallExpr>("setter")) {
    const CXXMethodDecl *M = Setter->getMethodDecl();
    if (M && M->getIdentifier() && !isa<DeclRefExpr>(ignoreConversions(Setter->getArg(0))))
      checkSetting(M->getName(), Setter->getArg(0), *Setter, Ctx);
  } else if (const auto *Var = N.getNodeAs<VarDecl>("var")) {
    const Expr *Value = nullptr;
    if (const auto *Parm = dyn_cast<ParmVarDecl>(Var)) {
      if (Parm->hasDefaultArg() && !Parm->hasUnparsedDefaultArg() &&
          !Parm->hasUninstantiatedDefaultArg())
        Value = Parm->getDefaultArg();
    } else {
      Value = Var->getInit();
    }
    if (Value && Var->getIdentifier())
      checkSetting(Var->getName(), Value, *Value, Ctx);
  } else if (const auto *Field = N.getNodeAs<FieldDecl>("field")) {
    if (Field->getIdentifier() && Field->getInClassInitializer())
      checkSetting(Field->getName(), Field->getInClassInitializer(),
                   *Field->getInClassInitializer(), Ctx);
  } else if (const auto *Assign = N.getNodeAs<BinaryOperator>("assign")) {
    const Expr *Lhs = Assign->getLHS()->IgnoreParenImpCasts();
    const NamedDecl *Target = nullptr;
    if (const auto *Ref = dyn_cast<DeclRefExpr>(Lhs))
      Target = Ref->getDecl();
    else if (const auto *Member = dyn_cast<MemberExpr>(Lhs))
      Target = Member->getMemberDecl();
    if (Target && Target->getIdentifier() && !isa<DeclRefExpr>(ignoreConversions(Assign->getRHS())))
      checkSetting(Target->getName(), Assign->getRHS(), *Assign, Ctx);
  } else if (const auto *Product = N.getNodeAs<CXXOperatorCallExpr>("product")) {
    if (Product->getNumArgs() != 2)
      return;
    for (unsigned I = 0; I < 2; ++I)
      if (isTensorType(Product->getArg(I)->getType()) &&
          !isTensorType(ignoreConversions(Product->getArg(1 - I))->getType()))
        checkStaticScale(*Product, Product->getArg(I), Product->getArg(1 - I), Ctx);
  } else if (const auto *Mul = N.getNodeAs<CXXMemberCallExpr>("mul")) {
    auto TC = classifyTorchCall(*Mul);
    if (TC && TC->Kind == Spelling::Method && TC->Self && TC->Args.size() == 1 &&
        !isTensorType(ignoreConversions(TC->Args[0])->getType()))
      checkStaticScale(*Mul, TC->Self, TC->Args[0], Ctx);
  } else if (const auto *Unscale = N.getNodeAs<CXXMemberCallExpr>("unscale")) {
    checkUnscale(*Unscale, Ctx);
  }
}

void GradScalerConfigCheck::checkSetting(llvm::StringRef Name, const Expr *Value, const Stmt &At,
                                         ASTContext &Ctx) {
  auto Which = settingNamed(Name);
  if (!Which || !Value)
    return;
  auto V = evaluateNumber(Value, Ctx);
  if (!V || !mixedPrecision(Ctx))
    return;
  std::string Message;
  std::string Num = formatNumber(*V);
  switch (*Which) {
  case Setting::InitScale:
    if (*V > 16777216.0)
      Message = "loss scaler init scale " + Num +
                " is above 2^24 (16777216): every scaled fp16 gradient above " +
                formatNumber(limitsOf(kb::Format::FP16).Max / *V) +
                " overflows 65504, so the first steps are skipped while the scale backs off";
    else if (*V < 1)
      Message = "loss scaler init scale " + Num +
                " is below 1: it shrinks gradients toward fp16's smallest subnormal (5.96e-8) "
                "instead of lifting them above it";
    break;
  case Setting::GrowthFactor:
    if (*V <= 1)
      Message = "loss scaler growth factor " + Num +
                " is not above 1: after a backoff the scale never grows back, so gradients "
                "below 2.98e-8 / scale stay flushed to 0 in fp16";
    break;
  case Setting::BackoffFactor:
    if (*V >= 1)
      Message = "loss scaler backoff factor " + Num +
                " is not below 1: after an overflow the scale never shrinks, so gradients stay "
                "inf (above 65504 in fp16) and every later step is skipped";
    else if (*V <= 0)
      Message = "loss scaler backoff factor " + Num +
                " is not above 0: the first overflow makes the scale 0 or negative, and every "
                "gradient 0 or NaN after unscaling";
    break;
  case Setting::GrowthInterval:
    if (*V < 100)
      Message = "loss scaler growth interval " + Num +
                " is below 100 steps: the scale grows back within " + Num +
                " steps of each overflow, so about one step in " + Num +
                " overflows fp16's 65504 and is skipped (PyTorch's default is 2000)";
    break;
  }
  if (Message.empty())
    return;
  PrecisionReason Why = precisionContext(Ctx).at(At);
  if (Why.Value == kb::Precision::FP32)
    Why = {};
  Subject About{&At, nullptr,
                *Which == Setting::GrowthInterval ? kb::RiskKind::PrecisionLoss
                                                  : kb::RiskKind::Overflow,
                kb::Severity::Warning, kb::toString(kb::Format::FP16)};
  if (*Which == Setting::InitScale && *V < 1)
    About.Risk = kb::RiskKind::Underflow;
  report(Ctx, About, Value->getBeginLoc(), Message, Defaults, Why);
}

void GradScalerConfigCheck::checkStaticScale(const Expr &Product, const Expr *Tensor,
                                             const Expr *Factor, ASTContext &Ctx) {
  auto V = valueOf(Factor, Ctx);
  if (!V || *V <= limitsOf(kb::Format::FP16).Max)
    return;
  const PrecisionContext &Context = precisionContext(Ctx);
  PrecisionReason Why = Context.at(Product);
  std::optional<kb::Format> Known = Context.knownFormat(Tensor);
  bool Half = Known ? *Known == kb::Format::FP16 : Why.Value == kb::Precision::FP16;
  if (!Half)
    return;
  if (!isLossScaling(Product, Tensor, Factor, Ctx))
    return;
  if (Known == kb::Format::FP16 && Why.Value != kb::Precision::FP16)
    Why = {kb::Precision::FP16, Tensor->getBeginLoc(), "this tensor is fp16"};
  Subject About{&Product, nullptr, kb::RiskKind::Overflow, kb::Severity::Warning,
                kb::toString(kb::Format::FP16)};
  report(Ctx, About, Factor->getBeginLoc(),
         "static loss scale " + formatNumber(*V) +
             " multiplied into an fp16 loss is above fp16's largest finite value 65504: the "
             "scaled loss is inf for any loss of magnitude 1 or more, and every gradient NaN",
         "multiply in fp32 (loss.to(torch::kFloat) * scale) with a scale of at most 65536, or "
         "use a dynamic scaler (mpnanny::GradScaler) that backs off on overflow",
         Why);
}

void GradScalerConfigCheck::checkUnscale(const CXXMemberCallExpr &Call, ASTContext &Ctx) {
  if (Call.getNumArgs() < 1)
    return;
  const PrecisionContext &Context = precisionContext(Ctx);
  const FunctionDecl *F = Context.enclosingFunction(Call);
  if (!F || !F->getBody())
    return;
  llvm::StringRef Method = Call.getMethodDecl()->getName();
  if (Method == "step") {
    // step() unscales only when unscale_() has not: report the first of the two.
    bool UnscaledBefore = false;
    const SourceManager &SM = Ctx.getSourceManager();
    forEachStatement(*F, [&](const Stmt &S) {
      if (const auto *C = dyn_cast<CallExpr>(&S); C && orderOf(S, SM) < orderOf(Call, SM))
        UnscaledBefore |= scalerMethod(*C) == std::optional<std::string>("unscale_");
    });
    if (UnscaledBefore)
      return;
  }
  const Expr *Params = optimizerParameters(Call.getArg(0));
  if (!Params)
    return;
  auto Format = parameterFormat(Params, *F, Context, Ctx);
  if (!Format || Format->Value != kb::Format::FP16)
    return;
  Subject About{&Call, nullptr, kb::RiskKind::Banned, kb::Severity::Error,
                kb::toString(kb::Format::FP16)};
  PrecisionReason Why{kb::Precision::FP16, Format->Where, Format->Why};
  report(Ctx, About, Call.getExprLoc(),
         "mpnanny::GradScaler::" + Method.str() +
             " unscales the gradients of fp16 parameters: PyTorch's scaler refuses "
             "('Attempting to unscale FP16 gradients', pytorch#74739), since unscaled fp16 "
             "gradients flush to 0 below 2.98e-8 and the update is lost in the fp16 weights",
         "keep the model in fp32 and run the forward under autocast "
         "(at::autocast::set_enabled(true)), or give the optimizer fp32 master copies of the "
         "parameters",
         Why);
}

} // namespace clang::tidy::mpnanny
