//===--- PrecisionFormats.cpp - mpnanny ------------------------------------===//
//
// The PrecisionContext's answers about one value or one call: the format an expression is known
// to hold, whatever the context, and the format an op computes in, given its context, its
// arguments and, under autocast, the knowledge base's policy for it.
//
//===----------------------------------------------------------------------===//
#include "PrecisionContext.h"

#include "HalfData.h"
#include "ValueFlow.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/Basic/SourceManager.h"

namespace clang::tidy::mpnanny {

using kb::Format;
using kb::Precision;

namespace {
/// How many expressions one knownFormat question may read: locals with several values and
/// callers that agree make the walk a tree, which a generated function could make huge.
constexpr int MaxFormatSteps = 4096;
/// A scheduler's betas pass through a dozen locals and two helpers before the op that reads
/// them; the step budget, not the depth, bounds the work.
constexpr int MaxFormatDepth = 48;
} // namespace

std::optional<Format> PrecisionContext::knownFormatImpl(const Expr *E, int Depth) const {
  if (!E || Depth > MaxFormatDepth || ++FormatSteps > MaxFormatSteps)
    return std::nullopt;
  E = ignoreConversions(E);
  // `auto logits = npu::linear(x, w);` with npu's header missing: the parse keeps no value (an
  // invalid local, a recovery expression), and what it held is unknown.
  if (E->containsErrors()) {
    FormatReadUnparsed = true;
    return std::nullopt;
  }
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
    if (Ref->getDecl()->isInvalidDecl()) {
      FormatReadUnparsed = true;
      return std::nullopt;
    }
    // `g = to_float32(g);` earlier in the function: the value that reaches the read.
    if (const Expr *Value = ValueFlow::get(Ctx).reachingValue(Ref, /*InPlaceOps=*/false))
      return knownFormatImpl(Value, Depth + 1);
    if (const auto *Param = dyn_cast<ParmVarDecl>(Ref->getDecl())) {
      // `_norm(x.to(torch::kFloat))`: a parameter has the format every caller in this
      // unit gives it, when they all agree.
      auto Arguments = ValueFlow::get(Ctx).argumentsPassedFor(*Param);
      if (!Arguments)
        return std::nullopt;
      return agreedFormatOf(*Arguments,
                            [&](const Expr *Arg) { return knownFormatImpl(Arg, Depth + 1); });
    }
    const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
    if (!Var || !Var->isLocalVarDecl())
      return std::nullopt;
    if (auto InProgress = FormatsInProgress.find(Var); InProgress != FormatsInProgress.end())
      return InProgress->second;
    if (auto Guarded = guardedFormat(*Ref, *Var, Depth))
      return Guarded;
    if (auto Agreed = agreedFormat(*Var, Depth))
      return Agreed;
    if (Var->getInit())
      return knownFormatImpl(Var->getInit(), Depth + 1);
    return std::nullopt;
  }
  if (const auto *Member = dyn_cast<MemberExpr>(E))
    if (const Expr *Value = ValueFlow::get(Ctx).reachingValue(Member, /*InPlaceOps=*/false))
      return knownFormatImpl(Value, Depth + 1);
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
    // Binary arithmetic promotes: fp32 with anything gives fp32.
    if (Op->getOperator() == OO_Call)
      return returnedFormat(*Op, Depth); // a lambda or functor: what it returns
    if (Op->getNumArgs() != 2 || !Op->isInfixBinaryOp() || Op->isAssignmentOp())
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
  if (!TC) {
    if (auto Returned = returnedFormat(*Call, Depth))
      return Returned;
    return opaqueCallFormat(*Call, Depth);
  }
  if (TC->Name == "half")
    return Format::FP16;
  if (TC->Name == "bfloat16")
    return Format::BF16;
  if (TC->Name == "float" || TC->Name == "double")
    return Format::FP32;
  if (auto D = explicitDtypeOf(*TC))
    return D;
  // `probs.to(logits.dtype())` has logits' format whatever probs held: unknown when logits'
  // is, not the operand's.
  if (const Expr *Donor = dtypeDonor(*TC))
    return knownFormatImpl(Donor, Depth + 1);
  if (isDefaultDtypeFactory(*TC))
    return Format::FP32;
  // torch::cat({a, b}), torch::stack({..}): the format every listed tensor agrees on.
  if (TC->Name == "cat" || TC->Name == "stack" || TC->Name == "concat")
    if (const auto *List =
            TC->Args.empty() ? nullptr : firstOutsideCalls<InitListExpr>(TC->Args.front()))
      return agreedFormatOf(
          List->inits(), [&](const Expr *Element) { return knownFormatImpl(Element, Depth + 1); });
  // Where autocast is on, an op of its fp32 list returns fp32 whatever its input
  // (autocast_mode.cpp: fp32, fp32_set_opt_dtype): a softmax's probabilities, a norm ...
  if (const kb::Op *Op = KB ? lookupOp(*TC, *KB) : nullptr) {
    PrecisionReason Why = at(*Call);
    kb::AutocastPolicy Policy = autocastPolicy(Op, Why);
    if (kb::isAutocast(Why.Value) &&
        (Policy == kb::AutocastPolicy::FP32 || Policy == kb::AutocastPolicy::FP32UnlessDtype))
      return Format::FP32;
    // ... and an op of its lower-precision list returns the autocast dtype (lower_precision_fp):
    // a matmul's, a linear's output.
    if (kb::isAutocast(Why.Value) && Policy == kb::AutocastPolicy::Lower)
      return Why.Value == Precision::AutocastFP16 ? Format::FP16 : Format::BF16;
  }
  if (const Expr *Operand = TC->operand())
    return knownFormatImpl(Operand, Depth + 1);
  return std::nullopt;
}

std::optional<Format> PrecisionContext::agreedFormat(const VarDecl &Var, int Depth) const {
  // `Tensor betas; if (linear) betas = linspace(.., kFloat32); else betas = from_blob(..,
  // kFloat32).clone(); betas = rescale(betas);`: no one value reaches a later read, but every
  // value the function gives the local has one format. The values that read the local
  // itself are judged with the format the others agree on.
  const std::optional<std::vector<const Expr *>> Values =
      ValueFlow::get(Ctx).valuesGivenTo(Var, /*InPlaceOps=*/false);
  if (!Values || Values->empty())
    return std::nullopt;
  auto ReadsVar = [&](const Expr *E) {
    bool Found = false;
    visitDescendants(E, [&](const Stmt *S) {
      const auto *Ref = dyn_cast<DeclRefExpr>(S);
      Found |= Ref && Ref->getDecl() == &Var;
      return !Found;
    });
    return Found;
  };
  FormatsInProgress[&Var] = std::nullopt;
  std::optional<Format> Agreed;
  bool Disagree = false;
  for (bool SelfReading : {false, true}) {
    for (const Expr *Value : *Values) {
      if (ReadsVar(Value) != SelfReading)
        continue;
      auto F = knownFormatImpl(Value, Depth + 1);
      if (!F || (Agreed && F != Agreed)) {
        Disagree = true;
        break;
      }
      Agreed = F;
    }
    if (Disagree || !Agreed)
      break;
    FormatsInProgress[&Var] = Agreed;
  }
  FormatsInProgress.erase(&Var);
  return Disagree ? std::nullopt : Agreed;
}

std::optional<Format> PrecisionContext::returnedFormat(const CallExpr &Call, int Depth) const {
  // `auto to_float32 = [](Tensor x) { return x.contiguous().to(torch::kFloat32); };` or a
  // helper function in the unit: the format every return statement of the callee agrees on.
  const FunctionDecl *Callee = Call.getDirectCallee();
  const FunctionDecl *Definition = nullptr;
  if (!Callee || !Callee->hasBody(Definition) || !Definition ||
      Ctx.getSourceManager().isInSystemHeader(Definition->getLocation()) ||
      !isTensorType(Callee->getReturnType()))
    return std::nullopt;
  std::optional<Format> Agreed;
  bool Disagree = false;
  visitDescendants(Definition->getBody(), [&](const Stmt *S) {
    if (isa<LambdaExpr>(S) || Disagree)
      return false; // a nested lambda's returns are its own
    if (const auto *Return = dyn_cast<ReturnStmt>(S)) {
      auto F = knownFormatImpl(Return->getRetValue(), Depth + 1);
      if (!F || (Agreed && F != Agreed))
        Disagree = true;
      Agreed = F;
    }
    return true;
  });
  return Disagree ? std::nullopt : Agreed;
}

namespace {
/// `x.scalar_type() != torch::kFloat32` or `x.dtype() != at::kFloat`: the local compared and
/// the format it is compared with.
std::optional<std::pair<const VarDecl *, Format>> dtypeInequality(const Expr *Condition) {
  Condition = Condition ? Condition->IgnoreParenImpCasts() : nullptr;
  const Expr *Left = nullptr, *Right = nullptr;
  if (const auto *Op = dyn_cast_or_null<BinaryOperator>(Condition);
      Op && Op->getOpcode() == BO_NE) {
    Left = Op->getLHS();
    Right = Op->getRHS();
  } else if (const auto *Call = dyn_cast_or_null<CXXOperatorCallExpr>(Condition);
             Call && Call->getOperator() == OO_ExclaimEqual && Call->getNumArgs() == 2) {
    Left = Call->getArg(0);
    Right = Call->getArg(1);
  } else {
    return std::nullopt;
  }
  for (int Swap = 0; Swap < 2; ++Swap, std::swap(Left, Right)) {
    const auto *Member = dyn_cast<CXXMemberCallExpr>(ignoreConversions(Left));
    const CXXMethodDecl *M = Member ? Member->getMethodDecl() : nullptr;
    if (!M || !M->getIdentifier() || (M->getName() != "scalar_type" && M->getName() != "dtype"))
      continue;
    const auto *Of =
        dyn_cast<DeclRefExpr>(Member->getImplicitObjectArgument()->IgnoreParenImpCasts());
    const auto *Var = Of ? dyn_cast<VarDecl>(Of->getDecl()) : nullptr;
    if (auto F = dtypeNamedIn(Right); Var && F)
      return std::make_pair(Var, *F);
  }
  return std::nullopt;
}
} // namespace

const llvm::SmallVector<std::pair<const IfStmt *, Format>, 2> &
PrecisionContext::dtypeGuardsOf(const FunctionDecl &Function, const VarDecl &Var) const {
  // One walk of a body finds every guard in it: a walk per read is quadratic in a long
  // function (a sum of 10k terms is 10k reads).
  if (DtypeGuardsCollected.insert(&Function).second)
    visitDescendants(Function.getBody(), [&](const Stmt *S) {
      if (isa<LambdaExpr>(S))
        return false;
      if (const auto *If = dyn_cast<IfStmt>(S); If && !If->getElse())
        if (auto Compared = dtypeInequality(If->getCond()))
          DtypeGuards[Compared->first].emplace_back(If, Compared->second);
      return true;
    });
  static const llvm::SmallVector<std::pair<const IfStmt *, Format>, 2> NoGuards;
  auto It = DtypeGuards.find(&Var);
  return It == DtypeGuards.end() ? NoGuards : It->second;
}

std::optional<Format> PrecisionContext::guardedFormat(const DeclRefExpr &Read, const VarDecl &Var,
                                                      int Depth) const {
  // `auto gate_input = hidden_states; if (gate_input.scalar_type() != torch::kFloat32)
  // gate_input = gate_input.to(torch::kFloat32);`: past the guard the local is fp32 on both
  // paths, provided the guard runs before every read after it (it sits in a block that holds the
  // read) and nothing after the guard gives the local another value.
  const auto *Function = dyn_cast_or_null<FunctionDecl>(Var.getDeclContext());
  if (!Function || !Function->getBody())
    return std::nullopt;
  const SourceManager &SM = Ctx.getSourceManager();
  auto Before = [&](SourceLocation A, SourceLocation B) {
    return SM.isBeforeInTranslationUnit(SM.getExpansionLoc(A), SM.getExpansionLoc(B));
  };
  const IfStmt *Guard = nullptr;
  Format Guaranteed = Format::FP32;
  for (const auto &[If, Compared] : dtypeGuardsOf(*Function, Var)) {
    if (!Before(If->getEndLoc(), Read.getBeginLoc()))
      continue;
    auto Parents = Ctx.getParents(*If);
    const auto *Block = Parents.size() == 1 ? Parents[0].get<CompoundStmt>() : nullptr;
    if (!Block || Before(Read.getBeginLoc(), Block->getBeginLoc()) ||
        Before(Block->getEndLoc(), Read.getBeginLoc()))
      continue;
    if (!Guard || Before(Guard->getEndLoc(), If->getBeginLoc())) {
      Guard = If; // the last guard before the read
      Guaranteed = Compared;
    }
  }
  if (!Guard)
    return std::nullopt;
  const std::optional<std::vector<const Expr *>> Values =
      ValueFlow::get(Ctx).valuesGivenTo(Var, /*InPlaceOps=*/false);
  if (!Values)
    return std::nullopt;
  bool GivenInGuard = false;
  for (const Expr *Value : *Values) {
    if (Before(Value->getBeginLoc(), Guard->getBeginLoc()))
      continue;
    if (Before(Guard->getEndLoc(), Value->getBeginLoc()))
      return std::nullopt; // given another value after the guard
    auto F = knownFormatImpl(Value, Depth + 1);
    if (F != Guaranteed)
      return std::nullopt;
    GivenInGuard = true;
  }
  return GivenInGuard ? std::optional<Format>(Guaranteed) : std::nullopt;
}

std::optional<Format> PrecisionContext::opaqueCallFormat(const CallExpr &Call, int Depth) const {
  // `npu_linear(gate_input_fp32, weight_fp32)`: a kernel of another library, with no body here,
  // follows its inputs as ATen's ops do (the result type of their arguments), and a factory of
  // the project (`create_input(shape, values, options_)`) makes tensors of the options it is
  // given. Of the formats inputs agree on, only fp32 and bf16 are followed: a fused kernel often
  // computes half inputs in float and returns that, and an answer of fp16 would be a finding
  // where nothing in sight computes in fp16 (bf16 holds every value fp32 does). A helper named
  // for a conversion (`to_half(x)`) follows nothing.
  const FunctionDecl *Callee = Call.getDirectCallee();
  const FunctionDecl *Definition = nullptr;
  if (!Callee || Callee->hasBody(Definition) || !isTensorType(Callee->getReturnType()) ||
      !Callee->getIdentifier())
    return std::nullopt;
  std::string Name = Callee->getName().lower();
  for (const char *Conversion : {"half", "16", "bfloat", "quant", "cast", "convert", "low"})
    if (Name.find(Conversion) != std::string::npos)
      return std::nullopt;
  std::optional<Format> Agreed;
  for (const Expr *Arg : Call.arguments()) {
    if (isOptionsOrDtype(Arg->getType())) {
      return dtypeOf(ignoreConversions(Arg));
    }
    if (!isTensorType(Arg->getType()))
      continue;
    auto F = knownFormatImpl(Arg, Depth + 1);
    if (!F || *F == Format::FP16 || (Agreed && F != Agreed))
      return std::nullopt;
    Agreed = F;
  }
  return Agreed;
}

std::optional<Format> PrecisionContext::knownFormat(const Expr *E, bool *Unparsed) const {
  FormatSteps = 0;
  FormatReadUnparsed = false;
  std::optional<Format> Known = knownFormatImpl(E, 0);
  if (Unparsed)
    *Unparsed = !Known && FormatReadUnparsed;
  return Known;
}

kb::AutocastPolicy PrecisionContext::autocastPolicy(const kb::Op *Op,
                                                    const PrecisionReason &Why) const {
  if (!Op)
    return kb::AutocastPolicy::None;
  if (Why.CpuAutocast)
    return Op->AutocastCpu;
  return LegacyAutocast && Op->AutocastLegacy ? *Op->AutocastLegacy : Op->Autocast;
}

std::optional<Format> PrecisionContext::requestedFormat(const TorchCall &Call) const {
  if (requestsIntegralDtype(Call))
    return std::nullopt;
  if (auto F = explicitDtypeOf(Call))
    return F;
  const Expr *Of = dtypeDonor(Call);
  if (!Of || isIntegralData(Of))
    return std::nullopt;
  if (auto F = knownFormat(Of))
    return F;
  switch (at(*Call.Call).Value) {
  case Precision::FP16: return Format::FP16;
  case Precision::BF16: return Format::BF16;
  default: return std::nullopt; // under autocast a tensor holds whatever the op before gave
  }
}

std::optional<Format> PrecisionContext::computeFormatOf(const TorchCall &Call,
                                                        const kb::Op *Op) const {
  const PrecisionReason Why = at(*Call.Call);
  Precision Context = Why.Value;
  kb::AutocastPolicy Policy = autocastPolicy(Op, Why);
  std::optional<Format> Explicit = explicitDtypeOf(Call);
  const Expr *Operand = Call.operand();
  bool Unparsed = false;
  std::optional<Format> Input = Operand ? knownFormat(Operand, &Unparsed) : std::nullopt;
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
    // The code's precision says nothing of a value the parse lost: fp32, as for the range
    // analysis, is the answer that raises no finding.
    if (Unparsed)
      return Format::FP32;
    return Context == Precision::FP16 ? Format::FP16 : Format::BF16;
  case Precision::AutocastFP16:
  case Precision::AutocastBF16: {
    Format Lowered = Context == Precision::AutocastFP16 ? Format::FP16 : Format::BF16;
    switch (Policy) {
    case kb::AutocastPolicy::Banned: return std::nullopt;
    case kb::AutocastPolicy::FP32: return Format::FP32;
    case kb::AutocastPolicy::FP32UnlessDtype: return Explicit ? *Explicit : Format::FP32;
    case kb::AutocastPolicy::Lower: return Explicit ? *Explicit : Lowered;
    // An op autocast does not cover runs in its input's type, which is half only where the
    // code shows it (a matmul's output is; a parameter, a user's tensor or a spectrogram is
    // not): an input of unknown format is taken to hold LibTorch's default dtype.
    case kb::AutocastPolicy::Promote:
    case kb::AutocastPolicy::None: return Explicit ? *Explicit : Input ? *Input : Format::FP32;
    }
  }
  }
  return Format::FP32;
}

} // namespace clang::tidy::mpnanny
