//===--- MpnannyCheck.cpp - mpnanny ----------------------------------------===//
#include "MpnannyCheck.h"

#include "FindingLog.h"
#include "LlvmCompat.h"
#include "ParseHealth.h"
#include "ValueFlow.h"
#include "clang/AST/ASTContext.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

MpnannyCheck::MpnannyCheck(StringRef Name, ClangTidyContext *Context)
    : ClangTidyCheck(Name, Context), Name(Name.str()) {
  // Options may be given per check or once for all checks (`Precision: fp16`).
  std::string Forced = Options.getLocalOrGlobal("Precision", "").str();
  if (!Forced.empty()) {
    if (auto P = kb::parsePrecision(Forced))
      DeclaredPrecision = P;
    else
      configurationDiag("invalid Precision '%0' for %1: use fp32, fp16, bf16, autocast-fp16 "
                        "or autocast-bf16")
          << Forced << Name;
  }
  RulesDirectory = Options.getLocalOrGlobal("RulesDirectory", "").str();
  // Read as text: the bool overloads are defined in clang-tidy's own library, which a plugin
  // loaded into another clang-tidy binary cannot count on.
  KeepGoing =
      !llvm::StringRef(Options.getLocalOrGlobal("KeepGoing", "true")).equals_insensitive("false");
  FactsFile = Options.getLocalOrGlobal("FactsFile", "").str();
  // mpnanny-check says who named the file (--facts, .mpnanny.yaml); clang-tidy reads the option.
  FactsFileNamedBy =
      Options.getLocalOrGlobal("FactsFileNamedBy", "the FactsFile option (.clang-tidy)").str();
  ReportsSystemHeaders = Context->getOptions().SystemHeaders.value_or(false);
  std::string Dir = RulesDirectory.empty() ? kb::KnowledgeBase::defaultDirectory() : RulesDirectory;
  try {
    KB = kb::KnowledgeBase::cached(Dir);
  } catch (const kb::LoadError &E) {
    configurationDiag("%0") << E.what();
  }
}

void MpnannyCheck::storeOptions(ClangTidyOptions::OptionMap &Opts) {
  Options.store(Opts, "Precision", DeclaredPrecision ? kb::toString(*DeclaredPrecision) : "");
  Options.store(Opts, "RulesDirectory", RulesDirectory);
  Options.store(Opts, "KeepGoing", KeepGoing ? "true" : "false");
  Options.store(Opts, "FactsFile", FactsFile);
}

void MpnannyCheck::registerPPCallbacks(const SourceManager &, Preprocessor *PP, Preprocessor *) {
  if (KeepGoing && PP)
    parse_health::keepGoing(*PP);
}

void MpnannyCheck::ParseSummary::run(const MatchFinder::MatchResult &Result) {
  parse_health::summarize(Check.precisionContext(*Result.Context), *Result.Context);
}

void MpnannyCheck::onStartOfTranslationUnit() {
  PrecisionContext::reset();
  ValueFlow::reset();
  Facts.reset();
  FactsLookedFor = false;
}

/// mpnanny-facts.json in Dir or a folder above it.
static std::string factsFileAbove(llvm::StringRef Dir) {
  llvm::SmallString<256> Path(Dir);
  while (!Path.empty()) {
    llvm::SmallString<256> Candidate(Path);
    llvm::sys::path::append(Candidate, ProjectFacts::FileName);
    if (llvm::sys::fs::is_regular_file(Candidate))
      return std::string(Candidate);
    llvm::StringRef Parent = llvm::sys::path::parent_path(Path);
    if (Parent == Path)
      break;
    Path = Parent;
  }
  return "";
}

const ProjectFacts *MpnannyCheck::projectFacts(ASTContext &Ctx) const {
  if (FactsLookedFor)
    return Facts.get();
  FactsLookedFor = true;
  if (FactsFile == "none")
    return nullptr;
  std::string Path = FactsFile;
  if (Path.empty()) {
    // Next to the compilation database: the compile command's folder (clang-tidy makes it the
    // working directory) is the build folder or below it; then the source's own folders.
    const SourceManager &SM = Ctx.getSourceManager();
    if (auto Cwd = SM.getFileManager().getVirtualFileSystem().getCurrentWorkingDirectory())
      Path = factsFileAbove(*Cwd);
    if (Path.empty())
      if (OptionalFileEntryRef Main = SM.getFileEntryRefForID(SM.getMainFileID())) {
        llvm::SmallString<256> Dir(realPathOrName(*Main));
        llvm::sys::path::remove_filename(Dir);
        Path = factsFileAbove(Dir);
      }
    if (Path.empty())
      return nullptr;
  }
  std::string Error;
  Facts = ProjectFacts::load(Path, Error);
  if (!Facts)
    configurationDiag("the project's facts were not read (%0); each file is scanned on its own "
                      "(the file was %1)")
        << Error
        << (FactsFile.empty() ? "found above the compile command's folder"
                              : "named by " + FactsFileNamedBy);
  return Facts.get();
}

std::vector<Decl *> userTopLevelDecls(ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  std::vector<Decl *> User;
  // decls(), not noload_decls(): a user header inside a precompiled header is user code.
  // Only the top level of the precompiled header is read, not what namespaces hold.
  for (Decl *D : Ctx.getTranslationUnitDecl()->decls()) {
    SourceLocation Where = D->getLocation();
    // Invalid: the compiler's implicit declarations (__builtin_va_list, __int128_t).
    if (Where.isValid() && !SM.isInSystemHeader(Where))
      User.push_back(D);
  }
  return User;
}

void MpnannyCheck::UserCodeScope::run(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  const std::vector<Decl *> &Current = Ctx.getTraversalScope();
  // Another mpnanny check (or a tool) limited it already for this translation unit.
  if (Current.size() != 1 || !isa<TranslationUnitDecl>(Current.front()))
    return;
  std::vector<Decl *> User = userTopLevelDecls(Ctx);
  // MPNANNY_DEBUG_SCAN: what the tests look at to see that LibTorch is not walked.
  if (const char *Debug = std::getenv("MPNANNY_DEBUG_SCAN"); Debug && *Debug) {
    size_t All = 0;
    for ([[maybe_unused]] Decl *D : Ctx.getTranslationUnitDecl()->decls())
      ++All;
    llvm::errs() << "mpnanny: traversal scope: " << User.size() << " of " << All
                 << " top-level declarations\n";
  }
  Ctx.setTraversalScope(User);
}

void MpnannyCheck::registerMatchers(MatchFinder *Finder) {
  // The translation unit is matched before anything inside it is visited, so the scope
  // set here applies to the whole traversal of every check.
  if (!ReportsSystemHeaders)
    Finder->addMatcher(translationUnitDecl(), &Scope);
  if (KeepGoing)
    Finder->addMatcher(translationUnitDecl(), &Summary);
  registerCheckMatchers(Finder);
}

const PrecisionContext &MpnannyCheck::precisionContext(ASTContext &Ctx) const {
  return PrecisionContext::get(Ctx, DeclaredPrecision, projectFacts(Ctx), knowledgeBase());
}

namespace {
AST_MATCHER_P(FunctionDecl, isNamedIn, std::shared_ptr<llvm::StringSet<>>, Names) {
  if (Node.getOverloadedOperator() == OO_Call)
    return true; // module calls through ModuleHolder::operator()
  return Node.getIdentifier() && Names->count(Node.getName());
}
} // namespace

ast_matchers::internal::BindableMatcher<Stmt> MpnannyCheck::knowledgeBaseCall() const {
  auto Names = std::make_shared<llvm::StringSet<>>();
  if (KB)
    for (const auto &Op : KB->ops()) {
      for (const auto &N : Op.Functions)
        Names->insert(N);
      for (const auto &N : Op.Methods)
        Names->insert(N);
      for (const auto &N : Op.Functional)
        Names->insert(N);
      if (!Op.Modules.empty())
        Names->insert("forward");
    }
  return callExpr(unless(isExpansionInSystemHeader()), callee(functionDecl(isNamedIn(Names))));
}

/// The flagged expression's source text with whitespace collapsed, so that a site id
/// survives reformatting and edits elsewhere in the file.
static std::string normalizedText(const Stmt *S, const ASTContext &Ctx) {
  if (!S)
    return "";
  const SourceManager &SM = Ctx.getSourceManager();
  CharSourceRange Range = CharSourceRange::getTokenRange(S->getSourceRange());
  llvm::StringRef Text = Lexer::getSourceText(Range, SM, Ctx.getLangOpts());
  std::string Out;
  bool Space = false;
  for (char C : Text) {
    if (C == ' ' || C == '\t' || C == '\n' || C == '\r') {
      Space = true;
      continue;
    }
    if (Space && !Out.empty())
      Out += ' ';
    Space = false;
    Out += C;
  }
  return Out;
}

void MpnannyCheck::report(ASTContext &Ctx, const Subject &About, SourceLocation Loc,
                          llvm::StringRef Message, llvm::StringRef Fix, const PrecisionReason &Why,
                          std::optional<FixItHint> Exact) {
  // A function the compiler could not parse whole is judged only before its first error.
  if (parse_health::inUncheckedPart(About.Node, About.Node ? About.Node->getBeginLoc() : Loc,
                                    precisionContext(Ctx), Ctx))
    return;
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation Spelled = SM.getFileLoc(Loc);
  ::mpnanny::FindingDetail Detail;
  Detail.Check = Name;
  Detail.File = SM.getFilename(Spelled).str();
  Detail.Offset = SM.getFileOffset(Spelled);
  Detail.Line = SM.getSpellingLineNumber(Spelled);
  Detail.Column = SM.getSpellingColumnNumber(Spelled);
  if (About.Node)
    if (const FunctionDecl *FD = precisionContext(Ctx).enclosingFunction(*About.Node))
      Detail.Function = FD->getQualifiedNameAsString();
  Detail.Expression = normalizedText(About.Node, Ctx);
  if (About.Op)
    Detail.AtenOps = About.Op->Aten;
  Detail.Risk = kb::toString(About.Risk);
  Detail.Severity = kb::toString(About.Severity);
  Detail.Precision = About.Format;
  Detail.Fix = Fix.str();
  ::mpnanny::FindingLog::record(std::move(Detail));

  {
    auto D = diag(Loc, "%0");
    D << Message;
    if (Exact)
      D << *Exact;
  }
  if (!Fix.empty())
    diag(Loc, "%0", DiagnosticIDs::Note) << Fix;
  if (Why.Where.isValid())
    diag(Why.Where, "%0 context: %1", DiagnosticIDs::Note) << kb::toString(Why.Value) << Why.Why;
  else if (Why.Elsewhere.valid())
    // The reason lies in another file of the project (its facts): named in the text.
    diag(Loc, "%0 context: %1, at %2", DiagnosticIDs::Note)
        << kb::toString(Why.Value) << Why.Why << Why.Elsewhere.str();
}

std::string MpnannyCheck::expand(llvm::StringRef Template, llvm::StringRef Op,
                                 llvm::StringRef Precision) {
  std::string Out;
  while (!Template.empty()) {
    size_t Open = Template.find('{');
    if (Open == llvm::StringRef::npos) {
      Out += Template.str();
      break;
    }
    Out += Template.substr(0, Open).str();
    Template = Template.substr(Open);
    if (Template.starts_with("{op}")) {
      Out += Op.str();
      Template = Template.drop_front(4);
    } else if (Template.starts_with("{precision}")) {
      Out += Precision.str();
      Template = Template.drop_front(11);
    } else {
      Out += '{';
      Template = Template.drop_front(1);
    }
  }
  return Out;
}

const FormatLimits &limitsOf(kb::Format F) {
  static const FormatLimits FP16{65504.0, 6.103515625e-5, 5.9604644775390625e-8, 9.765625e-4};
  static const FormatLimits BF16{3.3895313892515355e38, 1.1754943508222875e-38,
                                 9.183549615799121e-41, 7.8125e-3};
  static const FormatLimits FP32{3.4028234663852886e38, 1.1754943508222875e-38,
                                 1.401298464324817e-45, 1.1920928955078125e-7};
  switch (F) {
  case kb::Format::FP16: return FP16;
  case kb::Format::BF16: return BF16;
  case kb::Format::FP32: return FP32;
  }
  return FP32;
}

/// 1e-08 -> 1e-8, -1e+09 -> -1e9, 1.1920929e-07 -> 1.1920929e-7: the way people write
/// constants in code.
static std::string asWrittenInCode(std::string S) {
  size_t E = S.find('e');
  if (E == std::string::npos)
    return S;
  std::string Mantissa = S.substr(0, E), Exponent = S.substr(E + 1);
  bool Negative = !Exponent.empty() && Exponent[0] == '-';
  if (!Exponent.empty() && (Exponent[0] == '-' || Exponent[0] == '+'))
    Exponent.erase(0, 1);
  Exponent.erase(0, std::min(Exponent.find_first_not_of('0'), Exponent.size() - 1));
  return Mantissa + "e" + (Negative ? "-" : "") + Exponent;
}

std::string formatNumber(double V) {
  char Buf[40];
  if (V == std::floor(V) && std::fabs(V) < 1e7) {
    std::snprintf(Buf, sizeof Buf, "%.0f", V);
    return Buf;
  }
  std::snprintf(Buf, sizeof Buf, "%.3g", V);
  return asWrittenInCode(Buf);
}

std::string formatExact(double V) {
  char Buf[40];
  for (int Digits = 1; Digits <= 17; ++Digits) {
    std::snprintf(Buf, sizeof Buf, "%.*g", Digits, V);
    if (std::strtod(Buf, nullptr) == V)
      break;
  }
  return asWrittenInCode(Buf);
}

} // namespace clang::tidy::mpnanny
