//===--- TorchCalls.cpp - mpnanny ------------------------------------------===//
#include "TorchCalls.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <algorithm>

namespace clang::tidy::mpnanny {

/// The namespaces around a declaration, outermost first, inline ones skipped
/// (libstdc++'s __cxx11, c10's versioned namespaces).
static std::string enclosingNamespaces(const Decl &D) {
  llvm::SmallVector<llvm::StringRef, 4> Parts;
  for (const DeclContext *C = D.getDeclContext(); C; C = C->getParent())
    if (const auto *NS = dyn_cast<NamespaceDecl>(C))
      if (!NS->isInline() && !NS->isAnonymousNamespace())
        Parts.push_back(NS->getName());
  std::string Out;
  for (auto It = Parts.rbegin(); It != Parts.rend(); ++It)
    Out += (Out.empty() ? "" : "::") + It->str();
  return Out;
}

static bool isTensorRecord(const CXXRecordDecl *RD) {
  if (!RD || !RD->getIdentifier())
    return false;
  llvm::StringRef Name = RD->getName();
  if (Name != "Tensor" && Name != "TensorBase")
    return false;
  std::string NS = enclosingNamespaces(*RD);
  return NS == "at" || NS == "torch";
}

bool isTensorType(QualType T) {
  T = T.getNonReferenceType().getUnqualifiedType();
  return isTensorRecord(T->getAsCXXRecordDecl());
}

bool isLibTorchDecl(const Decl &D) {
  std::string NS = enclosingNamespaces(D);
  llvm::StringRef Outer = llvm::StringRef(NS).split("::").first;
  return Outer == "torch" || Outer == "at" || Outer == "c10";
}

static bool mayCarryTorchState(QualType T, llvm::SmallPtrSetImpl<const CXXRecordDecl *> &Seen) {
  if (T.isNull())
    return true;
  T = T.getNonReferenceType();
  while (T->isPointerType() || T->isArrayType() || T->isMemberPointerType())
    T = T->isArrayType() ? QualType(T->getArrayElementTypeNoTypeQual(), 0) : T->getPointeeType();
  if (T->isDependentType() || T->containsErrors() || T->isUndeducedType())
    return true;
  if (const auto *Enum = T->getAs<EnumType>())
    return isLibTorchDecl(*Enum->getDecl()); // c10::ScalarType
  const auto *RD = T->getAsCXXRecordDecl();
  if (!RD)
    return false; // a number, a flag, a function type
  if (!Seen.insert(RD).second)
    return false;
  if (isLibTorchDecl(*RD))
    return true;
  if (const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(RD))
    for (const TemplateArgument &Arg : Spec->getTemplateArgs().asArray())
      if (Arg.getKind() == TemplateArgument::Type && mayCarryTorchState(Arg.getAsType(), Seen))
        return true;
  // std's classes hold what their arguments say; their members are implementation.
  if (RD->isInStdNamespace())
    return false;
  const CXXRecordDecl *Def = RD->getDefinition();
  if (!Def)
    return true; // a project class whose header is missing: what it holds is unknown
  for (const CXXBaseSpecifier &Base : Def->bases())
    if (mayCarryTorchState(Base.getType(), Seen))
      return true;
  for (const FieldDecl *Field : Def->fields())
    if (mayCarryTorchState(Field->getType(), Seen))
      return true;
  return false;
}

bool mayCarryTorchState(QualType T) {
  llvm::SmallPtrSet<const CXXRecordDecl *, 8> Seen;
  return mayCarryTorchState(T, Seen);
}

const CXXRecordDecl *objectRecordOf(const CXXMemberCallExpr &Call) {
  const Expr *Obj = Call.getImplicitObjectArgument();
  if (!Obj)
    return nullptr;
  QualType T = Obj->IgnoreParenImpCasts()->getType();
  if (T->isPointerType())
    T = T->getPointeeType();
  return T->getAsCXXRecordDecl();
}

const Expr *ignoreConversions(const Expr *E) {
  while (E) {
    const Expr *Before = E;
    E = E->IgnoreImplicit()->IgnoreParens();
    if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(E))
      E = MT->getSubExpr();
    if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(E))
      E = BT->getSubExpr();
    if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(E))
      E = FC->getSubExpr();
    // Scalar(1e-9), optional<ScalarType>(kFloat): a converting constructor with one argument.
    if (const auto *CE = dyn_cast<CXXConstructExpr>(E))
      if (CE->getNumArgs() >= 1 && !isa<CXXTemporaryObjectExpr>(CE) &&
          (CE->getNumArgs() == 1 || isa<CXXDefaultArgExpr>(CE->getArg(1))))
        E = CE->getArg(0);
    if (E == Before)
      break;
  }
  return E;
}

void visitDescendants(const Stmt *S, const std::function<bool(const Stmt *)> &Fn) {
  // An explicit stack rather than recursion: generated code nests expressions deeper than a
  // thread's stack. Pre-order, children in order, as the recursion visited them.
  llvm::SmallVector<const Stmt *, 32> Work = {S};
  while (!Work.empty()) {
    const Stmt *Current = Work.pop_back_val();
    if (!Current || !Fn(Current))
      continue;
    const size_t FirstChild = Work.size();
    for (const Stmt *Child : Current->children())
      Work.push_back(Child);
    std::reverse(Work.begin() + FirstChild, Work.end());
  }
}

/// Module calls: `mod->forward(x)` on a torch::nn::XImpl, or `mod(x)` through
/// torch::nn::ModuleHolder<XImpl>::operator().
static std::optional<std::string> moduleNameOfImpl(const CXXRecordDecl *RD) {
  if (!RD || !RD->getIdentifier())
    return std::nullopt;
  llvm::StringRef Name = RD->getName();
  if (!Name.ends_with("Impl") || enclosingNamespaces(*RD) != "torch::nn")
    return std::nullopt;
  return Name.drop_back(4).str();
}

static std::optional<std::string> moduleNameOfHolder(const CXXRecordDecl *RD) {
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(RD);
  if (!Spec || Spec->getName() != "ModuleHolder" || Spec->getTemplateArgs().size() < 1)
    return std::nullopt;
  const TemplateArgument &Arg = Spec->getTemplateArgs()[0];
  if (Arg.getKind() != TemplateArgument::Type)
    return std::nullopt;
  return moduleNameOfImpl(Arg.getAsType()->getAsCXXRecordDecl());
}

static void collectArgs(const CallExpr &Call, unsigned First,
                        llvm::SmallVectorImpl<const Expr *> &Out) {
  for (unsigned I = First; I < Call.getNumArgs(); ++I)
    if (!isa<CXXDefaultArgExpr>(Call.getArg(I)))
      Out.push_back(Call.getArg(I));
}

std::optional<TorchCall> classifyTorchCall(const CallExpr &Call) {
  const FunctionDecl *Callee = Call.getDirectCallee();
  if (!Callee)
    return std::nullopt;
  TorchCall Result;
  Result.Call = &Call;
  Result.Callee = Callee;

  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(&Call)) {
    const CXXMethodDecl *Method = Member->getMethodDecl();
    if (!Method || !Method->getIdentifier())
      return std::nullopt;
    const CXXRecordDecl *RD = Method->getParent();
    if (isTensorRecord(RD)) {
      Result.Kind = Spelling::Method;
      Result.Name = Method->getName().str();
      Result.Self = Member->getImplicitObjectArgument();
      collectArgs(Call, 0, Result.Args);
      return Result;
    }
    if (Method->getName() == "forward")
      if (auto Module = moduleNameOfImpl(RD)) {
        Result.Kind = Spelling::Module;
        Result.Name = *Module;
        if (Call.getNumArgs() > 0)
          Result.Self = Call.getArg(0);
        collectArgs(Call, 1, Result.Args);
        return Result;
      }
    return std::nullopt;
  }

  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(&Call)) {
    if (Op->getOperator() != OO_Call)
      return std::nullopt;
    const auto *Method = dyn_cast<CXXMethodDecl>(Callee);
    if (!Method)
      return std::nullopt;
    auto Module = moduleNameOfHolder(Method->getParent());
    if (!Module) // a TORCH_MODULE class derives from ModuleHolder<XImpl>
      if (const auto *Obj = Op->getArg(0)->getType()->getAsCXXRecordDecl())
        if (Obj->hasDefinition())
          for (const auto &Base : Obj->bases())
            if ((Module = moduleNameOfHolder(Base.getType()->getAsCXXRecordDecl())))
              break;
    if (!Module)
      return std::nullopt;
    Result.Kind = Spelling::Module;
    Result.Name = *Module;
    if (Op->getNumArgs() > 1)
      Result.Self = Op->getArg(1);
    collectArgs(Call, 2, Result.Args);
    return Result;
  }

  if (isa<CXXMethodDecl>(Callee) || !Callee->getIdentifier())
    return std::nullopt;
  std::string NS = enclosingNamespaces(*Callee);
  if (NS == "at" || NS == "torch")
    Result.Kind = Spelling::Function;
  else if (NS == "torch::nn::functional")
    Result.Kind = Spelling::Functional;
  else
    return std::nullopt;
  Result.Name = Callee->getName().str();
  if (Call.getNumArgs() > 0 && isTensorType(Call.getArg(0)->getType()))
    Result.Self = Call.getArg(0);
  collectArgs(Call, Result.Self ? 1 : 0, Result.Args);
  return Result;
}

const Expr *TorchCall::operand() const {
  if (Self)
    return Self;
  for (const Expr *Arg : Args)
    if (isTensorType(Arg->getType()))
      return Arg;
  return nullptr;
}

std::string TorchCall::spelled() const {
  switch (Kind) {
  case Spelling::Function: return "torch::" + Name;
  case Spelling::Method: return "Tensor::" + Name;
  case Spelling::Functional: return "torch::nn::functional::" + Name;
  case Spelling::Module: return "torch::nn::" + Name;
  }
  return Name;
}

const kb::Op *lookupOp(const TorchCall &Call, const kb::KnowledgeBase &KB) {
  switch (Call.Kind) {
  case Spelling::Function: return KB.findFunction(Call.Name);
  case Spelling::Method: return KB.findMethod(Call.Name);
  case Spelling::Functional: return KB.findFunctional(Call.Name);
  case Spelling::Module: return KB.findModule(Call.Name);
  }
  return nullptr;
}

const Expr *valueArgument(const TorchCall &Call, const kb::Op &, unsigned Index) {
  // Args already start after `self`; a factory (torch::full) has no tensor first.
  return Index < Call.Args.size() ? Call.Args[Index] : nullptr;
}

std::optional<kb::Format> formatOfDtypeName(const NamedDecl &D) {
  if (!D.getIdentifier())
    return std::nullopt;
  llvm::StringRef N = D.getName();
  if (isa<EnumConstantDecl>(D)) {
    const auto *Enum = dyn_cast<EnumDecl>(D.getDeclContext());
    if (!Enum || Enum->getName() != "ScalarType")
      return std::nullopt;
    if (N == "Half")
      return kb::Format::FP16;
    if (N == "BFloat16")
      return kb::Format::BF16;
    if (N == "Float" || N == "Double")
      return kb::Format::FP32;
    return std::nullopt;
  }
  if (!isa<VarDecl>(D))
    return std::nullopt;
  std::string NS = enclosingNamespaces(D);
  if (NS != "at" && NS != "torch" && NS != "c10")
    return std::nullopt;
  if (N == "kHalf" || N == "kFloat16" || N == "kF16")
    return kb::Format::FP16;
  if (N == "kBFloat16")
    return kb::Format::BF16;
  if (N == "kFloat" || N == "kFloat32" || N == "kF32" || N == "kDouble" || N == "kFloat64" ||
      N == "kF64")
    return kb::Format::FP32;
  return std::nullopt;
}

std::optional<kb::Format> dtypeNamedIn(const Stmt *E) {
  std::optional<kb::Format> Found;
  visitDescendants(E, [&](const Stmt *S) {
    if (Found)
      return false;
    if (const auto *Ref = dyn_cast<DeclRefExpr>(S))
      Found = formatOfDtypeName(*Ref->getDecl());
    return !Found;
  });
  return Found;
}

static std::optional<kb::Format> lowestDtypeIn(const Stmt *E, int Depth) {
  std::optional<kb::Format> Lowest;
  auto Consider = [&](std::optional<kb::Format> F) {
    // fp16 < bf16 < fp32: the narrowest range is the one that can fail.
    auto Rank = [](kb::Format X) {
      return X == kb::Format::FP16 ? 0 : X == kb::Format::BF16 ? 1 : 2;
    };
    if (F && (!Lowest || Rank(*F) < Rank(*Lowest)))
      Lowest = F;
  };
  visitDescendants(E, [&](const Stmt *S) {
    if (const auto *Ref = dyn_cast<DeclRefExpr>(S)) {
      Consider(formatOfDtypeName(*Ref->getDecl()));
      if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl()))
        if (Depth < 4 && Var->isLocalVarDecl() && Var->getInit())
          Consider(lowestDtypeIn(Var->getInit(), Depth + 1));
    }
    return true;
  });
  return Lowest;
}

std::optional<kb::Format> lowestDtypeIn(const Stmt *E) { return lowestDtypeIn(E, 0); }

std::optional<kb::Format> explicitDtype(const TorchCall &Call) {
  for (const Expr *Arg : Call.Args)
    if (auto F = dtypeNamedIn(Arg))
      return F;
  return std::nullopt;
}

/// `logits.options()`, `logits.dtype()` or `logits.scalar_type()`: the tensor they are read from.
static const Expr *tensorWhoseDtypeIsRead(const Expr *Arg) {
  const Expr *E = ignoreConversions(Arg);
  if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E))
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
        Var && Var->isLocalVarDecl() && Var->getInit() && isOptionsOrDtype(Var->getType()))
      E = ignoreConversions(Var->getInit());
  const auto *Member = dyn_cast_or_null<CXXMemberCallExpr>(E);
  const CXXMethodDecl *Method = Member ? Member->getMethodDecl() : nullptr;
  if (!Method || !Method->getIdentifier())
    return nullptr;
  static const llvm::StringRef Readers[] = {"options", "dtype", "scalar_type"};
  if (!llvm::is_contained(Readers, Method->getName()))
    return nullptr;
  const Expr *Object = Member->getImplicitObjectArgument();
  return Object && isTensorType(Object->getType()) ? Object : nullptr;
}

const Expr *dtypeDonor(const TorchCall &Call) {
  const bool CopiesATensorsType =
      Call.Kind == Spelling::Method && (Call.Name == "to" || Call.Name == "type_as");
  for (const Expr *Arg : Call.Args) {
    if (const Expr *Object = tensorWhoseDtypeIsRead(Arg))
      return Object;
    if (CopiesATensorsType && isTensorType(ignoreConversions(Arg)->getType()))
      return Arg;
  }
  return nullptr;
}

bool dtypeIsTheResultsOnly(const TorchCall &Call) {
  static const llvm::StringRef Ops[] = {
      "softmax", "log_softmax", "softmin", "sum",  "nansum",      "mean",
      "prod",    "cumsum",      "cumprod", "norm", "vector_norm", "linalg_vector_norm"};
  return llvm::is_contained(Ops, llvm::StringRef(Call.Name));
}

const ParmVarDecl *parameterOf(const TorchCall &Call, unsigned ArgIndex) {
  // A method's arguments start at its first parameter; a function's after `self`.
  unsigned Param = ArgIndex + (Call.Kind == Spelling::Method ? 0 : (Call.Self ? 1 : 0));
  if (!Call.Callee || ArgIndex >= Call.Args.size() || Param >= Call.Callee->getNumParams())
    return nullptr;
  const ParmVarDecl *P = Call.Callee->getParamDecl(Param);
  return P->getIdentifier() ? P : nullptr;
}

bool namesDimensions(const TorchCall &Call) {
  // ATen names the reduced dimensions `dim` in every overload (IntArrayRef, int64_t,
  // OptionalIntArrayRef, DimnameList), while p, ord and dtype come before or after it.
  for (unsigned I = 0; I < Call.Args.size(); ++I)
    if (const ParmVarDecl *P = parameterOf(Call, I))
      if (P->getName() == "dim" || P->getName() == "dims")
        return true;
  return false;
}

bool isDefaultDtypeFactory(const TorchCall &Call) {
  // Factories whose floating result takes the default dtype. The *_like and new_*
  // forms copy another tensor's dtype and are not here.
  static const llvm::StringRef Factories[] = {"full", "zeros",        "ones",     "empty",
                                              "rand", "randn",        "linspace", "logspace",
                                              "eye",  "empty_strided"};
  if (Call.Kind != Spelling::Function || Call.Self ||
      !llvm::is_contained(Factories, llvm::StringRef(Call.Name)))
    return false;
  // Any options or dtype written at the call may name half (x.options(), torch::kHalf,
  // a variable): only a call that passes none is known to be fp32. Args holds the
  // written arguments; defaulted ones are left out.
  for (const Expr *Arg : Call.Args) {
    const Expr *Written = Arg->IgnoreImplicit();
    if (const auto *Construct = dyn_cast<CXXConstructExpr>(Written);
        Construct && Construct->getNumArgs() == 1)
      Written = Construct->getArg(0)->IgnoreImplicit();
    if (isOptionsOrDtype(Written->getType()) || isOptionsOrDtype(Arg->getType()))
      return false;
  }
  return true;
}

const ValueDecl *namedValue(const Expr *E) {
  E = E ? E->IgnoreParenImpCasts() : nullptr;
  if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E))
    return Ref->getDecl();
  if (const auto *Member = dyn_cast_or_null<MemberExpr>(E))
    return Member->getMemberDecl();
  return nullptr;
}

bool isOptionsOrDtype(QualType T) {
  std::string Name = T.getCanonicalType().getAsString();
  return Name.find("TensorOptions") != std::string::npos ||
         Name.find("ScalarType") != std::string::npos || Name.find("TypeMeta") != std::string::npos;
}

std::optional<double> evaluateNumber(const Expr *E, const ASTContext &Ctx) {
  E = ignoreConversions(E);
  if (!E || E->isValueDependent() || E->isTypeDependent())
    return std::nullopt;
  QualType T = E->getType();
  if (!T->isArithmeticType())
    return std::nullopt;
  Expr::EvalResult R;
  if (!E->EvaluateAsRValue(R, Ctx) || R.HasSideEffects)
    return std::nullopt;
  if (R.Val.isFloat())
    return R.Val.getFloat().convertToDouble();
  if (R.Val.isInt())
    return static_cast<double>(R.Val.getInt().getSExtValue());
  return std::nullopt;
}

} // namespace clang::tidy::mpnanny
