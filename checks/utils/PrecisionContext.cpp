//===--- PrecisionContext.cpp - mpnanny ------------------------------------===//
#include "PrecisionContext.h"

#include "LlvmCompat.h"
#include "UserCodeVisitor.h"
#include "ValueFlow.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Index/USRGeneration.h"
#include "llvm/ADT/DenseSet.h"
#include <algorithm>
#include <set>

namespace clang::tidy::mpnanny {

using kb::Format;
using kb::Precision;

namespace {

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

/// Whether the translation unit declares at::autocast::<Name>.
bool declaresAutocast(ASTContext &Ctx, llvm::StringRef Name) {
  auto Lookup = [&](const DeclContext *DC, llvm::StringRef N) -> const DeclContext * {
    for (const NamedDecl *D : DC->lookup(DeclarationName(&Ctx.Idents.get(N))))
      if (const auto *NS = dyn_cast<NamespaceDecl>(D))
        return NS;
    return nullptr;
  };
  const DeclContext *At = Lookup(Ctx.getTranslationUnitDecl(), "at");
  const DeclContext *Autocast = At ? Lookup(At, "autocast") : nullptr;
  return Autocast && !Autocast->lookup(DeclarationName(&Ctx.Idents.get(Name))).empty();
}

/// The key of a declaration across translation units: its USR. A declaration without one
/// (none in practice) gets a key that stays within this unit.
std::string keyOf(const Decl *D) {
  llvm::SmallString<128> Usr;
  if (!D || index::generateUSRForDecl(D, Usr))
    return "local:" + std::to_string(reinterpret_cast<uintptr_t>(D));
  return std::string(Usr);
}

/// The function a call reaches for propagation: the template pattern of an instantiation.
const FunctionDecl *callTarget(const FunctionDecl *Callee) {
  if (const FunctionDecl *Pattern = Callee->getTemplateInstantiationPattern())
    Callee = Pattern;
  return Callee->getCanonicalDecl();
}

Format lowerFormat(Format A, Format B) {
  auto Rank = [](Format X) { return X == Format::FP16 ? 0 : X == Format::BF16 ? 1 : 2; };
  return Rank(A) <= Rank(B) ? A : B;
}

/// Walks the user code of a translation unit, never entering system headers
/// (LibTorch and the standard library are included with -isystem).
class UserFunctionCollector : public UserCodeVisitor<UserFunctionCollector> {
public:
  explicit UserFunctionCollector(const SourceManager &SM) : UserCodeVisitor(SM) {}
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
};

/// The module class a field holds: torch::nn::ModuleHolder<X> (or a TORCH_MODULE
/// class derived from it) and std::shared_ptr<X> both give X.
const CXXRecordDecl *heldModule(QualType T) {
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

/// A member, a static member or a global: a value whose dtype can be set in one place and
/// read in another (not a local, whose initializer the code at hand already shows).
bool holdsProjectValue(const ValueDecl *D) {
  if (isa_and_nonnull<FieldDecl>(D))
    return true;
  const auto *Var = dyn_cast_or_null<VarDecl>(D);
  return Var && !Var->isLocalVarDecl() && !isa<ParmVarDecl>(Var);
}

} // namespace

PrecisionContext::PrecisionContext(ASTContext &Ctx, std::optional<Precision> Declared,
                                   const ProjectFacts *Facts, const kb::KnowledgeBase *KB)
    : Ctx(Ctx), Declared(Declared), Facts(Facts), KB(KB) {
  collect();
  applyFacts();
  if (Declared)
    Model.Baseline = PrecisionReason{
        *Declared, SourceLocation(), "the project declares it (the Precision option)", {}};
  Model.resolve();
}

PrecisionContext::~PrecisionContext() = default;

namespace {
struct CacheEntry {
  ASTContext *Ctx = nullptr;
  std::optional<Precision> Declared;
  const ProjectFacts *Facts = nullptr;
  const kb::KnowledgeBase *KB = nullptr;
  std::unique_ptr<PrecisionContext> Analysis;
};
thread_local std::vector<CacheEntry> Cache;
} // namespace

const PrecisionContext &PrecisionContext::get(ASTContext &Ctx, std::optional<Precision> Declared,
                                              const ProjectFacts *Facts,
                                              const kb::KnowledgeBase *KB) {
  for (auto &E : Cache)
    if (E.Ctx == &Ctx && E.Declared == Declared && E.Facts == Facts && E.KB == KB)
      return *E.Analysis;
  Cache.push_back(
      {&Ctx, Declared, Facts, KB, std::make_unique<PrecisionContext>(Ctx, Declared, Facts, KB)});
  return *Cache.back().Analysis;
}

void PrecisionContext::reset() { Cache.clear(); }

Place PrecisionContext::placeOf(SourceLocation Loc) const {
  const SourceManager &SM = Ctx.getSourceManager();
  Place P;
  if (Loc.isInvalid())
    return P;
  PresumedLoc PL = SM.getPresumedLoc(SM.getExpansionLoc(Loc));
  if (PL.isInvalid())
    return P;
  P.File = PL.getFilename();
  P.Line = PL.getLine();
  P.Column = PL.getColumn();
  return P;
}

void PrecisionContext::collect() {
  const SourceManager &SM = Ctx.getSourceManager();
  UserFunctionCollector Collector(SM);
  Collector.TraverseDecl(Ctx.getTranslationUnitDecl());

  // Classes first: a conversion marks the modules a class holds, found through its fields.
  for (const CXXRecordDecl *RD : Collector.Records) {
    std::string Key = keyOf(RD->getCanonicalDecl());
    Model.ClassNames[Key] = RD->getNameAsString();
    for (const FieldDecl *Field : RD->fields())
      if (const CXXRecordDecl *Sub = heldModule(Field->getType()))
        if (!SM.isInSystemHeader(Sub->getLocation()))
          Model.Submodules[Key].push_back(keyOf(Sub->getCanonicalDecl()));
    SourceLocation B = SM.getExpansionLoc(RD->getBeginLoc()),
                   E = SM.getExpansionLoc(RD->getEndLoc());
    if (SM.getFileID(B) == SM.getFileID(E))
      Records.push_back({RD, SM.getFileID(B), SM.getFileOffset(B), SM.getFileOffset(E)});
  }
  collectDtypes(Collector.Found, Collector.Records);

  // LibTorch 1.x spells the switches set_enabled / set_cpu_enabled and has no
  // set_autocast_dtype (2.4+); its CUDA op list differs a little (rules/README.md).
  LegacyAutocast =
      declaresAutocast(Ctx, "set_enabled") && !declaresAutocast(Ctx, "set_autocast_dtype");

  // The autocast dtypes are process state: a setter anywhere in the unit applies, so
  // switches get their dtype once every function has been read.
  for (const FunctionDecl *FD : Collector.Found) {
    SourceRange R = FD->getSourceRange();
    SourceLocation B = SM.getExpansionLoc(R.getBegin()), E = SM.getExpansionLoc(R.getEnd());
    if (SM.getFileID(E) != SM.getFileID(B))
      continue;
    Span S{FD, keyOf(callTarget(FD)), SM.getFileID(B), SM.getFileOffset(B), SM.getFileOffset(E)};
    ModelFunction &F = Model.Functions[S.Key];
    SpanOf[FD->getCanonicalDecl()] = Spans.size();
    // A function read twice in one unit (an inline function of a header seen through a
    // precompiled header and again) keeps its first reading.
    if (!F.Key.empty()) {
      Spans.push_back(std::move(S));
      continue;
    }
    F.Key = S.Key;
    F.Name = FD->getQualifiedNameAsString();
    if (const auto *M = dyn_cast<CXXMethodDecl>(FD))
      F.Class = keyOf(M->getParent()->getCanonicalDecl());
    F.IsConstructor = isa<CXXConstructorDecl>(FD);
    collectFunction(*FD, S, F);
    Spans.push_back(std::move(S));
  }
  for (auto &[Key, F] : Model.Functions) {
    for (ModelToggle &T : F.Toggles)
      T.Dtype = T.Cpu ? CpuAutocastDtype : GpuAutocastDtype;
    std::stable_sort(F.Toggles.begin(), F.Toggles.end(),
                     [](const ModelToggle &A, const ModelToggle &B) { return A.Order < B.Order; });
  }
}

bool PrecisionContext::collectAutocastCall(const CallExpr &Call, ModelFunction &F) {
  const FunctionDecl *Callee = Call.getDirectCallee();
  if (!Callee || !Callee->getIdentifier() || !inNamespace(*Callee, "at", "autocast"))
    return false;
  const SourceManager &SM = Ctx.getSourceManager();
  auto OffsetOf = [&](SourceLocation L) { return SM.getFileOffset(SM.getExpansionLoc(L)); };
  auto SeenAt = [&](SourceLocation L) { return Seen{SM.getExpansionLoc(L), Place()}; };
  llvm::StringRef N = Callee->getName();
  auto ArgBool = [&](unsigned I) {
    if (I >= Call.getNumArgs())
      return true;
    auto V = evaluateNumber(Call.getArg(I), Ctx);
    return !V || *V != 0;
  };
  auto ArgIsCpu = [&](unsigned I) {
    if (I >= Call.getNumArgs())
      return false;
    bool Cpu = false;
    visitDescendants(Call.getArg(I), [&](const Stmt *X) {
      if (const auto *Ref = dyn_cast<DeclRefExpr>(X))
        if (Ref->getDecl()->getIdentifier() &&
            Ref->getDecl()->getName().contains_insensitive("cpu"))
          Cpu = true;
      return !Cpu;
    });
    return Cpu;
  };
  // `bool was = is_enabled(); ... set_enabled(was);`: the state saved before, restored.
  auto ArgIsSavedState = [&](unsigned I) {
    if (I >= Call.getNumArgs())
      return false;
    const auto *Ref = dyn_cast<DeclRefExpr>(Call.getArg(I)->IgnoreParenImpCasts());
    const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
    const Expr *Init = Var && Var->getInit() ? Var->getInit()->IgnoreParenImpCasts() : nullptr;
    const auto *Read = dyn_cast_or_null<CallExpr>(Init);
    const FunctionDecl *Getter = Read ? Read->getDirectCallee() : nullptr;
    return Getter && Getter->getIdentifier() && inNamespace(*Getter, "at", "autocast") &&
           (Getter->getName() == "is_enabled" || Getter->getName() == "is_cpu_enabled" ||
            Getter->getName() == "is_autocast_enabled");
  };
  // The dtype is filled in by collect(), once every setter of the unit has been read.
  auto Switch = [&](unsigned Arg, bool Cpu) {
    ModelToggle T{OffsetOf(Call.getBeginLoc()), ArgBool(Arg), Format::FP16,
                  SeenAt(Call.getBeginLoc())};
    T.Cpu = Cpu;
    T.Restore = ArgIsSavedState(Arg);
    F.Toggles.push_back(T);
  };
  // 1.x: set_enabled (CUDA) and set_cpu_enabled; 2.4+: set_autocast_enabled(device, on), where
  // the 1.x names remain as deprecated wrappers.
  if (N == "clear_cache") {
    if (!F.ClearsAutocastCache)
      F.ClearsAutocastCache = SeenAt(Call.getBeginLoc());
  } else if (N == "set_enabled")
    Switch(0, false);
  else if (N == "set_cpu_enabled")
    Switch(0, true);
  else if (N == "set_autocast_enabled")
    Switch(1, ArgIsCpu(0));
  else if (N == "set_autocast_gpu_dtype" || N == "set_autocast_cpu_dtype" ||
           N == "set_autocast_dtype") {
    bool Cpu = N == "set_autocast_cpu_dtype" || (N == "set_autocast_dtype" && ArgIsCpu(0));
    if (auto D = dtypeNamedIn(Call.getArg(Call.getNumArgs() - 1)))
      (Cpu ? CpuAutocastDtype : GpuAutocastDtype) = *D;
  }
  return true;
}

void PrecisionContext::collectFunction(const FunctionDecl &FD, Span &Where, ModelFunction &F) {
  const SourceManager &SM = Ctx.getSourceManager();
  auto OffsetOf = [&](SourceLocation L) { return SM.getFileOffset(SM.getExpansionLoc(L)); };
  auto SeenAt = [&](SourceLocation L) { return Seen{SM.getExpansionLoc(L), Place()}; };
  llvm::DenseSet<const Stmt *> OpsOwnDtypes; // dtype names an op computes in (not markers)
  // An explicit stack rather than recursion: generated code nests expressions thousands
  // deep (a sum of 10k terms), deeper than a thread's stack. Pre-order, children in order.
  std::vector<std::pair<const Stmt *, unsigned>> Work = {{FD.getBody(), Where.End}};
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
      if (collectAutocastCall(*Call, F))
        continue; // dtype names inside autocast calls are not conversions
      if (auto TC = classifyTorchCall(*Call); TC && dtypeIsTheResultsOnly(*TC))
        for (const Expr *Arg : TC->Args)
          visitDescendants(Arg, [&](const Stmt *X) {
            if (isa<DeclRefExpr>(X) || isa<MemberExpr>(X))
              OpsOwnDtypes.insert(X);
            return true;
          });
      std::string Object;
      if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call)) {
        const CXXRecordDecl *Obj = objectRecordOf(*Member);
        if (Obj && !isNnModuleRecord(Obj) &&
            !Ctx.getSourceManager().isInSystemHeader(Obj->getLocation()))
          Object = keyOf(Obj->getCanonicalDecl());
        if (const CXXMethodDecl *M = Member->getMethodDecl(); M && M->getIdentifier()) {
          llvm::StringRef N = M->getName();
          if ((N == "half" || N == "bfloat16") && Call->getNumArgs() == 0 && !F.Marker)
            F.Marker = {N == "half" ? Format::FP16 : Format::BF16, SeenAt(Call->getExprLoc())};
          if (N == "to" && isNnModuleRecord(M->getParent()) && Obj && !isNnModuleRecord(Obj))
            for (const Expr *Arg : Call->arguments())
              if (auto D = lowestDtypeIn(Arg)) {
                Model.markConverted(keyOf(Obj->getCanonicalDecl()), *D,
                                    SeenAt(Call->getBeginLoc()));
                if (*D != Format::FP32) {
                  // `this->to(kHalf)` in a method: calling it converts its object.
                  if (isa<CXXThisExpr>(
                          Member->getImplicitObjectArgument()->IgnoreParenImpCasts()) &&
                      !F.ConvertsThis)
                    F.ConvertsThis = {*D, SeenAt(Call->getBeginLoc())};
                }
                break;
              }
        }
      }
      // Calls into other user functions, for propagation; module calls through
      // a ModuleHolder<UserImpl> reach UserImpl::forward.
      if (Callee) {
        F.Calls.push_back({OffsetOf(Call->getBeginLoc()), keyOf(callTarget(Callee)), Object,
                           SeenAt(Call->getBeginLoc())});
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
                      F.Calls.push_back({OffsetOf(Call->getBeginLoc()), keyOf(callTarget(Method)),
                                         "", SeenAt(Call->getBeginLoc())});
      }
    }
    if (const auto *Construct = dyn_cast<CXXConstructExpr>(S))
      if (const CXXConstructorDecl *Ctor = Construct->getConstructor())
        F.Guards.push_back({OffsetOf(Construct->getBeginLoc()), ScopeEnd, keyOf(callTarget(Ctor)),
                            SeenAt(Construct->getBeginLoc())});
    if (const auto *Ref = dyn_cast<DeclRefExpr>(S); Ref && !OpsOwnDtypes.count(S))
      if (auto D = formatOfDtypeName(*Ref->getDecl()); D && *D != Format::FP32 && !F.Marker)
        F.Marker = {*D, SeenAt(Ref->getLocation())};
    // A member or global given a half dtype elsewhere (`x.to(dtype_)`, `options.dtype(cfg.dtype)`).
    if ((isa<DeclRefExpr>(S) || isa<MemberExpr>(S)) && !OpsOwnDtypes.count(S))
      if (!F.Marker)
        if (auto D = dtypeOf(cast<Expr>(S)); D && *D != Format::FP32)
          F.Marker = {*D, SeenAt(S->getBeginLoc())};
    const size_t FirstChild = Work.size();
    for (const Stmt *Child : S->children())
      Work.push_back({Child, ScopeEnd});
    std::reverse(Work.begin() + FirstChild, Work.end());
  }
}

void PrecisionContext::collectDtypes(const std::vector<const FunctionDecl *> &Functions,
                                     const std::vector<const CXXRecordDecl *> &Classes) {
  const SourceManager &SM = Ctx.getSourceManager();
  auto Give = [&](const ValueDecl *To, const Expr *Value, SourceLocation Where) {
    if (!holdsProjectValue(To) || !Value)
      return;
    auto F = lowestDtypeIn(Value);
    if (!F)
      return;
    To = cast<ValueDecl>(To->getCanonicalDecl());
    auto [It, New] = LocalDtypes.try_emplace(To, DtypeFact{*F, {SM.getExpansionLoc(Where), {}}});
    if (!New)
      It->second.Format = lowerFormat(It->second.Format, *F);
  };
  for (const CXXRecordDecl *RD : Classes)
    for (const FieldDecl *Field : RD->fields())
      if (Field->hasInClassInitializer())
        Give(Field, Field->getInClassInitializer(), Field->getLocation());
  for (const FunctionDecl *FD : Functions) {
    if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(FD))
      for (const CXXCtorInitializer *Init : Ctor->inits())
        if (Init->isMemberInitializer() && Init->isWritten())
          Give(Init->getMember(), Init->getInit(), Init->getSourceLocation());
    visitDescendants(FD->getBody(), [&](const Stmt *S) {
      if (const auto *BO = dyn_cast<BinaryOperator>(S); BO && BO->getOpcode() == BO_Assign)
        Give(namedValue(BO->getLHS()), BO->getRHS(), BO->getOperatorLoc());
      if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(S);
          OC && OC->getOperator() == OO_Equal && OC->getNumArgs() == 2)
        Give(namedValue(OC->getArg(0)), OC->getArg(1), OC->getOperatorLoc());
      return true;
    });
  }
  for (const Decl *D : Ctx.getTranslationUnitDecl()->decls())
    if (const auto *Var = dyn_cast<VarDecl>(D);
        Var && Var->getInit() && !SM.isInSystemHeader(Var->getLocation()))
      Give(Var, Var->getInit(), Var->getLocation());
}

void PrecisionContext::applyFacts() {
  if (!Facts)
    return;
  for (const auto &[Key, Fact] : Facts->Functions)
    Model.External[Key] = Fact;
  for (const auto &[Key, C] : Facts->Classes) {
    if (!Model.ClassNames.count(Key))
      Model.ClassNames[Key] = C.Name;
    Model.markConverted(Key, C.Format, C.Where);
  }
}

std::optional<Format> PrecisionContext::dtypeOf(const Expr *E) const {
  if (!E)
    return std::nullopt;
  if (auto D = dtypeNamedIn(E))
    return D;
  const ValueDecl *V = namedValue(E);
  if (const auto *Param = dyn_cast_or_null<ParmVarDecl>(V))
    return parameterDtype(*Param);
  if (holdsProjectValue(V)) {
    V = cast<ValueDecl>(V->getCanonicalDecl());
    if (auto It = LocalDtypes.find(V); It != LocalDtypes.end())
      return It->second.Format;
    if (Facts)
      if (auto It = Facts->Dtypes.find(keyOf(V)); It != Facts->Dtypes.end())
        return It->second.Format;
  }
  return stableLocalDtype(E);
}

std::optional<Format> PrecisionContext::stableLocalDtype(const Expr *E) const {
  // `auto opts = options.dtype(torch::kFloat32); torch::arange(n, opts)`: options or a dtype
  // held in a local that nothing changes carry the dtype of their initializer.
  const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E ? E->IgnoreParenImpCasts() : nullptr);
  const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  if (!Var || !Var->isLocalVarDecl() || !isOptionsOrDtype(Var->getType()))
    return std::nullopt;
  if (const Expr *Init = ValueFlow::get(Ctx).stableInitializer(Var))
    return dtypeNamedIn(Init);
  return std::nullopt;
}

std::optional<Format> PrecisionContext::parameterDtype(const ParmVarDecl &Param) const {
  // `torch::Dtype freqs_dtype = torch::kFloat32`: the dtype every call in this unit passes (a
  // call that leaves it out passes the default); with no call in sight, the default, which is
  // what the function's author chose for callers that do not say.
  if (!isOptionsOrDtype(Param.getType()))
    return std::nullopt;
  const auto *Function = dyn_cast_or_null<FunctionDecl>(Param.getDeclContext());
  if (!Function)
    return std::nullopt;
  std::vector<const Expr *> Passed;
  if (!ValueFlow::get(Ctx).callsOf(*Function).empty()) {
    auto Arguments = ValueFlow::get(Ctx).argumentsPassedFor(Param, /*DefaultsToo=*/true);
    if (!Arguments)
      return std::nullopt;
    Passed = *Arguments;
  } else if (Param.hasDefaultArg() && !Param.hasUnparsedDefaultArg() &&
             !Param.hasUninstantiatedDefaultArg()) {
    Passed.push_back(Param.getDefaultArg());
  }
  // Not dtypeOf: a caller's own dtype parameter would lead from call to call, round a
  // recursion for ever.
  return agreedFormatOf(Passed, [&](const Expr *Arg) {
    auto F = dtypeNamedIn(Arg);
    if (!F) // `torch::Dtype freqs_dtype = torch::kFloat64; f(..., freqs_dtype);`
      F = stableLocalDtype(Arg);
    return F;
  });
}

std::optional<Format> PrecisionContext::explicitDtypeOf(const TorchCall &Call) const {
  if (auto D = explicitDtype(Call))
    return D;
  for (const Expr *Arg : Call.Args) {
    std::optional<Format> Found;
    visitDescendants(Arg, [&](const Stmt *S) {
      if (!Found && (isa<DeclRefExpr>(S) || isa<MemberExpr>(S)))
        Found = dtypeOf(cast<Expr>(S));
      return !Found;
    });
    if (Found)
      return Found;
  }
  return std::nullopt;
}

const PrecisionContext::Span *PrecisionContext::spanAt(SourceLocation Loc) const {
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation L = SM.getExpansionLoc(Loc);
  FileID File = SM.getFileID(L);
  unsigned Offset = SM.getFileOffset(L);
  const Span *Best = nullptr;
  for (const Span &S : Spans)
    if (S.File == File && S.Begin <= Offset && Offset <= S.End &&
        (!Best || S.End - S.Begin < Best->End - Best->Begin))
      Best = &S;
  return Best;
}

const FunctionDecl *PrecisionContext::functionAt(SourceLocation Loc) const {
  const Span *S = spanAt(Loc);
  return S ? S->Decl : nullptr;
}

const FunctionDecl *PrecisionContext::enclosingFunction(const Stmt &S) const {
  return functionAt(S.getBeginLoc());
}

std::vector<const FunctionDecl *> PrecisionContext::functions() const {
  std::vector<const FunctionDecl *> Out;
  for (const Span &S : Spans)
    Out.push_back(S.Decl);
  return Out;
}

const ModelFunction *PrecisionContext::modelOf(const FunctionDecl *FD) const {
  auto It = FD ? SpanOf.find(FD->getCanonicalDecl()) : SpanOf.end();
  if (It == SpanOf.end())
    return nullptr;
  auto F = Model.Functions.find(Spans[It->second].Key);
  return F == Model.Functions.end() ? nullptr : &F->second;
}

PrecisionReason PrecisionContext::at(const Stmt &S) const {
  const SourceManager &SM = Ctx.getSourceManager();
  const Span *In = spanAt(S.getBeginLoc());
  if (!In) {
    // A default member initializer: the class's conversion decides.
    SourceLocation L = SM.getExpansionLoc(S.getBeginLoc());
    const RecordRange *Best = nullptr;
    for (const RecordRange &R : Records)
      if (R.File == SM.getFileID(L) && R.Begin <= SM.getFileOffset(L) &&
          SM.getFileOffset(L) <= R.End && (!Best || R.End - R.Begin < Best->End - Best->Begin))
        Best = &R;
    if (Best)
      if (auto R = moduleConversionReason(Best->Decl))
        return *R;
    return Model.Baseline.value_or(PrecisionReason{});
  }
  auto F = Model.Functions.find(In->Key);
  if (F == Model.Functions.end())
    return Model.Baseline.value_or(PrecisionReason{});
  return Model.at(F->second, SM.getFileOffset(SM.getExpansionLoc(S.getBeginLoc())));
}

std::optional<PrecisionReason>
PrecisionContext::moduleConversionReason(const CXXRecordDecl *RD) const {
  if (!RD)
    return std::nullopt;
  return Model.classPrecision(keyOf(RD->getCanonicalDecl()));
}

std::optional<ModelToggle> PrecisionContext::toggleAt(const CallExpr &Call) const {
  const Span *In = spanAt(Call.getBeginLoc());
  auto F = In ? Model.Functions.find(In->Key) : Model.Functions.end();
  if (F == Model.Functions.end())
    return std::nullopt;
  SourceLocation At = Ctx.getSourceManager().getExpansionLoc(Call.getBeginLoc());
  for (const ModelToggle &T : F->second.Toggles)
    if (T.Where.Loc == At)
      return T;
  return std::nullopt;
}

std::optional<PrecisionReason> PrecisionContext::autocastBefore(const Stmt &S) const {
  const SourceManager &SM = Ctx.getSourceManager();
  if (const Span *In = spanAt(S.getBeginLoc())) {
    auto F = Model.Functions.find(In->Key);
    unsigned Offset = SM.getFileOffset(SM.getExpansionLoc(S.getBeginLoc()));
    if (F != Model.Functions.end() && Offset > 0)
      if (PrecisionReason R = Model.at(F->second, Offset - 1); kb::isAutocast(R.Value))
        return R;
  }
  const ModelToggle *First = nullptr;
  for (const auto &[Key, F] : Model.Functions)
    for (const ModelToggle &T : F.Toggles)
      if (T.On && !T.Restore && T.Where.Loc.isValid() &&
          (!First || SM.isBeforeInTranslationUnit(T.Where.Loc, First->Where.Loc)))
        First = &T;
  if (!First)
    return std::nullopt;
  return PrecisionModel::switchedOnHere(*First);
}

bool PrecisionContext::projectClearsAutocastCache() const {
  if (Facts && !Facts->AutocastCacheClears.empty())
    return true;
  for (const auto &[Key, F] : Model.Functions)
    if (F.ClearsAutocastCache)
      return true;
  return false;
}

std::optional<Format> PrecisionContext::moduleConversion(const CXXRecordDecl *RD) const {
  if (!RD)
    return std::nullopt;
  auto It = Model.Converted.find(keyOf(RD->getCanonicalDecl()));
  if (It == Model.Converted.end() || It->second.Format == Format::FP32)
    return std::nullopt;
  return It->second.Format;
}

UnitFacts PrecisionContext::exportFacts() const {
  UnitFacts U;
  const SourceManager &SM = Ctx.getSourceManager();
  U.File = mainFileName(SM).value_or("");
  std::set<std::string> Inputs = {U.File};
  auto AddInput = [&](FileID File) {
    if (OptionalFileEntryRef E = SM.getFileEntryRefForID(File))
      Inputs.insert(realPathOrName(*E));
  };
  for (const Span &S : Spans)
    AddInput(S.File);
  for (const RecordRange &R : Records)
    AddInput(R.File);
  U.Inputs.assign(Inputs.begin(), Inputs.end());
  auto Fill = [&](Seen &S) {
    if (!S.At.valid())
      S.At = placeOf(S.Loc);
    S.Loc = SourceLocation();
  };
  for (const auto &[Key, Fn] : Model.Functions) {
    ModelFunction F = Fn;
    F.Effective.clear();
    F.NetToggle.reset();
    F.Inherited = {};
    if (F.Marker)
      Fill(F.Marker->second);
    if (F.ConvertsThis)
      Fill(F.ConvertsThis->second);
    for (auto &T : F.Toggles)
      Fill(T.Where);
    for (auto &C : F.Calls)
      Fill(C.Where);
    for (auto &G : F.Guards)
      Fill(G.Where);
    if (F.ClearsAutocastCache)
      Fill(*F.ClearsAutocastCache);
    U.Functions.push_back(std::move(F));
  }
  for (const auto &[Key, C] : Model.Converted) {
    Conversion Copy = C;
    Fill(Copy.Where);
    U.Conversions[Key] = Copy;
  }
  U.Submodules = Model.Submodules;
  U.ClassNames = Model.ClassNames;
  for (const auto &[Decl, Fact] : LocalDtypes) {
    DtypeFact Copy = Fact;
    Fill(Copy.Where);
    U.Dtypes[keyOf(Decl)] = Copy;
  }
  return U;
}

} // namespace clang::tidy::mpnanny
