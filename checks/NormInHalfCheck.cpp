//===--- NormInHalfCheck.cpp - mpnanny -------------------------------------===//
#include "NormInHalfCheck.h"

#include "utils/HalfData.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/Lex/Lexer.h"
#include <algorithm>

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void NormInHalfCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (!knowledgeBase())
    return;
  // mean for hand-written statistics; var and batch_norm through the knowledge base.
  Finder->addMatcher(knowledgeBaseCall().bind("call"), this);
  Finder->addMatcher(fieldDecl(unless(isExpansionInSystemHeader())).bind("field"), this);
  Finder->addMatcher(cxxMemberCallExpr(unless(isExpansionInSystemHeader()),
                                       callee(cxxMethodDecl(
                                           hasName("to"), ofClass(hasName("::torch::nn::Module")))))
                         .bind("to"),
                     this);
}

void NormInHalfCheck::onStartOfTranslationUnit() {
  MpnannyCheck::onStartOfTranslationUnit();
  Context = nullptr;
  NormMembers.clear();
}

static bool inTorchNn(const Decl &D) {
  const auto *NN = dyn_cast<NamespaceDecl>(D.getDeclContext());
  if (!NN || NN->getName() != "nn")
    return false;
  const auto *Torch = dyn_cast<NamespaceDecl>(NN->getDeclContext());
  return Torch && Torch->getName() == "torch";
}

/// The torch::nn module a member holds (`torch::nn::BatchNorm2d bn`,
/// `std::shared_ptr<torch::nn::BatchNorm2dImpl> bn`), by its holder name.
static std::optional<std::string> moduleHeldBy(QualType T) {
  const CXXRecordDecl *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  for (int Depth = 0; RD && RD->getIdentifier() && Depth < 3; ++Depth) {
    llvm::StringRef Name = RD->getName();
    if (Name.ends_with("Impl") && inTorchNn(*RD))
      return Name.drop_back(4).str();
    const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(RD);
    if (Spec && (Name == "ModuleHolder" || Name == "shared_ptr") &&
        Spec->getTemplateArgs().size() > 0 &&
        Spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type) {
      RD = Spec->getTemplateArgs()[0].getAsType()->getAsCXXRecordDecl();
      continue;
    }
    // TORCH_MODULE(BatchNorm2d): a class derived from ModuleHolder<BatchNorm2dImpl>.
    const CXXRecordDecl *Next = nullptr;
    if (RD->hasDefinition())
      for (const auto &Base : RD->bases())
        if (const auto *B = Base.getType()->getAsCXXRecordDecl();
            B && B->getIdentifier() && B->getName() == "ModuleHolder")
          Next = B;
    RD = Next;
  }
  return std::nullopt;
}

void NormInHalfCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  Context = &Ctx;
  if (const auto *Field = Result.Nodes.getNodeAs<FieldDecl>("field")) {
    if (auto Module = moduleHeldBy(Field->getType()))
      if (const kb::Op *Op = knowledgeBase()->findModule(*Module); Op && Op->Check == Owner)
        NormMembers.emplace_back(Field, Op);
    return;
  }
  if (const auto *To = Result.Nodes.getNodeAs<CXXMemberCallExpr>("to")) {
    checkConversion(*To, Ctx);
    return;
  }
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  auto TC = classifyTorchCall(*Call);
  if (!TC)
    return;
  if (TC->Name == "mean") {
    checkStatistic(*Call, Ctx);
    return;
  }
  // A norm module that is a member of a converted model is reported once, at the member.
  if (TC->Kind == Spelling::Module && isMemberOfConvertedModel(*TC, Ctx))
    return;
  if (auto Found = ownedRisk(*Call, Ctx))
    reportOwned(*Found, Ctx);
}

/// The member field a module call goes through: `bn(x)`, `bn->forward(x)`, `this->bn(x)`.
static const FieldDecl *calledMember(const TorchCall &Call) {
  const Expr *Object = nullptr;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Call.Call))
    Object = Op->getArg(0);
  else if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call.Call))
    Object = Member->getImplicitObjectArgument();
  const FieldDecl *Field = nullptr;
  visitDescendants(Object, [&](const Stmt *S) {
    if (const auto *ME = dyn_cast<MemberExpr>(S))
      Field = dyn_cast<FieldDecl>(ME->getMemberDecl());
    return !Field;
  });
  return Field;
}

bool NormInHalfCheck::isMemberOfConvertedModel(const TorchCall &Call, ASTContext &Ctx) const {
  const FieldDecl *Field = calledMember(Call);
  if (!Field)
    return false;
  auto F = precisionContext(Ctx).moduleConversion(dyn_cast<CXXRecordDecl>(Field->getParent()));
  return F && kb::isHalfFormat(*F);
}

static std::optional<kb::Format> conversionFormat(const CXXMemberCallExpr &To) {
  for (const Expr *Arg : To.arguments())
    if (auto F = dtypeNamedIn(Arg))
      return F;
  return std::nullopt;
}

void NormInHalfCheck::checkConversion(const CXXMemberCallExpr &To, ASTContext &Ctx) {
  const CXXRecordDecl *RD = objectRecordOf(To);
  auto Format = conversionFormat(To);
  if (!RD || !Format || !kb::isHalfFormat(*Format))
    return;
  // `bn->to(torch::kHalf)` on a norm module itself.
  if (!RD->getIdentifier() || !RD->getName().ends_with("Impl") || !inTorchNn(*RD))
    return;
  const kb::Op *Op = knowledgeBase()->findModule(RD->getName().drop_back(4).str());
  if (!Op || Op->Check != Owner)
    return;
  for (const kb::Risk &R : Op->Risks) {
    if (R.Level == kb::Severity::Note ||
        std::find(R.Formats.begin(), R.Formats.end(), *Format) == R.Formats.end())
      continue;
    std::string Spelled = "torch::nn::" + RD->getName().drop_back(4).str();
    PrecisionReason Why{*Format == kb::Format::FP16 ? kb::Precision::FP16 : kb::Precision::BF16,
                        SourceLocation(), ""};
    report(Ctx, Subject{&To, Op, R.Kind, R.Level, kb::toString(*Format)}, To.getExprLoc(),
           expand(R.Message, Spelled, kb::toString(*Format)),
           expand(R.Fix, Spelled, kb::toString(*Format)), Why);
    return;
  }
}

void NormInHalfCheck::onEndOfTranslationUnit() {
  if (!Context)
    return;
  const PrecisionContext &PC = precisionContext(*Context);
  for (const auto &[Field, Op] : NormMembers) {
    const auto *Model = dyn_cast<CXXRecordDecl>(Field->getParent());
    if (!Model)
      continue;
    auto Format = PC.moduleConversion(Model);
    if (!Format || !kb::isHalfFormat(*Format))
      continue;
    for (const kb::Risk &R : Op->Risks) {
      if (R.Level == kb::Severity::Note ||
          std::find(R.Formats.begin(), R.Formats.end(), *Format) == R.Formats.end())
        continue;
      auto Module = moduleHeldBy(Field->getType());
      std::string Spelled = "torch::nn::" + Module.value_or("BatchNorm");
      // Where the model is converted: in this file, or another one of the project.
      PrecisionReason Why = PC.moduleConversionReason(Model).value_or(
          PrecisionReason{*Format == kb::Format::FP16 ? kb::Precision::FP16 : kb::Precision::BF16,
                          SourceLocation(), ""});
      std::string Message = "member '" + Field->getNameAsString() +
                            "': " + expand(R.Message, Spelled, kb::toString(*Format));
      report(*Context,
             Subject{Field->getInClassInitializer(), Op, R.Kind, R.Level, kb::toString(*Format)},
             Field->getLocation(), Message, expand(R.Fix, Spelled, kb::toString(*Format)), Why);
      break;
    }
  }
  NormMembers.clear();
  Context = nullptr;
}

static std::string shortText(const Expr *E, const ASTContext &Ctx) {
  llvm::StringRef Text = Lexer::getSourceText(CharSourceRange::getTokenRange(E->getSourceRange()),
                                              Ctx.getSourceManager(), Ctx.getLangOpts());
  std::string Out;
  for (char C : Text)
    if (C != '\n' && C != '\r' && !(C == ' ' && !Out.empty() && Out.back() == ' '))
      Out += C;
  if (Out.size() > 40)
    Out = Out.substr(0, 37) + "...";
  return Out;
}

void NormInHalfCheck::checkStatistic(const CallExpr &Mean, ASTContext &Ctx) {
  auto TC = classifyTorchCall(Mean);
  if (!TC || !TC->Self)
    return;
  auto Sq = squareOf(TC->Self, Ctx);
  if (!Sq || isIntegralData(Sq->Operand))
    return;
  const PrecisionContext &PC = precisionContext(Ctx);
  PrecisionReason Why = PC.at(Mean);
  if (Why.Value == kb::Precision::FP32)
    return;
  // A squared error averaged into a loss is mpnanny-loss-in-half's finding.
  if (feedsLoss(Mean, Ctx))
    return;
  std::optional<kb::Format> Format;
  bool Autocast =
      Why.Value == kb::Precision::AutocastFP16 || Why.Value == kb::Precision::AutocastBF16;
  if (Sq->Call) {
    // pow and square: autocast runs them in fp32; elsewhere the input's type decides.
    Format = PC.computeFormatOf(*Sq->Call, lookupOp(*Sq->Call, *knowledgeBase()));
  } else {
    // x * x is not covered by autocast: it is half where x is.
    Format = PC.knownFormat(Sq->Operand);
    if (!Format && !Autocast)
      Format = Why.Value == kb::Precision::FP16 ? kb::Format::FP16 : kb::Format::BF16;
  }
  // bf16 holds every square fp32 holds; its 8-bit rounding of a variance (0.4 %) is
  // within what normalization tolerates, so only fp16 is reported.
  if (Format != kb::Format::FP16)
    return;
  std::string SquareText = shortText(Sq->Node, Ctx);
  std::string Message =
      "hand-written normalization statistic in fp16: '" + SquareText +
      "' is squared in fp16 before " + TC->spelled() +
      " averages it, and a square overflows 65504 once |x| > 255.9 (T5 hidden states reach "
      "66246), so the variance is inf and x * rsqrt(var + eps) is 0 or NaN";
  std::string Fix = "upcast before squaring: x.to(torch::kFloat).pow(2).mean(-1, true), and cast "
                    "the normalized result back with .to(x.scalar_type()); a dtype on mean() "
                    "comes too late, the square is already inf";
  report(Ctx,
         Subject{&Mean, knowledgeBase()->findById("mean"), kb::RiskKind::Overflow,
                 kb::Severity::Warning, kb::toString(kb::Format::FP16)},
         Mean.getExprLoc(), Message, Fix, Why);
}

} // namespace clang::tidy::mpnanny
