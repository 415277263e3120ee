//===--- MpnannyCheck.h - mpnanny --------------------------------*- C++ -*-===//
//
// What every mpnanny check shares: the options `Precision` and `RulesDirectory`,
// the knowledge base, the precision context, the matcher for knowledge-base ops,
// and the shape of a finding (a warning, a note with the fix, a note saying why
// the code is in that precision). See knowledge/README.md.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_MPNANNYCHECK_H
#define MPNANNY_CHECKS_MPNANNYCHECK_H

#include "KnowledgeBase.h"
#include "PrecisionContext.h"
#include "ProjectFacts.h"
#include "clang-tidy/ClangTidyCheck.h"
#include "clang/ASTMatchers/ASTMatchers.h"
#include <memory>
#include <optional>

namespace clang::tidy::mpnanny {

class MpnannyCheck : public ClangTidyCheck {
public:
  MpnannyCheck(StringRef Name, ClangTidyContext *Context);
  void storeOptions(ClangTidyOptions::OptionMap &Opts) override;
  void onStartOfTranslationUnit() override;
  /// Before the parse: asks the compiler to keep going past fatal errors (ParseHealth.h).
  void registerPPCallbacks(const SourceManager &SM, Preprocessor *PP,
                           Preprocessor *ModuleExpanderPP) override;
  /// Limits the traversal to the user's code, then lets the check add its matchers.
  void registerMatchers(ast_matchers::MatchFinder *Finder) final;
  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus;
  }

protected:
  /// The check's own matchers (registerMatchers() is taken by the traversal scope).
  virtual void registerCheckMatchers(ast_matchers::MatchFinder *Finder) = 0;

  /// Null when the rules could not be loaded (reported once as a configuration error).
  const kb::KnowledgeBase *knowledgeBase() const { return KB.get(); }
  const PrecisionContext &precisionContext(ASTContext &Ctx) const;

  /// Calls of any op the knowledge base names, in user code only.
  ast_matchers::internal::BindableMatcher<Stmt> knowledgeBaseCall() const;

  /// What a finding is about, beyond its message: for the sites file and JSON.
  struct Subject {
    const Stmt *Node = nullptr; ///< the flagged expression
    const kb::Op *Op = nullptr; ///< its knowledge-base entry, for the ATen ops
    kb::RiskKind Risk = kb::RiskKind::Overflow;
    kb::Severity Severity = kb::Severity::Warning;
    std::string Format; ///< the format the code computes in
  };

  /// One finding: the warning, the fix as a note (and a fix-it when it is exact),
  /// and where the precision comes from.
  void report(ASTContext &Ctx, const Subject &About, SourceLocation Loc, llvm::StringRef Message,
              llvm::StringRef Fix, const PrecisionReason &Why,
              std::optional<FixItHint> Exact = std::nullopt);

  /// Replaces {op} and {precision} in a knowledge-base message.
  static std::string expand(llvm::StringRef Template, llvm::StringRef Op,
                            llvm::StringRef Precision);

  /// The project's precision (the Precision option), for code that shows none of its own.
  std::optional<kb::Precision> DeclaredPrecision;
  std::string RulesDirectory;
  /// The project's facts file (ProjectFacts.h): a path, "none", or "" to look for
  /// mpnanny-facts.json from the compile command's folder and the file's folder upward.
  std::string FactsFile;
  std::string FactsFileNamedBy; ///< for the message when FactsFile cannot be read

private:
  /// Sets the translation unit's traversal scope to the top-level declarations outside
  /// system headers, before any matcher or analysis walks it: LibTorch and the standard
  /// library (included with -isystem) are then never visited, and the parent map is
  /// built over the user's code alone. Left alone when system headers are reported.
  class UserCodeScope : public ast_matchers::MatchFinder::MatchCallback {
  public:
    void run(const ast_matchers::MatchFinder::MatchResult &Result) override;
  };

  /// Logs, once per translation unit, the functions left unchecked by compile errors.
  class ParseSummary : public ast_matchers::MatchFinder::MatchCallback {
  public:
    explicit ParseSummary(const MpnannyCheck &Check) : Check(Check) {}
    void run(const ast_matchers::MatchFinder::MatchResult &Result) override;

  private:
    const MpnannyCheck &Check;
  };

  /// The facts of this translation unit's project, found and read once per unit.
  const ProjectFacts *projectFacts(ASTContext &Ctx) const;

  std::shared_ptr<const kb::KnowledgeBase> KB;
  std::string Name;
  mutable std::shared_ptr<const ProjectFacts> Facts;
  mutable bool FactsLookedFor = false;
  UserCodeScope Scope;
  ParseSummary Summary{*this};
  bool ReportsSystemHeaders = false;
  bool KeepGoing = true;
};

/// The top-level declarations of the translation unit that are not in system headers
/// (those of a precompiled header's user files included), in their order.
std::vector<Decl *> userTopLevelDecls(ASTContext &Ctx);

/// Format limits (derived from IEEE binary16 / bfloat16; see shared KNOWLEDGE.md).
struct FormatLimits {
  double Max;          ///< largest finite value
  double MinNormal;    ///< smallest normal
  double MinSubnormal; ///< smallest subnormal; values below half of it round to 0
  double Epsilon;
  /// Non-zero values below this round to 0 (half the smallest subnormal).
  double flushBelow() const { return MinSubnormal / 2; }
};
const FormatLimits &limitsOf(kb::Format F);
/// Prints a number the way a user would write it in a message: 65504, 1e-08, 5.96e-08.
std::string formatNumber(double V);
/// A number with as many digits as it takes to tell it from its neighbours in a double, for
/// messages about rounding: 0.9999999, 0.99902344, 1.1920929e-7.
std::string formatExact(double V);

} // namespace clang::tidy::mpnanny

#endif
