//===--- FactsPass.cpp - mpnanny-check -------------------------------------===//
#include "FactsPass.h"

#include "clang-tidy/ClangTidyCheck.h"
#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"
#include "utils/FindingLog.h"
#include "utils/ParseHealth.h"
#include "utils/PrecisionContext.h"
#include "utils/ProjectFacts.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA1.h"
#include "llvm/Support/raw_ostream.h"
#include <map>
#include <set>

using namespace clang;
using namespace clang::tidy;
using namespace clang::ast_matchers;
namespace tidy_mpnanny = clang::tidy::mpnanny;
using tidy_mpnanny::ProjectFacts;
using tidy_mpnanny::UnitFacts;

namespace {

/// Exports the translation unit's precision facts; reports nothing.
class ProjectFactsCollector : public ClangTidyCheck {
public:
  using ClangTidyCheck::ClangTidyCheck;
  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus;
  }
  void registerPPCallbacks(const SourceManager &, Preprocessor *PP, Preprocessor *) override {
    // A file with a missing header still has facts in the functions that parsed.
    if (PP)
      tidy_mpnanny::parse_health::keepGoing(*PP);
  }
  void registerMatchers(MatchFinder *Finder) override {
    Finder->addMatcher(translationUnitDecl(), this);
  }
  void check(const MatchFinder::MatchResult &Result) override {
    tidy_mpnanny::PrecisionContext Unit(*Result.Context, std::nullopt, nullptr);
    ::mpnanny::FindingLog::recordFacts(llvm::formatv("{0}", Unit.exportFacts().toJson()).str());
  }
};

class FactsModule : public ClangTidyModule {
public:
  void addCheckFactories(ClangTidyCheckFactories &Factories) override {
    Factories.registerCheck<ProjectFactsCollector>(::mpnanny::check::FactsCollectorName);
  }
};

ClangTidyModuleRegistry::Add<FactsModule> Registration("mpnanny-facts-module",
                                                       "mpnanny's project facts collector");

struct Stamp {
  uint64_t Size = 0;
  int64_t Modified = 0;
  bool operator==(const Stamp &O) const { return Size == O.Size && Modified == O.Modified; }
};

std::optional<Stamp> stampOf(const std::string &Path) {
  llvm::sys::fs::file_status Status;
  if (llvm::sys::fs::status(Path, Status))
    return std::nullopt;
  return Stamp{Status.getSize(), std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     Status.getLastModificationTime().time_since_epoch())
                                     .count()};
}

/// The program that reads the units: a rebuilt mpnanny-check may export facts the cached ones
/// lack, so its own stamp is part of every entry's key.
const std::string &readerIdentity() {
  static const std::string Identity = [] {
    static int Anchor;
    std::string Self = llvm::sys::fs::getMainExecutable(nullptr, &Anchor);
    auto S = stampOf(Self);
    return Self + " " + (S ? std::to_string(S->Size) + " " + std::to_string(S->Modified) : "");
  }();
  return Identity;
}

std::string commandText(const std::vector<tooling::CompileCommand> &Commands) {
  std::string Text = readerIdentity() + "\n";
  for (const auto &C : Commands) {
    Text += C.Directory + "\n";
    for (const auto &A : C.CommandLine)
      Text += A + "\n";
  }
  return Text;
}

std::string cacheKey(const std::string &File) {
  llvm::SHA1 Hash;
  Hash.update(File);
  std::string Hex;
  for (uint8_t Byte : Hash.final())
    Hex += llvm::formatv("{0:x-2}", Byte).str();
  return Hex.substr(0, 24);
}

/// Writes Text to Path through a temporary file in the same folder, so that a reader never
/// sees half a file and an interrupted write leaves the old one.
bool writeWhole(const std::string &Path, const std::string &Text, std::string &Error) {
  llvm::SmallString<256> Temp(Path);
  Temp += ".tmp-%%%%%%";
  int Fd = -1;
  llvm::SmallString<256> Made;
  if (std::error_code EC = llvm::sys::fs::createUniqueFile(Temp, Fd, Made)) {
    Error = Path + ": " + EC.message();
    return false;
  }
  {
    llvm::raw_fd_ostream Out(Fd, /*shouldClose=*/true);
    Out << Text;
    Out.flush();
    if (Out.has_error()) {
      Error = Path + ": " + Out.error().message();
      Out.clear_error();
      llvm::sys::fs::remove(Made);
      return false;
    }
  }
  if (std::error_code EC = llvm::sys::fs::rename(Made, Path)) {
    Error = Path + ": " + EC.message();
    llvm::sys::fs::remove(Made);
    return false;
  }
  return true;
}

/// A unit's cache entry: its facts, the command they were read with and its inputs' stamps.
struct CachedUnit {
  std::string Command;
  std::map<std::string, Stamp> Stamps;
  UnitFacts Facts;
};

std::optional<CachedUnit> readCached(const std::string &Path) {
  auto Buffer = llvm::MemoryBuffer::getFile(Path);
  if (!Buffer)
    return std::nullopt;
  auto Parsed = llvm::json::parse((*Buffer)->getBuffer());
  if (!Parsed) {
    llvm::consumeError(Parsed.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *O = Parsed->getAsObject();
  if (!O || !O->get("facts"))
    return std::nullopt;
  CachedUnit Unit;
  Unit.Command = O->getString("command").value_or("").str();
  if (const llvm::json::Object *Stamps = O->getObject("stamps"))
    for (const auto &[File, S] : *Stamps)
      if (const llvm::json::Object *SO = S.getAsObject())
        Unit.Stamps[File.str()] = Stamp{static_cast<uint64_t>(SO->getInteger("size").value_or(0)),
                                        SO->getInteger("modified").value_or(0)};
  std::string Error;
  auto Facts = UnitFacts::fromJson(*O->get("facts"), Error);
  if (!Facts)
    return std::nullopt;
  Unit.Facts = std::move(*Facts);
  return Unit;
}

bool upToDate(const CachedUnit &Unit, const std::string &Command) {
  if (Unit.Command != Command || Unit.Stamps.empty())
    return false;
  for (const auto &[File, Was] : Unit.Stamps) {
    auto Now = stampOf(File);
    if (!Now || !(*Now == Was))
      return false;
  }
  return true;
}

std::string cachedText(const std::string &Command, const UnitFacts &Facts) {
  llvm::json::Object Stamps;
  for (const std::string &File : Facts.Inputs)
    if (auto S = stampOf(File))
      Stamps[File] =
          llvm::json::Object{{"size", static_cast<int64_t>(S->Size)}, {"modified", S->Modified}};
  llvm::json::Value Entry = llvm::json::Object{
      {"command", Command}, {"stamps", std::move(Stamps)}, {"facts", Facts.toJson()}};
  return llvm::formatv("{0}", Entry).str();
}

} // namespace

// mpnanny-check and the MCP server reference this, so that the registration above is linked.
volatile int MpnannyFactsAnchorSource = 0;

namespace mpnanny::check {

std::string factsFileFor(const std::string &BuildDir) {
  llvm::SmallString<256> Path(BuildDir);
  llvm::sys::fs::make_absolute(Path);
  llvm::sys::path::append(Path, ProjectFacts::FileName);
  return std::string(Path);
}

FactsUpdate updateFacts(const std::string &Path, const std::vector<std::string> &Files,
                        const std::vector<std::vector<tooling::CompileCommand>> &Commands,
                        const ScanOptions &Options, unsigned Jobs, const ScanSettings &Settings,
                        bool Whole) {
  FactsUpdate Result;
  Result.Path = Path;
  const std::string UnitsDir =
      Path.substr(0, Path.size() - llvm::sys::path::extension(Path).size()) + ".units";
  llvm::sys::fs::create_directories(UnitsDir);
  auto EntryOf = [&](const std::string &File) { return UnitsDir + "/" + cacheKey(File) + ".json"; };

  std::vector<std::string> Stale;
  std::vector<std::vector<tooling::CompileCommand>> StaleCommands;
  std::set<std::string> Wanted;
  for (size_t I = 0; I < Files.size(); ++I) {
    Wanted.insert(llvm::sys::path::filename(EntryOf(Files[I])).str());
    auto Cached = readCached(EntryOf(Files[I]));
    if (Cached && upToDate(*Cached, commandText(Commands[I]))) {
      ++Result.Reused;
      continue;
    }
    Stale.push_back(Files[I]);
    StaleCommands.push_back(Commands[I]);
  }

  if (!Stale.empty()) {
    ScanOptions Collect = Options;
    Collect.Checks = std::string("-*,") + FactsCollectorName;
    std::vector<FileScan> Scans = scanFiles(
        Stale, StaleCommands, [&] { return makeContext(Collect); }, Jobs,
        /*ApplyFixes=*/false, nullptr, Settings);
    for (size_t I = 0; I < Scans.size(); ++I) {
      const FileScan &S = Scans[I];
      ++Result.Parsed;
      std::optional<UnitFacts> Unit;
      std::string Error = S.StoppedAfterSeconds ? "the parse ran past --timeout" : "no facts";
      if (!S.Facts.empty()) {
        auto Parsed = llvm::json::parse(S.Facts.front());
        std::string Malformed; // fromJson reads a non-empty error as a failure already seen
        if (Parsed)
          Unit = UnitFacts::fromJson(*Parsed, Malformed);
        else
          Malformed = llvm::toString(Parsed.takeError());
        if (!Malformed.empty())
          Error = Malformed;
      }
      if (!Unit) {
        Result.Problems.push_back(S.File + ": " + Error);
        continue;
      }
      std::string WriteError;
      if (!writeWhole(EntryOf(S.File), cachedText(commandText(StaleCommands[I]), *Unit),
                      WriteError))
        Result.Problems.push_back(WriteError);
    }
  }

  // Every cached unit takes part: a scan of some files updates those, and the project's
  // other units stay as they were read last.
  std::vector<UnitFacts> Units;
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(UnitsDir, EC), End; It != End && !EC;
       It.increment(EC)) {
    std::string Name = llvm::sys::path::filename(It->path()).str();
    if (!llvm::StringRef(Name).ends_with(".json"))
      continue;
    if (Whole && !Wanted.count(Name)) {
      llvm::sys::fs::remove(It->path());
      continue;
    }
    if (auto Cached = readCached(It->path()))
      Units.push_back(std::move(Cached->Facts));
  }
  Result.Units = Units.size();
  ProjectFacts Facts = ProjectFacts::merge(Units);
  std::string WriteError;
  if (!writeWhole(Path, llvm::formatv("{0:2}", Facts.toJson()).str() + "\n", WriteError))
    Result.Problems.push_back(WriteError);
  return Result;
}

} // namespace mpnanny::check
