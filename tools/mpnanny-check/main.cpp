//===--- main.cpp - mpnanny-check ------------------------------------------===//
//
// The pre-training door: runs the same checks as `clang-tidy --load
// libmpnanny-tidy.so`, linked in, and adds what a scan before training needs:
// finding LibTorch without a build, whole-project scans on N threads, JSON and
// SARIF output, the sites file for the runtime, the knowledge pages.
//
// Exit codes: 0 no finding at or above --fail-on, 1 findings, 2 usage or
// configuration error, 3 a file could not be read or parsed.
//
//===----------------------------------------------------------------------===//
#include "Diff.h"
#include "FactsPass.h"
#include "KnowledgeBase.h"
#include "Output.h"
#include "Pages.h"
#include "ProjectFile.h"
#include "Sarif.h"
#include "Scan.h"
#include "Scanner.h"
#include "TorchHeaders.h"
#include "Verified.h"

#include "clang-tidy/ClangTidy.h"
#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "clang-tidy/ClangTidyOptions.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CommonOptionsParser.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <map>
#include <optional>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

using namespace clang;
using namespace clang::tidy;
using namespace llvm;

extern volatile int MpnannyModuleAnchorSource;
[[maybe_unused]] static int MpnannyModuleAnchorDestination = MpnannyModuleAnchorSource;

namespace {

cl::OptionCategory Category("mpnanny-check options");

cl::list<std::string> Sources(cl::Positional, cl::desc("<source files>"), cl::cat(Category));
cl::opt<std::string> BuildPath("p",
                               cl::desc("Build folder holding compile_commands.json; with no "
                                        "file, scan every project file it lists"),
                               cl::value_desc("build"), cl::cat(Category));
cl::opt<unsigned> Jobs("j", cl::desc("Files scanned in parallel (default: number of cores)"),
                       cl::init(0), cl::value_desc("N"), cl::cat(Category));
cl::opt<std::string> RulesDir("rules",
                              cl::desc("Knowledge base directory (default: bundled rules)"),
                              cl::value_desc("dir"), cl::cat(Category));
// The vocabulary's names; cl::desc keeps a reference, so the text lives as long as the option.
const std::string PrecisionHelp =
    "The precision the project runs in, for code that shows none of its own (explicit "
    "conversions and autocast switches still win): " +
    mpnanny::vocab::joinedNames<mpnanny::vocab::Precision>() +
    "; overrides the project file's Precision";
cl::opt<std::string> PrecisionOpt("precision", cl::desc(PrecisionHelp), cl::cat(Category));
cl::opt<std::string> ChecksOpt("checks", cl::desc("Checks to run (clang-tidy glob)"),
                               cl::init("-*,mpnanny-*"), cl::cat(Category));
cl::opt<std::string> FormatOpt("format",
                               cl::desc("Output: text (clang's format), json or sarif (2.1.0)"),
                               cl::init("text"), cl::cat(Category));
cl::opt<std::string> ExportSites(
    "export-sites",
    cl::desc("Write the sites file the runtime verifies (default name: mpnanny-sites.json)"),
    cl::value_desc("file"), cl::ValueOptional, cl::cat(Category));
cl::opt<std::string>
    FailOn("fail-on",
           cl::desc("Lowest severity that makes the exit code 1: note, "
                    "warning (default) or error"),
           cl::init(std::string(mpnanny::vocab::name(mpnanny::vocab::Severity::Warning))),
           cl::cat(Category));
cl::opt<bool> FixOpt("fix", cl::desc("Apply the fix-its that are exact rewrites"),
                     cl::cat(Category));
cl::opt<bool> ListChecks("list-checks", cl::desc("List the checks, one line each"),
                         cl::cat(Category));
cl::opt<std::string> Explain("explain", cl::desc("Print a check's knowledge page"),
                             cl::value_desc("check"), cl::cat(Category));
cl::list<std::string> ExtraArgs("extra-arg", cl::desc("Extra compiler argument"),
                                cl::cat(Category));
cl::opt<std::string> CacheDir("cache-dir",
                              cl::desc("Where the LibTorch header cache lives (default: "
                                       "$XDG_CACHE_HOME/mpnanny, else ~/.cache/mpnanny)"),
                              cl::value_desc("dir"), cl::cat(Category));
cl::opt<bool> NoCache("no-cache", cl::desc("Parse every header every time"), cl::cat(Category));
cl::opt<bool> WaitForCache(
    "wait-for-cache",
    cl::desc("Build a missing header cache entry inside this scan and wait for it (by default a "
             "single file's entry is built by a detached process, so that the scan ends as soon "
             "as a scan without the cache would)"),
    cl::cat(Category));
// What the detached process runs: the scan's own command line, building entries only.
cl::opt<bool> BuildCacheOnly("build-cache-only", cl::Hidden,
                             cl::desc("Build the header cache entries of the files, scan nothing"),
                             cl::cat(Category));
// The scan that started the build: two parses of LibTorch at once share the memory bus and the
// caches, and slowed the scan by about 8 % on 2 cores, so the build starts when the scan ends.
cl::opt<int> BuildAfterPid("build-cache-after-pid", cl::Hidden, cl::init(0),
                           cl::desc("With --build-cache-only: wait for this process to end"),
                           cl::cat(Category));
cl::opt<unsigned> Timeout("timeout",
                          cl::desc("Seconds one file may take before its scan is stopped "
                                   "(default 300; 0: no limit)"),
                          cl::init(300), cl::value_desc("s"), cl::cat(Category));
cl::opt<std::string>
    VerifiedDb("verified",
               cl::desc("Show each finding with its verdict from a MPNANNY_VERIFY=1 "
                        "run's database (nanny_logs/metrics.db)"),
               cl::value_desc("metrics.db"), cl::cat(Category));
cl::opt<std::string> HideCleared(
    "hide-cleared",
    cl::desc("With --verified: hide findings that run time showed healthy (NOT_OBSERVED) on at "
             "least N steps (--hide-cleared=N, default 100)"),
    cl::value_desc("N"), cl::ValueOptional, cl::cat(Category));
cl::opt<std::string> FactsOpt(
    "facts",
    cl::desc("The project's facts file (default: mpnanny-facts.json next to the compilation "
             "database, updated by every whole-project scan); 'none' reads none"),
    cl::value_desc("file"), cl::cat(Category));
cl::opt<bool> CollectFacts("collect-facts",
                           cl::desc("Only bring the project's facts file up to date (with -p: "
                                    "every file of the database, or the files given)"),
                           cl::cat(Category));
cl::opt<std::string> ExportCommands(
    "export-compile-commands",
    cl::desc("Write the compile commands of the files as this scan runs them (nvcc's translated, "
             "CUDA files with their flags) to a compile_commands.json, for clang-tidy -p"),
    cl::value_desc("file"), cl::cat(Category));
cl::opt<bool> CheckProfile("enable-check-profile",
                           cl::desc("Print each check's matching time per file to stderr"),
                           cl::cat(Category));

cl::opt<std::string> DiffOpt(
    "diff",
    cl::desc("Scan the files a unified diff (git diff -U0) touches and report only the findings "
             "on the lines it adds or changes: --diff=FILE, or --diff (or --diff=-) to read it "
             "from stdin"),
    cl::value_desc("file"), cl::ValueOptional, cl::cat(Category));
cl::opt<std::string> DiffBase("diff-base",
                              cl::desc("As --diff, with the diff of `git diff -U0 REV` run in "
                                       "the current directory's repository"),
                              cl::value_desc("rev"), cl::cat(Category));

const char *const DefaultSitesFile = "mpnanny-sites.json";

int fail(const Twine &Message, int Code) {
  errs() << "mpnanny-check: error: " << Message << "\n";
  return Code;
}

/// What the command line and the project file (.mpnanny.yaml) decide, the command line first.
struct Settings {
  mpnanny::check::ScanOptions Scan;
  std::optional<mpnanny::check::ProjectFile> Project;
  std::string FactsPath; ///< where the facts are read (and, for a whole project, written)
  /// Who named FactsPath ("--facts", a project file's path); "" when it is only the default
  /// next to the build's compile_commands.json, which a one-file scan may well not have.
  std::string FactsNamedBy;
};

Settings TheSettings;

std::unique_ptr<ClangTidyContext> makeContext() {
  return mpnanny::check::makeContext(TheSettings.Scan);
}

std::vector<std::string> extraArgs() { return {ExtraArgs.begin(), ExtraArgs.end()}; }

std::unique_ptr<tooling::CompilationDatabase>
adjusted(std::unique_ptr<tooling::CompilationDatabase> Base) {
  return mpnanny::check::adjusted(std::move(Base), extraArgs());
}

/// Note 0, warning 1, error 2 (the vocabulary's order); anything else counts as a note.
int severityRank(StringRef S) {
  auto Level =
      mpnanny::vocab::parse<mpnanny::vocab::Severity>(std::string_view(S.data(), S.size()));
  return static_cast<int>(Level.value_or(mpnanny::vocab::Severity::Note));
}

/// `--export-sites FILE` as well as `--export-sites=FILE`: an optional value is only
/// taken after '=' by the command-line library, so a following *.json is joined to it.
std::vector<const char *> joinOptionalValues(int Argc, const char **Argv,
                                             std::vector<std::string> &Storage) {
  std::vector<const char *> Out;
  Storage.reserve(Argc);
  for (int I = 0; I < Argc; ++I) {
    StringRef A(Argv[I]);
    if ((A == "--export-sites" || A == "-export-sites") && I + 1 < Argc &&
        !StringRef(Argv[I + 1]).starts_with("-") && StringRef(Argv[I + 1]).ends_with(".json")) {
      Storage.push_back("--export-sites=" + std::string(Argv[I + 1]));
      Out.push_back(Storage.back().c_str());
      ++I;
      continue;
    }
    Out.push_back(Argv[I]);
  }
  return Out;
}

/// For --fix with JSON or SARIF output, where clang-tidy's reporter would print text
/// into the document: applies each finding's edits, file by file.
bool applyEdits(const std::vector<mpnanny::check::Finding> &Findings) {
  std::map<std::string, tooling::Replacements> ByFile;
  for (const auto &F : Findings)
    for (const auto &E : F.Edits) {
      tooling::Replacement R(E.File, E.Offset, E.Length, E.Text);
      if (auto Err = ByFile[E.File].add(R)) {
        consumeError(std::move(Err)); // overlaps an earlier fix: keep the first
        continue;
      }
    }
  bool Ok = true;
  for (const auto &[File, Replacements] : ByFile) {
    auto Buffer = MemoryBuffer::getFile(File);
    if (!Buffer) {
      Ok = false;
      continue;
    }
    auto Fixed = tooling::applyAllReplacements((*Buffer)->getBuffer(), Replacements);
    if (!Fixed) {
      errs() << "mpnanny-check: error: cannot apply fixes to " << File << ": "
             << toString(Fixed.takeError()) << "\n";
      Ok = false;
      continue;
    }
    std::error_code EC;
    raw_fd_ostream Out(File, EC);
    if (EC) {
      Ok = false;
      continue;
    }
    Out << *Fixed;
    errs() << "mpnanny-check: applied " << Replacements.size() << " fix(es) to " << File << "\n";
  }
  return Ok;
}

} // namespace

namespace {

/// The files to scan and each one's commands.
struct Inputs {
  std::vector<std::string> Files;
  std::vector<std::vector<tooling::CompileCommand>> Commands;
  bool WholeProject = false;
  bool Unreadable = false;
  /// The project's sources in the compilation database (-p), scanned or not.
  size_t ProjectFileCount = 0;
};

/// Checks the options that take a word; 0 when all are good, else the exit code.
int validateOptions() {
  namespace vocab = mpnanny::vocab;
  if (FormatOpt != "text" && FormatOpt != "json" && FormatOpt != "sarif")
    return fail("unknown --format '" + FormatOpt + "' (use text, json or sarif)", 2);
  if (!vocab::parse<vocab::Severity>(FailOn))
    return fail("unknown --fail-on '" + FailOn + "' (use " +
                    vocab::choices(vocab::names<vocab::Severity>()) + ")",
                2);
  if (!PrecisionOpt.empty() && !vocab::parse<vocab::Precision>(PrecisionOpt))
    return fail("unknown --precision '" + PrecisionOpt + "' (use " +
                    vocab::choices(vocab::names<vocab::Precision>()) + ")",
                2);
  return 0;
}

/// --hide-cleared: -1 (hide nothing) or the number of steps, or nullopt after an error.
std::optional<int64_t> clearedAfterSteps(bool HaveVerdicts) {
  if (!HideCleared.getNumOccurrences())
    return -1;
  if (!HaveVerdicts) {
    fail("--hide-cleared needs --verified metrics.db", 2);
    return std::nullopt;
  }
  char *End = nullptr;
  const long long N = HideCleared.empty() ? 100 : std::strtoll(HideCleared.c_str(), &End, 10);
  if ((!HideCleared.empty() && *End != '\0') || N < 0) {
    fail("--hide-cleared takes a number of steps, not '" + HideCleared + "'", 2);
    return std::nullopt;
  }
  return N;
}

/// --explain and --list-checks: what answers without scanning. Nullopt when neither is asked.
std::optional<int> answerWithoutScanning(const std::vector<std::string> &CheckNames) {
  if (!Explain.empty()) {
    auto Page = mpnanny::check::pageOf(Explain);
    if (!Page)
      return fail("no knowledge page for '" + Explain + "' (see --list-checks)", 2);
    outs() << *Page;
    return 0;
  }
  if (ListChecks) {
    for (const auto &Name : CheckNames) {
      auto Page = mpnanny::check::pageOf(Name);
      std::string Summary = Page ? mpnanny::check::summaryOf(*Page) : "";
      outs() << Name << (Summary.empty() ? "" : "  " + Summary) << "\n";
    }
    return 0;
  }
  return std::nullopt;
}

/// The project file, then the options: the command line wins over the project file, which
/// wins over `.clang-tidy` (read per file by the checks). 0, or the exit code of an error.
int settle(const Inputs &In) {
  std::string Dir = !BuildPath.empty()  ? std::string(BuildPath)
                    : !In.Files.empty() ? sys::path::parent_path(In.Files.front()).str()
                                        : std::string(".");
  std::string Error;
  TheSettings.Project = mpnanny::check::findProjectFile(Dir, Error);
  if (!Error.empty()) {
    errs() << Error << "\n";
    return 2;
  }
  auto &Scan = TheSettings.Scan;
  // Only when given: otherwise a .clang-tidy file's `Checks` applies.
  if (ChecksOpt.getNumOccurrences())
    Scan.Checks = ChecksOpt;
  const auto &Project = TheSettings.Project;
  Scan.Precision = !PrecisionOpt.empty() ? std::string(PrecisionOpt)
                   : Project             ? Project->Precision
                                         : "";
  Scan.RulesDir = !RulesDir.empty() ? std::string(RulesDir) : Project ? Project->Rules : "";
  std::string Facts = !FactsOpt.empty() ? std::string(FactsOpt) : Project ? Project->Facts : "";
  TheSettings.FactsNamedBy = !FactsOpt.empty()                    ? "--facts"
                             : Project && !Project->Facts.empty() ? Project->Path
                                                                  : "";
  if (Facts.empty() && !BuildPath.empty())
    Facts = mpnanny::check::factsFileFor(BuildPath);
  TheSettings.FactsPath = Facts == "none" ? "" : Facts;
  // Without a database the checks look for the facts themselves, as clang-tidy's do.
  Scan.FactsFile = Facts.empty() ? "" : Facts == "none" ? "none" : Facts;
  Scan.FactsNamedBy = TheSettings.FactsNamedBy;
  std::string Rules =
      Scan.RulesDir.empty() ? mpnanny::kb::KnowledgeBase::defaultDirectory() : Scan.RulesDir;
  try {
    mpnanny::kb::KnowledgeBase::cached(Rules);
  } catch (const mpnanny::kb::LoadError &E) {
    errs() << E.what() << "\n";
    return 2;
  }
  return 0;
}

/// The files named, or every project file of the database; their commands. 0, or the exit
/// code of an error.
int gatherInputs(std::unique_ptr<tooling::CompilationDatabase> Fixed, Inputs &In) {
  std::unique_ptr<tooling::CompilationDatabase> Project;
  if (!Fixed && !BuildPath.empty()) {
    std::string Error;
    // That folder only: a parent's database would scan some other project.
    Project = tooling::CompilationDatabase::loadFromDirectory(BuildPath, Error);
    if (!Project)
      return fail("no compilation database in '" + BuildPath +
                      "': no compile_commands.json there (configure with "
                      "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON)",
                  2);
  }
  const bool FromDiff = DiffOpt.getNumOccurrences() || DiffBase.getNumOccurrences();
  In.WholeProject = Sources.empty() && Project && !FromDiff;
  std::vector<std::string> ProjectSources;
  if (Project)
    ProjectSources = mpnanny::check::projectFiles(*Project, BuildPath);
  In.ProjectFileCount = ProjectSources.size();
  if (In.WholeProject) {
    In.Files = std::move(ProjectSources);
    if (In.Files.empty())
      return fail("'" + BuildPath +
                      "/compile_commands.json' lists no source of the project "
                      "(third-party and generated files are skipped)",
                  2);
  } else if (Sources.empty() && !FromDiff) {
    return fail("no source file given (mpnanny-check -p build [file.cpp], or file.cpp -- flags)",
                2);
  }
  for (const auto &S : Sources) {
    SmallString<256> Abs(S);
    sys::fs::make_absolute(Abs);
    sys::path::remove_dots(Abs, true);
    if (!sys::fs::exists(Abs) || sys::fs::is_directory(Abs)) {
      errs() << "mpnanny-check: error: cannot read '" << S << "': no such file\n";
      In.Unreadable = true;
      continue;
    }
    In.Files.push_back(std::string(Abs));
  }
  std::unique_ptr<tooling::CompilationDatabase> Given =
      Fixed     ? adjusted(mpnanny::check::withTorchHeaders(std::move(Fixed)))
      : Project ? adjusted(std::move(Project))
                : nullptr;
  for (const auto &F : In.Files)
    In.Commands.push_back(Given ? Given->getCompileCommands(F)
                                : mpnanny::check::discoveredCommands(F, extraArgs()));
  return 0;
}

/// --export-compile-commands: the commands the scan runs, for the clang-tidy door (which
/// cannot read an nvcc command itself). False when the file could not be written.
bool exportCommands(const Inputs &In) {
  nlohmann::json Out = nlohmann::json::array();
  for (const auto &Commands : In.Commands)
    for (const auto &C : Commands)
      Out.push_back(
          {{"directory", C.Directory}, {"file", C.Filename}, {"arguments", C.CommandLine}});
  std::error_code EC;
  raw_fd_ostream File(ExportCommands, EC);
  if (EC)
    return false;
  File << Out.dump(2) << "\n";
  return true;
}

/// The LibTorch header cache, unless --no-cache; and the scan's limits.
void openCache(std::optional<mpnanny::check::HeaderCache> &Cache) {
  if (NoCache)
    return;
  std::string Dir = CacheDir.empty() ? mpnanny::check::defaultCacheDirectory() : CacheDir;
  if (!Dir.empty())
    Cache.emplace(Dir);
}

mpnanny::check::ScanSettings scanSettings(mpnanny::check::HeaderCache *Cache,
                                          const std::vector<std::string> &CommandLine,
                                          const char *Argv0) {
  mpnanny::check::ScanSettings Settings;
  Settings.Cache = Cache;
  if (Cache && !WaitForCache) {
    static int InThisProgram;
    std::string Self = sys::fs::getMainExecutable(Argv0, &InThisProgram);
    if (!Self.empty()) {
      Settings.DetachedCacheBuild = {Self, "--build-cache-only",
                                     "--build-cache-after-pid=" + std::to_string(getpid())};
      Settings.DetachedCacheBuild.insert(Settings.DetachedCacheBuild.end(), CommandLine.begin() + 1,
                                         CommandLine.end());
    }
  }
  Settings.TimeoutSeconds = Timeout;
  Settings.Profile = CheckProfile;
  return Settings;
}

/// Brings the project's facts up to date before a whole-project scan, or alone with
/// --collect-facts. False when the facts file could not be written at all.
bool refreshFacts(const Inputs &In, unsigned Jobs, const mpnanny::check::ScanSettings &Settings) {
  if (TheSettings.FactsPath.empty()) {
    if (CollectFacts)
      fail("--collect-facts needs -p build (or --facts FILE) to know where the facts go", 2);
    return !CollectFacts;
  }
  auto Start = std::chrono::steady_clock::now();
  mpnanny::check::FactsUpdate Update =
      mpnanny::check::updateFacts(TheSettings.FactsPath, In.Files, In.Commands, TheSettings.Scan,
                                  Jobs, Settings, In.WholeProject);
  for (const auto &P : Update.Problems)
    errs() << "mpnanny-check: warning: facts: " << P << "\n";
  double Seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
  errs() << "mpnanny-check: project facts " << Update.Path << ": " << Update.Parsed
         << " unit(s) read, " << Update.Reused << " unchanged, " << Update.Units << " in all ("
         << llvm::format("%.1f", Seconds) << " s)\n";
  return sys::fs::exists(Update.Path);
}

/// A scan of named files that found nothing and saw no reduced precision in them, without the
/// project's facts, in a project with more files: the precision may be chosen in one of the others
/// (a `model->to(kHalf)` in main.cpp), which only a whole-project scan reads. Said once, and only
/// then: elsewhere it would be noise.
void noteWholeProjectScan(const Inputs &In, const std::vector<mpnanny::check::FileScan> &Scans) {
  if (In.WholeProject || In.ProjectFileCount <= In.Files.size() || FormatOpt != "text")
    return;
  for (const auto &S : Scans)
    for (const auto &P : S.Parse)
      if (P.ShowsReducedPrecision)
        return;
  errs() << "mpnanny-check: note: no finding; the precision the other "
         << In.ProjectFileCount - In.Files.size()
         << " file(s) of the project choose is read after one whole-project scan ("
         << "mpnanny-check -p " << BuildPath << ")\n";
}

/// Prints the findings as --format asks and writes the sites file; returns the exit code.
int report(std::vector<mpnanny::check::FileScan> &Scans, const Inputs &In,
           const std::vector<std::string> &CheckNames,
           const std::optional<mpnanny::check::Verdicts> &Verified, int64_t ClearedAfterSteps);

/// --diff / --diff-base: reads and parses the diff, resolves its paths and puts the files to
/// scan in Sources. 0, or the exit code of an error.
int readDiff(bool HaveFixedFlags, std::optional<mpnanny::check::ChangedLines> &Changed) {
  if (DiffOpt.getNumOccurrences() && !DiffBase.empty())
    return fail("--diff and --diff-base: give one of them", 2);
  if (!Sources.empty())
    return fail("--diff and --diff-base take the files from the diff; name no file", 2);
  auto Lines = mpnanny::check::readChangedLines(
      DiffBase.empty() ? std::string(DiffOpt) : std::string(), DiffBase, BuildPath,
      !BuildPath.empty() && !HaveFixedFlags, Sources);
  if (!Lines)
    return fail(toString(Lines.takeError()), 2);
  Changed = std::move(*Lines);
  return 0;
}

} // namespace

int main(int argc, const char **argv) {
  // Before the fixed database below cuts argv at `--`: the detached cache build reruns it.
  const std::vector<std::string> CommandLine(argv, argv + argc);
  // `-- <flags>` after the files: a fixed compilation database, as in clang-tidy.
  std::string FixedError;
  std::unique_ptr<tooling::CompilationDatabase> Fixed =
      tooling::FixedCompilationDatabase::loadFromCommandLine(argc, argv, FixedError);
  std::vector<std::string> JoinedArgs;
  std::vector<const char *> Args = joinOptionalValues(argc, argv, JoinedArgs);
  cl::HideUnrelatedOptions(Category);
  cl::SetVersionPrinter([](raw_ostream &OS) { OS << "mpnanny-check " MPNANNY_VERSION "\n"; });
  if (!cl::ParseCommandLineOptions(
          static_cast<int>(Args.size()), Args.data(),
          "mpnanny-check: finds fp16/bf16 hazards in LibTorch C++ code before training.\n\n"
          "  mpnanny-check -p build                scan every file of the project\n"
          "  mpnanny-check -p build model.cpp      use the build's compile_commands.json\n"
          "  mpnanny-check model.cpp -- -I...      give the flags by hand (LibTorch's are added)\n"
          "  mpnanny-check model.cpp               find LibTorch's headers by itself\n\n"
          "  The project's precision can be declared in .mpnanny.yaml (Precision: fp16), found\n"
          "  from the compilation database's folder (or the file's) upward.\n",
          &errs()))
    return 2;
  if (int Error = validateOptions())
    return Error;
  std::optional<mpnanny::check::Verdicts> Verified;
  if (!VerifiedDb.empty()) {
    std::string Error;
    Verified = mpnanny::check::readVerdicts(VerifiedDb, Error);
    if (!Verified)
      return fail(Error, 2);
  }
  std::optional<int64_t> ClearedAfterSteps = clearedAfterSteps(Verified.has_value());
  if (!ClearedAfterSteps)
    return 2;
  std::vector<std::string> CheckNames = mpnanny::check::checkNames(ChecksOpt);

  Inputs In;
  if (!Explain.empty() || ListChecks) {
    if (int Error = settle(In))
      return Error;
    return *answerWithoutScanning(CheckNames);
  }
  // A diff names the files, and later the lines whose findings count.
  std::optional<mpnanny::check::ChangedLines> Changed;
  if (DiffOpt.getNumOccurrences() || DiffBase.getNumOccurrences()) {
    if (int Error = readDiff(Fixed != nullptr, Changed))
      return Error;
    if (Sources.empty())
      errs() << "mpnanny-check: the diff changes no C/C++ file to scan\n";
  }
  if (int Error = gatherInputs(std::move(Fixed), In))
    return Error;
  if (int Error = settle(In))
    return Error;
  if (!ExportCommands.empty()) {
    if (!exportCommands(In))
      return fail("cannot write the compile commands to '" + ExportCommands + "'", 2);
    return In.Unreadable ? 3 : 0;
  }

  unsigned JobCount = Jobs ? Jobs : std::max(1u, std::thread::hardware_concurrency());
  std::optional<mpnanny::check::HeaderCache> Cache;
  openCache(Cache);
  if (BuildCacheOnly) {
    if (Cache) {
      // Behind whatever the user runs next (the training the scan came before).
      setpriority(PRIO_PROCESS, 0, 10);
      while (BuildAfterPid > 0 && (kill(BuildAfterPid, 0) == 0 || errno == EPERM))
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      mpnanny::check::buildCacheEntries(*Cache, In.Files, In.Commands, JobCount);
    }
    return 0;
  }
  mpnanny::check::ScanSettings Settings =
      scanSettings(Cache ? &*Cache : nullptr, CommandLine, argv[0]);
  if (CollectFacts)
    return refreshFacts(In, JobCount, Settings) ? (In.Unreadable ? 3 : 0) : 2;
  // A whole project's scan is where the facts are made: the next single-file scan, and
  // clang-tidy's, read them. A scan of named files reads them as they are.
  if (In.WholeProject && FactsOpt != "none" && !refreshFacts(In, JobCount, Settings))
    return 2;
  // The default facts file that no whole-project scan has made yet: a scan of named files goes
  // without it, as it was asked to; only a file someone named must be there.
  const bool WithoutDefaultFacts = TheSettings.FactsNamedBy.empty() && !In.WholeProject &&
                                   !TheSettings.FactsPath.empty() &&
                                   !sys::fs::exists(TheSettings.FactsPath);
  if (WithoutDefaultFacts)
    TheSettings.Scan.FactsFile = "none";
  std::vector<mpnanny::check::FileScan> Scans =
      mpnanny::check::scanFiles(In.Files, In.Commands, makeContext, JobCount,
                                /*ApplyFixes=*/false, /*MakeFS=*/nullptr, Settings);
  mpnanny::check::dropRepeats(Scans);
  if (Changed)
    mpnanny::check::keepChangedLines(Scans, *Changed);
  int Exit = report(Scans, In, CheckNames, Verified, *ClearedAfterSteps);
  if (WithoutDefaultFacts && Exit == 0)
    noteWholeProjectScan(In, Scans);
  return Exit;
}

namespace {

int report(std::vector<mpnanny::check::FileScan> &Scans, const Inputs &In,
           const std::vector<std::string> &CheckNames,
           const std::optional<mpnanny::check::Verdicts> &Verified, int64_t ClearedAfterSteps) {
  std::vector<ClangTidyError> Errors;
  std::vector<mpnanny::FindingDetail> Details;
  for (auto &S : Scans) {
    if (FormatOpt == "text" && !Verified) {
      unsigned WarningsAsErrors = 0;
      // clang-tidy's own reporter prints the findings, so both doors read alike.
      handleErrors(S.Errors, *S.Context, FixOpt ? FB_Fix : FB_NoFix, WarningsAsErrors,
                   vfs::createPhysicalFileSystem());
    }
    Errors.insert(Errors.end(), S.Errors.begin(), S.Errors.end());
    Details.insert(Details.end(), S.Details.begin(), S.Details.end());
  }
  std::vector<mpnanny::check::Finding> Findings = mpnanny::check::collectFindings(Errors, Details);
  if (FixOpt && (FormatOpt != "text" || Verified))
    applyEdits(Findings);
  // The sites file keeps every finding (the next run verifies them again); the report and the
  // exit code leave out those run time cleared.
  std::vector<mpnanny::check::Finding> Shown;
  for (const auto &F : Findings)
    if (!(Verified && ClearedAfterSteps >= 0 && Verified->cleared(F, ClearedAfterSteps)))
      Shown.push_back(F);

  // A file that did not parse: its findings are printed, but the scan is incomplete.
  std::vector<std::string> Problems = mpnanny::check::parseProblems(Scans);
  for (const auto &P : Problems)
    errs() << "mpnanny-check: error: " << P << "\n";
  // A bad check option (`Precision: fp12` in .clang-tidy) is a configuration error.
  unsigned ConfigErrors = 0;
  for (const auto &E : Errors)
    if (E.DiagnosticName == "clang-tidy-config" && E.DiagLevel == tooling::Diagnostic::Error) {
      ++ConfigErrors;
      if (FormatOpt != "text")
        errs() << "mpnanny-check: error: " << E.Message.Message << "\n";
    }

  if (FormatOpt == "text" && Verified) {
    for (const auto &F : Shown)
      outs() << mpnanny::check::verdictText(*Verified, F);
  } else if (FormatOpt == "json") {
    nlohmann::json Out = nlohmann::json::array();
    for (const auto &F : Shown) {
      Out.push_back(mpnanny::check::toJson(F));
      if (Verified)
        Out.back()["verdict"] = mpnanny::check::verdictJson(*Verified, F);
    }
    outs() << Out.dump(2) << "\n";
  } else if (FormatOpt == "sarif") {
    mpnanny::check::SarifRun Run;
    Run.ToolVersion = MPNANNY_VERSION;
    Run.Checks = CheckNames;
    SmallString<256> Cwd;
    if (!sys::fs::current_path(Cwd))
      Run.WorkingDirectory = std::string(Cwd);
    Run.Problems = Problems;
    nlohmann::json Sarif = mpnanny::check::toSarif(Shown, Run);
    if (Verified)
      mpnanny::check::addVerdictsToSarif(Sarif, *Verified);
    outs() << Sarif.dump(2) << "\n";
  }

  if (ExportSites.getNumOccurrences()) {
    std::string Path = ExportSites.empty() ? DefaultSitesFile : ExportSites.getValue();
    std::error_code EC;
    raw_fd_ostream Out(Path, EC);
    if (EC)
      return fail("cannot write the sites file '" + Path + "': " + EC.message(), 2);
    Out << mpnanny::check::sitesDocument(Findings, "mpnanny-check " MPNANNY_VERSION).dump(2)
        << "\n";
  }

  if (Findings.size() > Shown.size())
    errs() << "mpnanny-check: " << Findings.size() - Shown.size()
           << " finding(s) hidden: NOT_OBSERVED on at least " << ClearedAfterSteps << " step(s) in "
           << VerifiedDb << "\n";
  if (In.WholeProject || In.Files.size() > 1) {
    std::map<std::string, unsigned> PerCheck;
    for (const auto &F : Findings)
      ++PerCheck[F.Check];
    errs() << "mpnanny-check: " << In.Files.size() << " file(s) scanned, " << Findings.size()
           << " finding(s)";
    const char *Sep = ": ";
    for (const auto &[Check, N] : PerCheck) {
      errs() << Sep << Check << " " << N;
      Sep = ", ";
    }
    errs() << "; " << Problems.size() << " file(s) with errors\n";
  }

  // A scan past --timeout still runs on its thread: end without the destructors it uses.
  auto Exit = [&](int Code) {
    for (const auto &S : Scans)
      if (S.StoppedAfterSeconds) {
        outs().flush();
        errs().flush();
        std::_Exit(Code);
      }
    return Code;
  };
  if (In.Unreadable || !Problems.empty())
    return Exit(3);
  if (ConfigErrors)
    return 2;
  int Threshold = severityRank(FailOn);
  for (const auto &F : Shown)
    if (severityRank(F.Severity) >= Threshold)
      return 1;
  return 0;
}

} // namespace
