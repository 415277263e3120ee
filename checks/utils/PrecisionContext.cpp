//===--- PrecisionContext.cpp - mpnanny ------------------------------------===//
#include "PrecisionContext.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include <algorithm>

namespace clang::tidy::mpnanny {

using kb::Format;
using kb::Precision;

namespace {

struct Toggle {
  unsigned Offset;
  bool On;
  Format Dtype;
  SourceLocation Where;
};

struct CallEdge {
  unsigned Offset;
  const FunctionDecl *Callee;
  SourceLocation Where;
};

/// A user guard object: its constructor turns autocast on until the scope ends.
struct GuardScope {
  unsigned Offset;
  unsigned ScopeEnd;
  const CXXConstructorDecl *Ctor;
  SourceLocation Where;
};

int riskRank(Precision P) {
  switch (P) {
  case Precision::FP32: return 0;
  case Precision::AutocastBF16: return 1;
  case Precision::AutocastFP16: return 2;
  case Precision::BF16: return 3;
  case Precision::FP16: return 4;
  }
  return 0;
}

Precision plainPrecision(Format F) {
  return F == Format::FP16   ? Precision::FP16
         : F == Format::BF16 ? Precision::BF16
                             : Precision::FP32;
}
Precision autocastPrecision(Format F) {
  return F == Format::BF16 ? Precision::AutocastBF16 : Precision::AutocastFP16;
}

bool inNamespace(const Decl &D, llvm::StringRef Outer, llvm::StringRef Inner) {
  const auto *NS = dyn_cast<NamespaceDecl>(D.getDeclContext());
  if (!NS || NS->getName() != Inner)
    return false;
  const auto *Parent = dyn_cast<NamespaceDecl>(NS->getDeclContext());
  return Parent && Parent->getName() == Outer;
}

bool isNnModuleRecord(const CXXRecordDecl *RD) {
  return RD && RD->getIdentifier() && RD->getName() == "Module" && inNamespace(*RD, "torch", "nn");
}

} // namespace

struct PrecisionContext::FunctionFacts {
  const FunctionDecl *Decl = nullptr;
  FileID File;
  unsigned Begin = 0, End = 0;
  std::optional<std::pair<Format, SourceLocation>> Marker;
  std::vector<Toggle> Toggles;
  std::vector<CallEdge> Calls;
  std::vector<GuardScope> Guards;
  PrecisionReason Inherited;
  /// Autocast state a call of this function leaves behind (a guard's constructor,
  /// an `enable_amp()` helper).
  std::optional<Toggle> NetToggle;
};

namespace {

/// Walks the user code of a translation unit, never entering system headers
/// (LibTorch and the standard library are included with -isystem).
class UserFunctionCollector : public RecursiveASTVisitor<UserFunctionCollector> {
public:
  explicit UserFunctionCollector(const SourceManager &SM) : SM(SM) {}
  bool TraverseDecl(Decl *D) {
    if (D && !isa<TranslationUnitDecl>(D) && D->getLocation().isValid() &&
        SM.isInSystemHeader(D->getLocation()))
      return true;
    return RecursiveASTVisitor::TraverseDecl(D);
  }
  bool VisitFunctionDecl(FunctionDecl *FD) {
    if (!FD->doesThisDeclarationHaveABody() || !FD->getBody())
      return true;
    if (const auto *M = dyn_cast<CXXMethodDecl>(FD))
      if (M->getParent()->isLambda())
        return true; // part of the function that holds the lambda
    Found.push_back(FD);
    return true;
  }
  bool VisitCXXRecordDecl(CXXRecordDecl *RD) {
    if (RD->isThisDeclarationADefinition() && !RD->isLambda())
      Records.push_back(RD);
    return true;
  }
  std::vector<const FunctionDecl *> Found;
  std::vector<const CXXRecordDecl *> Records;

private:
  const SourceManager &SM;
};

} // namespace

PrecisionContext::PrecisionContext(ASTContext &Ctx, std::optional<Precision> Forced)
    : Ctx(Ctx), Forced(Forced) {
  // Collected even when the precision is forced: the functions name the findings' sites, and
  // a forced scan exported every site with an empty function (and other ids than a plain scan).
  collect();
  if (!Forced)
    propagate();
}

PrecisionContext::~PrecisionContext() = default;

namespace {
struct CacheEntry {
  ASTContext *Ctx = nullptr;
  std::optional<Precision> Forced;
  std::unique_ptr<PrecisionContext> Analysis;
};
thread_local std::vector<CacheEntry> Cache;
} // namespace

const PrecisionContext &PrecisionContext::get(ASTContext &Ctx, std::optional<Precision> Forced) {
  for (auto &E : Cache)
    if (E.Ctx == &Ctx && E.Forced == Forced)
      return *E.Analysis;
  Cache.push_back({&Ctx, Forced, std::make_unique<PrecisionContext>(Ctx, Forced)});
  return *Cache.back().Analysis;
}

void PrecisionContext::reset() { Cache.clear(); }

void PrecisionContext::collect() {
  const SourceManager &SM = Ctx.getSourceManager();
  UserFunctionCollector Collector(SM);
  Collector.TraverseDecl(Ctx.getTranslationUnitDecl());

  auto OffsetOf = [&](SourceLocation L) { return SM.getFileOffset(SM.getExpansionLoc(L)); };

  // The autocast dtypes are process state: a setter anywhere in the TU applies.
  Format GpuDtype = Format::FP16, CpuDtype = Format::BF16;
  struct PendingToggle {
    FunctionFacts *F;
    unsigned Offset;
    bool On;
    bool Cpu;
    SourceLocation Where;
  };
  std::vector<PendingToggle> Pending;

  for (const FunctionDecl *FD : Collector.Found) {
    auto Facts = std::make_unique<FunctionFacts>();
    Facts->Decl = FD;
    SourceRange R = FD->getSourceRange();
    SourceLocation B = SM.getExpansionLoc(R.getBegin()), E = SM.getExpansionLoc(R.getEnd());
    Facts->File = SM.getFileID(B);
    if (SM.getFileID(E) != Facts->File)
      continue;
    Facts->Begin = SM.getFileOffset(B);
    Facts->End = SM.getFileOffset(E);
    FunctionFacts &F = *Facts;

    // An explicit stack rather than recursion: generated code nests expressions thousands
    // deep (a sum of 10k terms), deeper than a thread's stack. Pre-order, children in order.
    std::vector<std::pair<const Stmt *, unsigned>> Work = {{FD->getBody(), Facts->End}};
    while (!Work.empty()) {
      const Stmt *S = Work.back().first;
      unsigned ScopeEnd = Work.back().second;
      Work.pop_back();
      if (!S)
        continue;
      if (const auto *CS = dyn_cast<CompoundStmt>(S))
        ScopeEnd = OffsetOf(CS->getRBracLoc());
      // Comparisons test a dtype; they do not convert to it.
      if (const auto *BO = dyn_cast<BinaryOperator>(S); BO && BO->isEqualityOp())
        continue;
      if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(S);
          OC && (OC->getOperator() == OO_EqualEqual || OC->getOperator() == OO_ExclaimEqual))
        continue;
      if (const auto *Call = dyn_cast<CallExpr>(S)) {
        const FunctionDecl *Callee = Call->getDirectCallee();
        if (Callee && Callee->getIdentifier() && inNamespace(*Callee, "at", "autocast")) {
          llvm::StringRef N = Callee->getName();
          auto ArgBool = [&](unsigned I) {
            if (I >= Call->getNumArgs())
              return true;
            auto V = evaluateNumber(Call->getArg(I), Ctx);
            return !V || *V != 0;
          };
          auto ArgIsCpu = [&](unsigned I) {
            if (I >= Call->getNumArgs())
              return false;
            bool Cpu = false;
            visitDescendants(Call->getArg(I), [&](const Stmt *X) {
              if (const auto *Ref = dyn_cast<DeclRefExpr>(X))
                if (Ref->getDecl()->getIdentifier() &&
                    Ref->getDecl()->getName().contains_insensitive("cpu"))
                  Cpu = true;
              return !Cpu;
            });
            return Cpu;
          };
          SourceLocation Where = SM.getExpansionLoc(Call->getBeginLoc());
          if (N == "set_enabled")
            Pending.push_back({&F, OffsetOf(Call->getBeginLoc()), ArgBool(0), false, Where});
          else if (N == "set_cpu_enabled")
            Pending.push_back({&F, OffsetOf(Call->getBeginLoc()), ArgBool(0), true, Where});
          else if (N == "set_autocast_enabled")
            Pending.push_back({&F, OffsetOf(Call->getBeginLoc()), ArgBool(1), ArgIsCpu(0), Where});
          else if (N == "set_autocast_gpu_dtype" || N == "set_autocast_cpu_dtype" ||
                   N == "set_autocast_dtype") {
            bool Cpu = N == "set_autocast_cpu_dtype" || (N == "set_autocast_dtype" && ArgIsCpu(0));
            if (auto D = dtypeNamedIn(Call->getArg(Call->getNumArgs() - 1)))
              (Cpu ? CpuDtype : GpuDtype) = *D;
          }
          continue; // dtype names inside autocast calls are not conversions
        }
        if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call)) {
          if (const CXXMethodDecl *M = Member->getMethodDecl(); M && M->getIdentifier()) {
            llvm::StringRef N = M->getName();
            if ((N == "half" || N == "bfloat16") && Call->getNumArgs() == 0 && !F.Marker)
              F.Marker = {N == "half" ? Format::FP16 : Format::BF16,
                          SM.getExpansionLoc(Call->getExprLoc())};
            if (N == "to" && isNnModuleRecord(M->getParent()))
              if (const CXXRecordDecl *Obj = objectRecordOf(*Member); Obj && !isNnModuleRecord(Obj))
                for (const Expr *Arg : Call->arguments())
                  if (auto D = lowestDtypeIn(Arg)) {
                    if (*D != Format::FP32)
                      markConverted(Obj, *D, SM.getExpansionLoc(Call->getBeginLoc()));
                    break;
                  }
          }
        }
        // Calls into other user functions, for propagation; module calls through
        // a ModuleHolder<UserImpl> reach UserImpl::forward.
        if (Callee) {
          const FunctionDecl *Target = Callee;
          if (const FunctionDecl *Pattern = Callee->getTemplateInstantiationPattern())
            Target = Pattern;
          F.Calls.push_back({OffsetOf(Call->getBeginLoc()), Target->getCanonicalDecl(),
                             SM.getExpansionLoc(Call->getBeginLoc())});
          if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Call);
              Op && Op->getOperator() == OO_Call)
            if (const auto *M = dyn_cast<CXXMethodDecl>(Callee))
              if (const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(M->getParent());
                  Spec && Spec->getName() == "ModuleHolder" && Spec->getTemplateArgs().size() > 0 &&
                  Spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type)
                if (const auto *Impl = Spec->getTemplateArgs()[0].getAsType()->getAsCXXRecordDecl())
                  if (Impl->hasDefinition())
                    for (const auto *Method : Impl->methods())
                      if (Method->getIdentifier() && Method->getName() == "forward")
                        F.Calls.push_back({OffsetOf(Call->getBeginLoc()),
                                           Method->getCanonicalDecl(),
                                           SM.getExpansionLoc(Call->getBeginLoc())});
        }
      }
      if (const auto *Construct = dyn_cast<CXXConstructExpr>(S))
        if (const CXXConstructorDecl *Ctor = Construct->getConstructor())
          F.Guards.push_back({OffsetOf(Construct->getBeginLoc()), ScopeEnd,
                              cast<CXXConstructorDecl>(Ctor->getCanonicalDecl()),
                              SM.getExpansionLoc(Construct->getBeginLoc())});
      if (const auto *Ref = dyn_cast<DeclRefExpr>(S))
        if (auto D = formatOfDtypeName(*Ref->getDecl()); D && *D != Format::FP32 && !F.Marker)
          F.Marker = {*D, SM.getExpansionLoc(Ref->getLocation())};
      const size_t FirstChild = Work.size();
      for (const Stmt *Child : S->children())
        Work.push_back({Child, ScopeEnd});
      std::reverse(Work.begin() + FirstChild, Work.end());
    }
    ByDecl[FD->getCanonicalDecl()] = Facts.get();
    Functions.push_back(std::move(Facts));
  }

  for (const CXXRecordDecl *RD : Collector.Records) {
    SourceLocation B = SM.getExpansionLoc(RD->getBeginLoc()),
                   E = SM.getExpansionLoc(RD->getEndLoc());
    if (SM.getFileID(B) == SM.getFileID(E))
      Records.push_back({RD, SM.getFileID(B), SM.getFileOffset(B), SM.getFileOffset(E)});
  }

  for (const PendingToggle &P : Pending)
    P.F->Toggles.push_back({P.Offset, P.On, P.Cpu ? CpuDtype : GpuDtype, P.Where});
  for (auto &F : Functions)
    std::sort(F->Toggles.begin(), F->Toggles.end(),
              [](const Toggle &A, const Toggle &B) { return A.Offset < B.Offset; });

  // What calling a function leaves behind; then calls of such functions, and guard
  // objects built by such constructors, become toggles of their callers.
  for (auto &F : Functions)
    if (!F->Toggles.empty())
      F->NetToggle = F->Toggles.back();
  for (auto &F : Functions) {
    for (const CallEdge &C : F->Calls) {
      auto It = ByDecl.find(C.Callee);
      if (It != ByDecl.end() && It->second != F.get() && It->second->NetToggle &&
          !isa<CXXConstructorDecl>(It->second->Decl))
        F->Toggles.push_back(
            {C.Offset, It->second->NetToggle->On, It->second->NetToggle->Dtype, C.Where});
    }
    for (const GuardScope &G : F->Guards) {
      auto It = ByDecl.find(G.Ctor);
      if (It == ByDecl.end() || !It->second->NetToggle || !It->second->NetToggle->On)
        continue;
      F->Toggles.push_back({G.Offset, true, It->second->NetToggle->Dtype, G.Where});
      F->Toggles.push_back({G.ScopeEnd, false, It->second->NetToggle->Dtype, G.Where});
    }
    std::stable_sort(F->Toggles.begin(), F->Toggles.end(),
                     [](const Toggle &A, const Toggle &B) { return A.Offset < B.Offset; });
  }
}

/// The module class a field holds: torch::nn::ModuleHolder<X> (or a TORCH_MODULE
/// class derived from it) and std::shared_ptr<X> both give X.
static const CXXRecordDecl *heldModule(QualType T) {
  const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
  for (int Depth = 0; RD && Depth < 2; ++Depth) {
    if (const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(RD))
      if ((Spec->getName() == "ModuleHolder" || Spec->getName() == "shared_ptr") &&
          Spec->getTemplateArgs().size() > 0 &&
          Spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type)
        return Spec->getTemplateArgs()[0].getAsType()->getAsCXXRecordDecl();
    if (!RD->hasDefinition() || RD->getNumBases() == 0)
      return nullptr;
    RD = RD->bases_begin()->getType()->getAsCXXRecordDecl();
  }
  return nullptr;
}

void PrecisionContext::markConverted(const CXXRecordDecl *RD, Format F, SourceLocation Where) {
  // module->to(dtype) converts every registered submodule too.
  if (!RD || !RD->hasDefinition() ||
      !Converted.try_emplace(RD->getCanonicalDecl(), F, Where).second)
    return;
  for (const FieldDecl *Field : RD->getDefinition()->fields())
    if (const CXXRecordDecl *Sub = heldModule(Field->getType()))
      if (!Ctx.getSourceManager().isInSystemHeader(Sub->getLocation()))
        markConverted(Sub, F, Where);
}

PrecisionReason PrecisionContext::precisionIn(const FunctionFacts &F, SourceLocation Loc) const {
  const SourceManager &SM = Ctx.getSourceManager();
  unsigned Offset = Loc.isValid() ? SM.getFileOffset(SM.getExpansionLoc(Loc)) : F.End;
  const Toggle *Last = nullptr;
  for (const Toggle &T : F.Toggles)
    if (T.Offset <= Offset)
      Last = &T;
  if (Last && Last->On)
    return {autocastPrecision(Last->Dtype), Last->Where, "autocast is enabled here"};
  if (!Last && kb::isAutocast(F.Inherited.Value))
    return F.Inherited;
  if (F.Marker)
    return {plainPrecision(F.Marker->first), F.Marker->second,
            std::string("this function converts to ") + kb::toString(F.Marker->first) + " here"};
  if (const auto *M = dyn_cast<CXXMethodDecl>(F.Decl))
    if (auto It = Converted.find(M->getParent()->getCanonicalDecl()); It != Converted.end())
      return {plainPrecision(It->second.first), It->second.second,
              "the module '" + M->getParent()->getNameAsString() + "' is converted to " +
                  kb::toString(It->second.first) + " here"};
  if (Last && !Last->On)
    return {Precision::FP32, Last->Where, "autocast is disabled here"};
  return F.Inherited;
}

void PrecisionContext::propagate() {
  // Callees inherit the riskiest context they are called from; a handful of rounds
  // reaches the fixed point for any realistic call depth.
  for (int Round = 0; Round < 16; ++Round) {
    bool Changed = false;
    for (auto &F : Functions)
      for (const CallEdge &C : F->Calls) {
        auto It = ByDecl.find(C.Callee);
        if (It == ByDecl.end() || It->second == F.get())
          continue;
        PrecisionReason Here = precisionIn(*F, C.Where);
        FunctionFacts &G = *It->second;
        if (riskRank(Here.Value) > riskRank(G.Inherited.Value)) {
          G.Inherited = {Here.Value, C.Where,
                         "called from '" + F->Decl->getNameAsString() + "' in " +
                             kb::toString(Here.Value) + " context here"};
          Changed = true;
        }
      }
    if (!Changed)
      break;
  }
}

const FunctionDecl *PrecisionContext::enclosingFunction(const Stmt &S) const {
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation L = SM.getExpansionLoc(S.getBeginLoc());
  FileID File = SM.getFileID(L);
  unsigned Offset = SM.getFileOffset(L);
  const FunctionFacts *Best = nullptr;
  for (const auto &F : Functions)
    if (F->File == File && F->Begin <= Offset && Offset <= F->End &&
        (!Best || F->End - F->Begin < Best->End - Best->Begin))
      Best = F.get();
  return Best ? Best->Decl : nullptr;
}

PrecisionReason PrecisionContext::at(const Stmt &S) const {
  if (Forced)
    return {*Forced, SourceLocation(), "the precision is forced by the Precision option"};
  const FunctionDecl *FD = enclosingFunction(S);
  if (!FD) {
    // A default member initializer: the class's conversion decides.
    const SourceManager &SM = Ctx.getSourceManager();
    SourceLocation L = SM.getExpansionLoc(S.getBeginLoc());
    const RecordRange *Best = nullptr;
    for (const RecordRange &R : Records)
      if (R.File == SM.getFileID(L) && R.Begin <= SM.getFileOffset(L) &&
          SM.getFileOffset(L) <= R.End && (!Best || R.End - R.Begin < Best->End - Best->Begin))
        Best = &R;
    if (Best)
      if (auto It = Converted.find(Best->Decl->getCanonicalDecl()); It != Converted.end())
        return {plainPrecision(It->second.first), It->second.second,
                "the module '" + Best->Decl->getNameAsString() + "' is converted to " +
                    kb::toString(It->second.first) + " here"};
    return {};
  }
  auto It = ByDecl.find(FD->getCanonicalDecl());
  if (It == ByDecl.end())
    return {};
  return precisionIn(*It->second, S.getBeginLoc());
}

std::optional<Format> PrecisionContext::moduleConversion(const CXXRecordDecl *RD) const {
  if (!RD)
    return std::nullopt;
  auto It = Converted.find(RD->getCanonicalDecl());
  if (It == Converted.end())
    return std::nullopt;
  return It->second.first;
}

static std::optional<Format> knownFormatImpl(const Expr *E, int Depth) {
  if (!E || Depth > 16)
    return std::nullopt;
  E = ignoreConversions(E);
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
    const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
    if (Var && Var->isLocalVarDecl() && Var->getInit())
      return knownFormatImpl(Var->getInit(), Depth + 1);
    return std::nullopt;
  }
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
    // Binary arithmetic promotes: fp32 with anything gives fp32.
    if (Op->getNumArgs() != 2 || Op->getOperator() == OO_Equal)
      return std::nullopt;
    std::optional<Format> Result;
    bool AllKnown = true;
    for (const Expr *Arg : Op->arguments()) {
      if (!isTensorType(Arg->getType()))
        continue;
      auto F = knownFormatImpl(Arg, Depth + 1);
      if (F == Format::FP32)
        return Format::FP32;
      if (!F)
        AllKnown = false;
      else
        Result = F;
    }
    return AllKnown ? Result : std::nullopt;
  }
  const auto *Call = dyn_cast<CallExpr>(E);
  if (!Call)
    return std::nullopt;
  auto TC = classifyTorchCall(*Call);
  if (!TC)
    return std::nullopt;
  if (TC->Name == "half")
    return Format::FP16;
  if (TC->Name == "bfloat16")
    return Format::BF16;
  if (TC->Name == "float" || TC->Name == "double")
    return Format::FP32;
  if (auto D = explicitDtype(*TC))
    return D;
  if (isDefaultDtypeFactory(*TC))
    return Format::FP32;
  if (TC->Self)
    return knownFormatImpl(TC->Self, Depth + 1);
  return std::nullopt;
}

std::optional<Format> PrecisionContext::knownFormat(const Expr *E) const {
  return knownFormatImpl(E, 0);
}

std::optional<Format> PrecisionContext::computeFormatOf(const TorchCall &Call,
                                                        const kb::Op *Op) const {
  Precision Context = at(*Call.Call).Value;
  kb::AutocastPolicy Policy = Op ? Op->Autocast : kb::AutocastPolicy::None;
  std::optional<Format> Explicit = explicitDtype(Call);
  std::optional<Format> Input = Call.Self ? knownFormat(Call.Self) : std::nullopt;
  // torch::full(size, v) makes an fp32 tensor in any context: autocast does not cover
  // factories, and a half model's code still gets the default dtype unless it asks.
  if (Context != Precision::FP32 && isDefaultDtypeFactory(Call))
    return Format::FP32;
  switch (Context) {
  case Precision::FP32: return Format::FP32;
  case Precision::FP16:
  case Precision::BF16:
    if (Explicit)
      return Explicit;
    if (Input)
      return Input;
    return Context == Precision::FP16 ? Format::FP16 : Format::BF16;
  case Precision::AutocastFP16:
  case Precision::AutocastBF16: {
    Format Lowered = Context == Precision::AutocastFP16 ? Format::FP16 : Format::BF16;
    switch (Policy) {
    case kb::AutocastPolicy::Banned: return std::nullopt;
    case kb::AutocastPolicy::FP32: return Format::FP32;
    case kb::AutocastPolicy::FP32UnlessDtype: return Explicit ? *Explicit : Format::FP32;
    case kb::AutocastPolicy::Lower: return Explicit ? *Explicit : Lowered;
    case kb::AutocastPolicy::Promote:
    case kb::AutocastPolicy::None: return Explicit ? *Explicit : Input ? *Input : Lowered;
    }
  }
  }
  return Format::FP32;
}

} // namespace clang::tidy::mpnanny
