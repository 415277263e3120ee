//===--- PrecisionContext.h - mpnanny ----------------------------*- C++ -*-===//
//
// The precision each piece of user code computes in: fp32, fp16, bf16 (a model or
// tensors converted to half), or autocast-fp16 / autocast-bf16. Inferred once per
// translation unit from conversions (`.to(torch::kHalf)`, `module->to(kBFloat16)`),
// autocast switches (1.13 and 2.4+ spellings, and user guard classes that flip
// them), and the calls between user functions; or forced by an option.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_PRECISIONCONTEXT_H
#define MPNANNY_CHECKS_PRECISIONCONTEXT_H

#include "KnowledgeBase.h"
#include "TorchCalls.h"
#include "clang/AST/ASTContext.h"
#include "clang/Basic/SourceLocation.h"
#include "llvm/ADT/DenseMap.h"
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::mpnanny {

/// Why code has the precision it has, for the note under a finding.
struct PrecisionReason {
  kb::Precision Value = kb::Precision::FP32;
  SourceLocation Where;
  std::string Why;
};

class PrecisionContext {
public:
  /// The analysis of the translation unit that Ctx holds; built on first use.
  static const PrecisionContext &get(ASTContext &Ctx, std::optional<kb::Precision> Forced);
  /// Forgets the cached analysis; called when a new translation unit starts.
  static void reset();

  PrecisionContext(ASTContext &Ctx, std::optional<kb::Precision> Forced);
  ~PrecisionContext();

  /// The precision at a statement of user code, with the reason.
  PrecisionReason at(const Stmt &S) const;
  /// The user function whose body holds S (lambdas count as their enclosing function).
  const FunctionDecl *enclosingFunction(const Stmt &S) const;

  /// The format a tensor expression is known to have from the code itself
  /// (`x.to(torch::kFloat)`, a local initialized from one, an op on such a tensor).
  std::optional<kb::Format> knownFormat(const Expr *E) const;

  /// The format the op computes in at this call; std::nullopt when autocast bans it.
  std::optional<kb::Format> computeFormatOf(const TorchCall &Call, const kb::Op *Op) const;

  /// Records of user code converted to a format by `module->to(...)` anywhere in the TU.
  std::optional<kb::Format> moduleConversion(const CXXRecordDecl *RD) const;

  struct FunctionFacts;

private:
  ASTContext &Ctx;
  std::optional<kb::Precision> Forced;
  std::vector<std::unique_ptr<FunctionFacts>> Functions;
  llvm::DenseMap<const FunctionDecl *, FunctionFacts *> ByDecl;
  llvm::DenseMap<const CXXRecordDecl *, std::pair<kb::Format, SourceLocation>> Converted;
  struct RecordRange {
    const CXXRecordDecl *Decl;
    FileID File;
    unsigned Begin, End;
  };
  std::vector<RecordRange> Records;

  void collect();
  void markConverted(const CXXRecordDecl *RD, kb::Format F, SourceLocation Where);
  void propagate();
  PrecisionReason precisionIn(const FunctionFacts &F, SourceLocation Loc) const;
};

} // namespace clang::tidy::mpnanny

#endif
