//===--- main.cpp - mpnanny-check ------------------------------------------===//
//
// The pre-training door: runs the same checks as `clang-tidy --load
// libmpnanny-tidy.so`, linked in, and adds what a scan before training needs:
// finding LibTorch without a build, JSON output, the knowledge pages.
//
// Exit codes: 0 no finding, 1 findings, 2 usage or configuration error,
// 3 a file could not be read or parsed.
//
//===----------------------------------------------------------------------===//
#include "KnowledgeBase.h"
#include "Output.h"
#include "TorchHeaders.h"

#include "clang-tidy/ClangTidy.h"
#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "clang-tidy/ClangTidyOptions.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CommonOptionsParser.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <fstream>
#include <iostream>

using namespace clang;
using namespace clang::tidy;
using namespace llvm;

extern volatile int MpnannyModuleAnchorSource;
[[maybe_unused]] static int MpnannyModuleAnchorDestination = MpnannyModuleAnchorSource;

namespace {

cl::OptionCategory Category("mpnanny-check options");

cl::list<std::string> Sources(cl::Positional, cl::desc("<source files>"), cl::cat(Category));
cl::opt<std::string> BuildPath("p", cl::desc("Build folder holding compile_commands.json"),
                               cl::value_desc("build"), cl::cat(Category));
cl::opt<std::string> RulesDir("rules", cl::desc("Knowledge base directory (default: bundled rules)"),
                              cl::value_desc("dir"), cl::cat(Category));
cl::opt<std::string> PrecisionOpt(
    "precision",
    cl::desc("Force the precision instead of inferring it: fp32, fp16, bf16, autocast-fp16, "
             "autocast-bf16"),
    cl::cat(Category));
cl::opt<std::string> ChecksOpt("checks", cl::desc("Checks to run (clang-tidy glob)"),
                               cl::init("-*,mpnanny-*"), cl::cat(Category));
cl::opt<std::string> FormatOpt("format", cl::desc("Output: text (clang's format) or json"),
                               cl::init("text"), cl::cat(Category));
cl::opt<bool> FixOpt("fix", cl::desc("Apply the fix-its that are exact rewrites"), cl::cat(Category));
cl::opt<bool> ListChecks("list-checks", cl::desc("List the checks, one line each"),
                         cl::cat(Category));
cl::opt<std::string> Explain("explain", cl::desc("Print a check's knowledge page"),
                             cl::value_desc("check"), cl::cat(Category));
cl::list<std::string> ExtraArgs("extra-arg", cl::desc("Extra compiler argument"),
                                cl::cat(Category));

std::string knowledgeDir() {
  if (const char *Env = std::getenv("MPNANNY_KNOWLEDGE"); Env && *Env)
    return Env;
  if (sys::fs::is_directory(MPNANNY_INSTALLED_KNOWLEDGE_DIR))
    return MPNANNY_INSTALLED_KNOWLEDGE_DIR;
  return MPNANNY_KNOWLEDGE_DIR;
}

/// The first paragraph line of a knowledge page after its title: the one-line summary.
std::string summaryOf(const std::string &Check) {
  auto Buffer = MemoryBuffer::getFile(knowledgeDir() + "/" + Check + ".md");
  if (!Buffer)
    return "";
  SmallVector<StringRef, 32> Lines;
  (*Buffer)->getBuffer().split(Lines, '\n');
  for (StringRef L : Lines) {
    L = L.trim();
    if (L.empty() || L.startswith("#") || L.startswith("<!--"))
      continue;
    return L.str();
  }
  return "";
}

int fail(const Twine &Message, int Code) {
  errs() << "mpnanny-check: error: " << Message << "\n";
  return Code;
}

ClangTidyOptions overrideOptions() {
  ClangTidyOptions Override;
  Override.Checks = ChecksOpt;
  if (!PrecisionOpt.empty())
    Override.CheckOptions["Precision"] = ClangTidyOptions::ClangTidyValue(PrecisionOpt, 100);
  if (!RulesDir.empty())
    Override.CheckOptions["RulesDirectory"] = ClangTidyOptions::ClangTidyValue(RulesDir, 100);
  return Override;
}

std::unique_ptr<ClangTidyContext> makeContext() {
  ClangTidyGlobalOptions Global;
  ClangTidyOptions Defaults = ClangTidyOptions::getDefaults();
  Defaults.Checks = "-*,mpnanny-*";
  Defaults.HeaderFilterRegex = "";
  Defaults.SystemHeaders = false;
  auto Provider = std::make_unique<FileOptionsProvider>(Global, Defaults, overrideOptions(),
                                                        vfs::getRealFileSystem());
  return std::make_unique<ClangTidyContext>(std::move(Provider));
}

/// Flags for a file that no compilation database describes: C++17 and LibTorch's
/// headers as system headers, so nothing is reported from them.
std::vector<std::string> defaultFlags() {
  std::vector<std::string> Flags = {"-std=c++17", "-xc++"};
  for (const auto &Dir : mpnanny::check::findTorchIncludeDirs()) {
    Flags.push_back("-isystem");
    Flags.push_back(Dir);
  }
  return Flags;
}

} // namespace

int main(int argc, const char **argv) {
  // `-- <flags>` after the files: a fixed compilation database, as in clang-tidy.
  std::string FixedError;
  std::unique_ptr<tooling::CompilationDatabase> Compilations =
      tooling::FixedCompilationDatabase::loadFromCommandLine(argc, argv, FixedError);
  cl::HideUnrelatedOptions(Category);
  cl::SetVersionPrinter([](raw_ostream &OS) { OS << "mpnanny-check " MPNANNY_VERSION "\n"; });
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "mpnanny-check: finds fp16/bf16 hazards in LibTorch C++ code before training.\n\n"
          "  mpnanny-check -p build model.cpp      use the build's compile_commands.json\n"
          "  mpnanny-check model.cpp -- -I...      give the flags by hand\n",
          &errs()))
    return 2;

  if (FormatOpt != "text" && FormatOpt != "json")
    return fail("unknown --format '" + FormatOpt + "' (use text or json)", 2);
  if (!PrecisionOpt.empty() && !mpnanny::kb::parsePrecision(PrecisionOpt))
    return fail("unknown --precision '" + PrecisionOpt +
                    "' (use fp32, fp16, bf16, autocast-fp16 or autocast-bf16)",
                2);
  std::string Rules = RulesDir.empty() ? mpnanny::kb::KnowledgeBase::defaultDirectory() : RulesDir;
  try {
    mpnanny::kb::KnowledgeBase::cached(Rules);
  } catch (const mpnanny::kb::LoadError &E) {
    errs() << E.what() << "\n";
    return 2;
  }

  if (!Explain.empty()) {
    std::string Name = StringRef(Explain).startswith("mpnanny-") ? Explain : "mpnanny-" + Explain;
    auto Page = MemoryBuffer::getFile(knowledgeDir() + "/" + Name + ".md");
    if (!Page)
      Page = MemoryBuffer::getFile(knowledgeDir() + "/" + Explain + ".md");
    if (!Page)
      return fail("no knowledge page for '" + Explain + "' (see --list-checks)", 2);
    outs() << (*Page)->getBuffer();
    return 0;
  }

  auto Context = makeContext();
  if (ListChecks) {
    ClangTidyOptions Opts = ClangTidyOptions::getDefaults();
    Opts.Checks = ChecksOpt;
    for (const auto &Name : getCheckNames(Opts, false)) {
      std::string Summary = summaryOf(Name);
      outs() << Name << (Summary.empty() ? "" : "  " + Summary) << "\n";
    }
    return 0;
  }

  if (Sources.empty())
    return fail("no source file given (mpnanny-check -p build file.cpp, or file.cpp -- flags)", 2);

  std::vector<std::string> Files;
  bool Unreadable = false;
  for (const auto &S : Sources) {
    SmallString<256> Abs(S);
    sys::fs::make_absolute(Abs);
    if (!sys::fs::exists(Abs) || sys::fs::is_directory(Abs)) {
      errs() << "mpnanny-check: error: cannot read '" << S << "': no such file\n";
      Unreadable = true;
      continue;
    }
    Files.push_back(std::string(Abs));
  }

  if (!Compilations && !BuildPath.empty()) {
    std::string Error;
    Compilations = tooling::CompilationDatabase::autoDetectFromDirectory(BuildPath, Error);
    if (!Compilations)
      return fail("no compilation database in '" + BuildPath + "': " + Error +
                      " (configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)",
                  2);
  }
  if (!Compilations && !Files.empty()) {
    std::string Error;
    Compilations = tooling::CompilationDatabase::autoDetectFromSource(Files.front(), Error);
  }
  if (!Compilations)
    Compilations = std::make_unique<tooling::FixedCompilationDatabase>(".", defaultFlags());

  auto Adjusted = std::make_unique<tooling::ArgumentsAdjustingCompilations>(std::move(Compilations));
  Adjusted->appendArgumentsAdjuster(tooling::getInsertArgumentAdjuster(
      {"-resource-dir=" MPNANNY_CLANG_RESOURCE_DIR}, tooling::ArgumentInsertPosition::BEGIN));
  // GCC-only flags in a g++ build's database are noise to clang, not errors.
  Adjusted->appendArgumentsAdjuster(tooling::getInsertArgumentAdjuster(
      {"-Wno-unknown-warning-option", "-Wno-unused-command-line-argument"},
      tooling::ArgumentInsertPosition::END));
  if (!ExtraArgs.empty())
    Adjusted->appendArgumentsAdjuster(tooling::getInsertArgumentAdjuster(
        std::vector<std::string>(ExtraArgs.begin(), ExtraArgs.end()),
        tooling::ArgumentInsertPosition::END));

  std::vector<ClangTidyError> Errors;
  if (!Files.empty()) {
    auto BaseFS = makeIntrusiveRefCnt<vfs::OverlayFileSystem>(vfs::getRealFileSystem());
    Errors = runClangTidy(*Context, *Adjusted, Files, BaseFS, FixOpt);
    if (FormatOpt == "text" || FixOpt) {
      unsigned WarningsAsErrors = 0;
      // clang-tidy's own reporter prints the findings, so both doors read alike.
      handleErrors(Errors, *Context, FixOpt ? FB_Fix : FB_NoFix, WarningsAsErrors, BaseFS);
    }
  }

  std::vector<mpnanny::check::Finding> Findings =
      mpnanny::check::collectFindings(Errors, mpnanny::FindingLog::take());
  if (FormatOpt == "json") {
    nlohmann::json Out = nlohmann::json::array();
    for (const auto &F : Findings)
      Out.push_back(mpnanny::check::toJson(F));
    outs() << Out.dump(2) << "\n";
  }

  // A file that did not parse: its findings are printed, but the scan is incomplete.
  std::map<std::string, unsigned> ParseErrors;
  for (const auto &E : Errors)
    if (E.DiagLevel == tooling::Diagnostic::Error &&
        StringRef(E.DiagnosticName).startswith("clang-diagnostic"))
      ++ParseErrors[E.Message.FilePath.empty() ? "<command line>" : E.Message.FilePath];
  for (const auto &[File, Count] : ParseErrors)
    errs() << "mpnanny-check: error: " << File << ": " << Count
           << " compile error(s); the scan of this file is incomplete. Pass the build's flags "
              "with -p build (compile_commands.json) or after -- (-- -std=c++17 -I...)\n";
  if (Unreadable || !ParseErrors.empty())
    return 3;
  return Findings.empty() ? 0 : 1;
}
