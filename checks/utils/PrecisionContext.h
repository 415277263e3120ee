//===--- PrecisionContext.h - mpnanny ----------------------------*- C++ -*-===//
//
// The precision each piece of user code computes in: fp32, fp16, bf16 (a model or
// tensors converted to half), or autocast-fp16 / autocast-bf16. Inferred once per
// translation unit from conversions (`.to(torch::kHalf)`, `module->to(kBFloat16)`),
// autocast switches (1.13 and 2.4+ spellings, CUDA and CPU, saved and restored states, and
// user guard classes that flip them), and the calls between user functions, in this unit and
// across the project (its facts); code that shows no evidence of its own takes the precision
// the project declares.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_PRECISIONCONTEXT_H
#define MPNANNY_CHECKS_PRECISIONCONTEXT_H

#include "KnowledgeBase.h"
#include "PrecisionModel.h"
#include "ProjectFacts.h"
#include "TorchCalls.h"
#include "clang/AST/ASTContext.h"
#include "clang/Basic/SourceLocation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::mpnanny {

/// The format every value agrees on, as Judge gives it: none when one is unknown or two differ
/// (a parameter's arguments, a list's tensors, a dtype passed at each call).
template <typename Range, typename JudgeFn>
std::optional<kb::Format> agreedFormatOf(const Range &Values, JudgeFn Judge) {
  std::optional<kb::Format> Agreed;
  for (const auto *Value : Values) {
    std::optional<kb::Format> F = Judge(Value);
    if (!F || (Agreed && F != Agreed))
      return std::nullopt;
    Agreed = F;
  }
  return Agreed;
}

class PrecisionContext {
public:
  /// The analysis of the translation unit that Ctx holds; built on first use. Declared is
  /// the project's precision (the Precision option): what code with no evidence of its own
  /// computes in. Facts, when given, are what the rest of the project knows (ProjectFacts.h).
  /// KB, when given, says what autocast does with each op, so that an op of autocast's fp32
  /// list is known to return fp32 (knownFormat).
  static const PrecisionContext &get(ASTContext &Ctx, std::optional<kb::Precision> Declared,
                                     const ProjectFacts *Facts = nullptr,
                                     const kb::KnowledgeBase *KB = nullptr);
  /// Forgets the cached analysis; called when a new translation unit starts.
  static void reset();

  PrecisionContext(ASTContext &Ctx, std::optional<kb::Precision> Declared,
                   const ProjectFacts *Facts = nullptr, const kb::KnowledgeBase *KB = nullptr);
  ~PrecisionContext();

  /// This unit's facts for the project's facts pass, before any other unit's are merged.
  UnitFacts exportFacts() const;

  /// The precision at a statement of user code, with the reason.
  PrecisionReason at(const Stmt &S) const;
  /// The user function whose body holds S (lambdas count as their enclosing function).
  const FunctionDecl *enclosingFunction(const Stmt &S) const;
  /// The innermost user function whose source range holds Loc (after macro expansion).
  const FunctionDecl *functionAt(SourceLocation Loc) const;
  /// Every user function with a body, in the order they were found.
  std::vector<const FunctionDecl *> functions() const;

  /// The format a tensor expression is known to have from the code itself
  /// (`x.to(torch::kFloat)`, a local initialized from one, an op on such a tensor, an op that
  /// autocast runs in fp32 where autocast is on). With Unparsed, also whether an unknown
  /// answer comes from a value the parse lost on the way (an argument or a local's value that
  /// holds a compile error): such a value holds what the code that did not parse gave it, which
  /// the precision around it does not tell.
  std::optional<kb::Format> knownFormat(const Expr *E, bool *Unparsed = nullptr) const;

  /// What autocast does with the op where the code runs as `Why` says: CUDA's list (LibTorch
  /// 1.13's where the unit's headers are 1.x), or CPU autocast's shorter one. None for no op.
  kb::AutocastPolicy autocastPolicy(const kb::Op *Op, const PrecisionReason &Why) const;

  /// The floating format a factory call asks for: a dtype it names, or the options of a
  /// tensor (`query.options()`, directly or through a local), which carry that tensor's
  /// dtype: its known format, or the precision of the code around it. std::nullopt for
  /// options it cannot read, integer tensors and dtypes, and code under autocast.
  std::optional<kb::Format> requestedFormat(const TorchCall &Call) const;

  /// The format the op computes in at this call; std::nullopt when autocast bans it. An input
  /// the parse lost (knownFormat's Unparsed) counts as fp32 there: the one that raises no finding.
  std::optional<kb::Format> computeFormatOf(const TorchCall &Call, const kb::Op *Op) const;

  /// Records of user code converted to a format by `module->to(...)` anywhere in the TU,
  /// or elsewhere in the project.
  std::optional<kb::Format> moduleConversion(const CXXRecordDecl *RD) const;
  /// The same with where and why, for a finding's note.
  std::optional<PrecisionReason> moduleConversionReason(const CXXRecordDecl *RD) const;

  /// Whether anything in the project (this unit, or the facts of the others) calls
  /// at::autocast::clear_cache().
  bool projectClearsAutocastCache() const;
  /// The autocast switch a call is, as the model recorded it (on or off, restore, CPU or
  /// CUDA); std::nullopt for any other call.
  std::optional<ModelToggle> toggleAt(const CallExpr &Call) const;
  /// The autocast precision in force just before S, else the first place this unit switches
  /// autocast on; std::nullopt when autocast is on nowhere in sight.
  std::optional<PrecisionReason> autocastBefore(const Stmt &S) const;
  /// Whether the facts of the project's other units were given: what "nothing in the
  /// project does X" may be claimed from.
  bool seesWholeProject() const { return Facts != nullptr; }

  /// The dtype a value names: a torch dtype constant, a dtype or options parameter
  /// (parameterDtype), a member or variable given a half dtype somewhere in the project
  /// (`dtype_ = torch::kHalf`, a config field), or a local that nothing changes after its
  /// initializer (stableLocalDtype).
  std::optional<kb::Format> dtypeOf(const Expr *E) const;
  /// The dtype of a local dtype or options value that nothing changes after its initializer.
  std::optional<kb::Format> stableLocalDtype(const Expr *E) const;
  /// The dtype a dtype or options parameter holds: the one every call in this unit passes,
  /// or its default when no call is in sight.
  std::optional<kb::Format> parameterDtype(const ParmVarDecl &Param) const;
  /// The dtype a call passes explicitly: explicitDtype(), and the members dtypeOf() knows.
  std::optional<kb::Format> explicitDtypeOf(const TorchCall &Call) const;

private:
  ASTContext &Ctx;
  std::optional<kb::Precision> Declared;
  const ProjectFacts *Facts;
  const kb::KnowledgeBase *KB;
  PrecisionModel Model;
  struct Span {
    const FunctionDecl *Decl;
    std::string Key;
    FileID File;
    unsigned Begin, End;
  };
  std::vector<Span> Spans;
  llvm::DenseMap<const FunctionDecl *, size_t> SpanOf;
  struct RecordRange {
    const CXXRecordDecl *Decl;
    FileID File;
    unsigned Begin, End;
  };
  std::vector<RecordRange> Records;
  /// Members and variables given a dtype in this unit (the lowest one), by declaration.
  llvm::DenseMap<const ValueDecl *, DtypeFact> LocalDtypes;
  kb::Format GpuAutocastDtype = kb::Format::FP16, CpuAutocastDtype = kb::Format::BF16;
  /// The unit's LibTorch has the autocast API of 1.x (no set_autocast_dtype): CUDA autocast's
  /// op list is 1.13's (kb::Op::AutocastLegacy).
  bool LegacyAutocast = false;

  void collect();
  void collectFunction(const FunctionDecl &FD, Span &Where, ModelFunction &F);
  /// Records Call as an autocast switch or dtype setter of F; false when it is not an
  /// at::autocast call. A switch's dtype is set by collect() once the unit is read.
  bool collectAutocastCall(const CallExpr &Call, ModelFunction &F);
  void collectDtypes(const std::vector<const FunctionDecl *> &Functions,
                     const std::vector<const CXXRecordDecl *> &Classes);
  void applyFacts();
  const ModelFunction *modelOf(const FunctionDecl *FD) const;
  const Span *spanAt(SourceLocation Loc) const;
  Place placeOf(SourceLocation Loc) const;
  std::optional<kb::Format> knownFormatImpl(const Expr *E, int Depth) const;
  /// The format every value a local is given agrees on (ValueFlow::valuesGivenTo).
  std::optional<kb::Format> agreedFormat(const VarDecl &Var, int Depth) const;
  /// Locals agreedFormat is working out: the format assumed for a read of one inside its own
  /// values (`x = x * scale;`), none while the other values are judged.
  mutable llvm::DenseMap<const VarDecl *, std::optional<kb::Format>> FormatsInProgress;
  /// The expressions the current knownFormat question has read (MaxFormatSteps).
  mutable int FormatSteps = 0;
  /// The current knownFormat question met a value that holds a compile error.
  mutable bool FormatReadUnparsed = false;
  /// The format a call of a user function or lambda returns, when all its returns agree.
  std::optional<kb::Format> returnedFormat(const CallExpr &Call, int Depth) const;
  /// The format a read of a local has after `if (x.scalar_type() != F) x = x.to(F);` above it.
  std::optional<kb::Format> guardedFormat(const DeclRefExpr &Read, const VarDecl &Var,
                                          int Depth) const;
  /// The `if (x.scalar_type() != F)` guards without else of Var in Function, found with one
  /// walk of each body.
  const llvm::SmallVector<std::pair<const IfStmt *, kb::Format>, 2> &
  dtypeGuardsOf(const FunctionDecl &Function, const VarDecl &Var) const;
  mutable llvm::DenseSet<const FunctionDecl *> DtypeGuardsCollected;
  mutable llvm::DenseMap<const VarDecl *,
                         llvm::SmallVector<std::pair<const IfStmt *, kb::Format>, 2>>
      DtypeGuards;
  /// What a call of a function with no body in this unit returns, when its arguments say:
  /// the dtype of the options it is given, or the fp32 or bf16 its tensors agree on.
  std::optional<kb::Format> opaqueCallFormat(const CallExpr &Call, int Depth) const;
};

} // namespace clang::tidy::mpnanny

#endif
