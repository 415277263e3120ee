//===--- Scanner.cpp - mpnanny-check ---------------------------------------===//
#include "Scanner.h"

#include "CudaFlags.h"
#include "TorchHeaders.h"
#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "clang-tidy/ClangTidyOptions.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CommonOptionsParser.h" // ArgumentsAdjustingCompilations
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace clang;
using namespace clang::tidy;

// The checks register themselves from a static initializer in an object file that
// nothing else references: a static library would leave it out.
extern volatile int MpnannyModuleAnchorSource;
[[maybe_unused]] static int MpnannyScannerAnchorDestination = MpnannyModuleAnchorSource;
extern volatile int MpnannyFactsAnchorSource;
[[maybe_unused]] static int MpnannyFactsAnchorDestination = MpnannyFactsAnchorSource;

namespace mpnanny::check {

static ClangTidyOptions overrideOptions(const ScanOptions &O) {
  ClangTidyOptions Override;
  // Only when given: otherwise a .clang-tidy file's `Checks` applies.
  if (O.Checks)
    Override.Checks = *O.Checks;
  if (!O.Precision.empty())
    Override.CheckOptions["Precision"] = ClangTidyOptions::ClangTidyValue(O.Precision, 100);
  if (!O.RulesDir.empty())
    Override.CheckOptions["RulesDirectory"] = ClangTidyOptions::ClangTidyValue(O.RulesDir, 100);
  if (!O.FactsFile.empty())
    Override.CheckOptions["FactsFile"] = ClangTidyOptions::ClangTidyValue(O.FactsFile, 100);
  if (!O.FactsNamedBy.empty())
    Override.CheckOptions["FactsFileNamedBy"] =
        ClangTidyOptions::ClangTidyValue(O.FactsNamedBy, 100);
  return Override;
}

std::unique_ptr<ClangTidyContext> makeContext(const ScanOptions &Options) {
  ClangTidyGlobalOptions Global;
  ClangTidyOptions Defaults = ClangTidyOptions::getDefaults();
  Defaults.Checks = "-*,mpnanny-*";
  // The project's own headers are its code (a model defined in net.h); system headers,
  // LibTorch's among them, are not.
  Defaults.HeaderFilterRegex = ".*";
  Defaults.SystemHeaders = false;
  // `.clang-tidy` files above each source are read, as clang-tidy does; the command
  // line wins over them.
  auto Provider = std::make_unique<FileOptionsProvider>(
      Global, Defaults, overrideOptions(Options),
      Options.ConfigFS ? Options.ConfigFS : llvm::vfs::createPhysicalFileSystem());
  return std::make_unique<ClangTidyContext>(std::move(Provider));
}

std::vector<std::string> checkNames(const std::string &Glob) {
  ClangTidyOptions Enabled = ClangTidyOptions::getDefaults();
  Enabled.Checks = Glob;
  return getCheckNames(Enabled, false);
}

std::vector<std::string> torchIncludeFlags() {
  std::vector<std::string> Flags;
  for (const auto &Dir : findTorchIncludeDirs()) {
    // Already a system folder: naming it again with -isystem moves it before the C++
    // library's own headers, and <cstdlib>'s #include_next <stdlib.h> then fails.
    if (Dir == "/usr/include" || Dir == "/usr/local/include")
      continue;
    Flags.push_back("-isystem");
    Flags.push_back(Dir);
  }
  return Flags;
}

std::vector<std::string> defaultFlags(llvm::StringRef File) {
  // A .cu or .cuh file is CUDA (cudaArgumentsAdjuster() adds the rest), any other C++.
  std::vector<std::string> Flags = {"-std=c++17", hasCudaExtension(File) ? "-xcuda" : "-xc++"};
  for (auto &F : torchIncludeFlags())
    Flags.push_back(std::move(F));
  return Flags;
}

/// The include folders a command names (-I, -isystem, -idirafter, -iquote, joined or not).
static std::vector<std::string> includeDirsNamedIn(const tooling::CommandLineArguments &Args) {
  static const char *const Options[] = {"-I", "-isystem", "-idirafter", "-iquote",
                                        "--include-directory="};
  std::vector<std::string> Dirs;
  for (size_t I = 0; I < Args.size(); ++I) {
    llvm::StringRef A = Args[I];
    for (llvm::StringRef O : Options) {
      if (!A.starts_with(O))
        continue;
      if (A.size() > O.size())
        Dirs.push_back(A.drop_front(O.size()).str());
      else if (I + 1 < Args.size())
        Dirs.push_back(Args[I + 1]);
      break;
    }
  }
  return Dirs;
}

bool namesTorchIncludeDir(const tooling::CommandLineArguments &Args) {
  for (const auto &Dir : includeDirsNamedIn(Args)) {
    // <torch/torch.h> itself, or the prefix's include/ that holds the API folder below it.
    if (llvm::sys::fs::exists(Dir + "/torch/torch.h") ||
        llvm::sys::fs::exists(Dir + "/torch/csrc/api/include/torch/torch.h"))
      return true;
  }
  return false;
}

std::unique_ptr<tooling::CompilationDatabase>
withTorchHeaders(std::unique_ptr<tooling::CompilationDatabase> Base) {
  auto Adjusted = std::make_unique<tooling::ArgumentsAdjustingCompilations>(std::move(Base));
  // Found once: every file of the scan gets the same folders.
  std::vector<std::string> Torch = torchIncludeFlags();
  Adjusted->appendArgumentsAdjuster(
      [Torch](const tooling::CommandLineArguments &Args, llvm::StringRef) {
        if (Torch.empty() || namesTorchIncludeDir(Args))
          return Args;
        // After the user's flags: a folder they name is searched first.
        tooling::CommandLineArguments Result = Args;
        Result.insert(Result.end(), Torch.begin(), Torch.end());
        return Result;
      });
  return Adjusted;
}

std::string flagsHint() {
  std::string Hint = FlagsHint;
  std::vector<std::string> Torch = findTorchIncludeDirs();
  if (Torch.empty())
    return Hint + ". LibTorch's headers were not found: set TORCH_DIR to the LibTorch prefix, "
                  "or pass -isystem <libtorch>/include -isystem "
                  "<libtorch>/include/torch/csrc/api/include";
  return Hint + ". LibTorch's headers (" + Torch.front() +
         ") are added to flags given after -- unless those name a folder holding "
         "torch/torch.h; TORCH_DIR chooses another LibTorch";
}

/// A precompiled header that GCC made (CMake's target_precompile_headers under g++): a file or
/// a folder of variants whose files start with "gpch". Clang's own start with "CPCH".
static bool isGccPrecompiledHeader(const std::string &Path) {
  if (llvm::sys::fs::is_directory(Path))
    return true;
  auto Buffer = llvm::MemoryBuffer::getFileSlice(Path, 4, 0);
  return Buffer && (*Buffer)->getBuffer() == "gpch";
}

/// `-include H` where H.gch is GCC's (CMake puts `-include .../cmake_pch.hxx` in every command
/// of a target with precompiled headers): clang's driver takes H.gch for its own precompiled
/// header and stops at "not a valid precompiled PCH file". Handed to the front end directly,
/// the include reads the header's text, which is what the .gch was made from.
static tooling::CommandLineArguments
gccPrecompiledHeadersAsText(const tooling::CommandLineArguments &Args, llvm::StringRef) {
  tooling::CommandLineArguments Result;
  for (size_t I = 0; I < Args.size(); ++I) {
    llvm::StringRef Joined = Args[I]; // -include H, or -includeH
    const bool Separate = Joined == "-include" && I + 1 < Args.size();
    std::string Header = Separate ? Args[I + 1]
                         : Joined.consume_front("-include") && !Joined.starts_with("-")
                             ? Joined.str()
                             : "";
    if (!Header.empty() && isGccPrecompiledHeader(Header + ".gch")) {
      Result.insert(Result.end(), {"-Xclang", "-include", "-Xclang", Header});
      I += Separate;
      continue;
    }
    Result.push_back(Args[I]);
  }
  return Result;
}

std::unique_ptr<tooling::CompilationDatabase>
adjusted(std::unique_ptr<tooling::CompilationDatabase> Base,
         const std::vector<std::string> &ExtraArgs) {
  auto Adjusted = std::make_unique<tooling::ArgumentsAdjustingCompilations>(std::move(Base));
  // First: an nvcc command becomes Clang's before the other adjusters add to it.
  Adjusted->appendArgumentsAdjuster(cudaArgumentsAdjuster());
  Adjusted->appendArgumentsAdjuster(tooling::getInsertArgumentAdjuster(
      {"-resource-dir=" MPNANNY_CLANG_RESOURCE_DIR}, tooling::ArgumentInsertPosition::BEGIN));
  Adjusted->appendArgumentsAdjuster(gccPrecompiledHeadersAsText);
  // GCC-only flags in a g++ build's database are noise to clang, not errors.
  Adjusted->appendArgumentsAdjuster(tooling::getInsertArgumentAdjuster(
      {"-Wno-unknown-warning-option", "-Wno-unused-command-line-argument"},
      tooling::ArgumentInsertPosition::END));
  if (!ExtraArgs.empty())
    Adjusted->appendArgumentsAdjuster(
        tooling::getInsertArgumentAdjuster(ExtraArgs, tooling::ArgumentInsertPosition::END));
  return Adjusted;
}

namespace {
/// Commands worked out elsewhere, handed back for any file.
struct FixedCommands : tooling::CompilationDatabase {
  std::vector<tooling::CompileCommand> Commands;
  std::vector<tooling::CompileCommand> getCompileCommands(llvm::StringRef) const override {
    return Commands;
  }
};
} // namespace

std::vector<tooling::CompileCommand> discoveredCommands(const std::string &File,
                                                        const std::vector<std::string> &ExtraArgs) {
  std::string Error;
  if (auto DB = tooling::CompilationDatabase::autoDetectFromSource(File, Error)) {
    // Commands clang guessed from a neighbour do not count: a scratch file in a build
    // folder would get some other file's flags.
    std::vector<tooling::CompileCommand> Listed;
    for (auto &C : DB->getCompileCommands(File))
      if (C.Heuristic.empty())
        Listed.push_back(std::move(C));
    if (!Listed.empty()) {
      auto Base = std::make_unique<FixedCommands>();
      Base->Commands = std::move(Listed);
      return adjusted(std::move(Base), ExtraArgs)->getCompileCommands(File);
    }
  }
  return adjusted(std::make_unique<tooling::FixedCompilationDatabase>(".", defaultFlags(File)),
                  ExtraArgs)
      ->getCompileCommands(File);
}

std::vector<std::string> parseProblems(const std::vector<FileScan> &Scans,
                                       const std::string &Hint) {
  std::vector<std::string> Problems;
  for (const auto &S : Scans) {
    if (S.StoppedAfterSeconds) {
      Problems.push_back(S.File + ": scan stopped after " + std::to_string(*S.StoppedAfterSeconds) +
                         " s (--timeout); this file's findings are missing");
      continue;
    }
    unsigned Count = 0;
    std::string First;
    for (const auto &E : S.Errors)
      if (E.DiagLevel == tooling::Diagnostic::Error &&
          llvm::StringRef(E.DiagnosticName).starts_with("clang-diagnostic") && Count++ == 0) {
        // Where, as the compiler says it: the JSON and SARIF outputs print only this line.
        Location At =
            locate(absolutePath(E.Message.FilePath, E.BuildDirectory), E.Message.FileOffset);
        First = At.Line ? At.File + ":" + std::to_string(At.Line) + ":" +
                              std::to_string(At.Column) + ": " + E.Message.Message
                        : E.Message.Message;
      }
    if (!Count)
      continue;
    // The checks kept going past the errors: say how much of the file they saw.
    std::string Coverage = "the scan of this file is incomplete";
    for (const ParseSummary &P : S.Parse)
      if (P.Functions && P.Unchecked)
        Coverage = std::to_string(P.Unchecked) + " of " + std::to_string(P.Functions) +
                   " function(s) checked in part, without the statements an error may have changed "
                   "(first: " +
                   P.FirstUnchecked + "), the others whole";
      else if (P.Functions)
        Coverage = "its " + std::to_string(P.Functions) +
                   " function(s) were checked, but what did not parse was not seen";
    Problems.push_back(S.File + ": " + std::to_string(Count) +
                       " compile error(s) (first: " + First + "); " + Coverage + ". " + Hint);
  }
  return Problems;
}

Location locateIn(const std::string &File, const std::string &Text, unsigned Offset) {
  Location L{File, 0, 0};
  if (Offset > Text.size())
    return L;
  llvm::StringRef Before = llvm::StringRef(Text).substr(0, Offset);
  L.Line = static_cast<unsigned>(Before.count('\n')) + 1;
  size_t LineStart = Before.rfind('\n');
  L.Column = Offset - (LineStart == llvm::StringRef::npos ? 0 : LineStart + 1) + 1;
  return L;
}

/// collectFindings() locates through a process-wide cache of the files on disk, which
/// knows nothing of sources in memory and goes stale in a server that scans a file
/// again after it was edited: locate everything again against the text scanned now.
static void relocate(std::vector<Finding> &Findings, const std::vector<ClangTidyError> &Errors,
                     const std::map<std::string, std::string> &Overlay,
                     const FileSystemFactory &BaseFS) {
  std::map<std::string, std::optional<std::string>> Texts;
  auto TextOf = [&](const std::string &File) -> const std::optional<std::string> & {
    auto It = Texts.find(File);
    if (It != Texts.end())
      return It->second;
    std::optional<std::string> Text;
    if (auto O = Overlay.find(File); O != Overlay.end()) {
      Text = O->second;
    } else {
      auto FS = BaseFS ? BaseFS() : llvm::vfs::createPhysicalFileSystem();
      if (auto Buffer = FS->getBufferForFile(File))
        Text = (*Buffer)->getBuffer().str();
    }
    return Texts.emplace(File, std::move(Text)).first->second;
  };
  auto Relocated = [&](const Location &Old, unsigned Offset) {
    const auto &Text = TextOf(Old.File);
    return Text ? locateIn(Old.File, *Text, Offset) : Old;
  };
  for (auto &F : Findings) {
    F.Where = Relocated(F.Where, F.Offset);
    for (auto &E : F.Edits) {
      E.Begin = Relocated(E.Begin, E.Offset);
      E.End = Relocated(E.End, E.Offset + E.Length);
    }
    // Notes keep no offset: take them from the diagnostic the finding came from.
    for (const auto &E : Errors) {
      if (E.DiagnosticName != F.Check || E.Message.FileOffset != F.Offset ||
          E.Message.Message != F.Message ||
          absolutePath(E.Message.FilePath, E.BuildDirectory) != F.Where.File ||
          E.Notes.size() != F.Notes.size())
        continue;
      for (size_t I = 0; I < E.Notes.size(); ++I)
        if (!E.Notes[I].FilePath.empty())
          F.Notes[I].Where = Relocated({absolutePath(E.Notes[I].FilePath, E.BuildDirectory), 0, 0},
                                       E.Notes[I].FileOffset);
      break;
    }
  }
}

ScanResult scan(const ScanRequest &Request, const std::string &Hint) {
  std::vector<std::vector<tooling::CompileCommand>> Commands;
  {
    std::unique_ptr<tooling::CompilationDatabase> Fixed;
    if (!Request.Database && Request.Flags)
      Fixed = adjusted(std::make_unique<tooling::FixedCompilationDatabase>(".", *Request.Flags),
                       Request.ExtraArgs);
    std::unique_ptr<tooling::CompilationDatabase> FromDatabase;
    if (Request.Database) {
      // Borrowed: wrap it so that the adjusters do not take ownership.
      struct Borrowed : tooling::CompilationDatabase {
        const tooling::CompilationDatabase *DB;
        std::vector<tooling::CompileCommand> getCompileCommands(llvm::StringRef F) const override {
          return DB->getCompileCommands(F);
        }
        std::vector<std::string> getAllFiles() const override { return DB->getAllFiles(); }
      };
      auto B = std::make_unique<Borrowed>();
      B->DB = Request.Database;
      FromDatabase = adjusted(std::move(B), Request.ExtraArgs);
    }
    for (const auto &F : Request.Files) {
      if (FromDatabase)
        Commands.push_back(FromDatabase->getCompileCommands(F));
      else if (Fixed)
        Commands.push_back(Fixed->getCompileCommands(F));
      else
        Commands.push_back(discoveredCommands(F, Request.ExtraArgs));
    }
  }

  FileSystemFactory MakeFS = Request.BaseFS;
  if (!Request.Overlay.empty()) {
    MakeFS = [&]() -> llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> {
      auto Base = Request.BaseFS ? Request.BaseFS() : llvm::vfs::createPhysicalFileSystem();
      auto Overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(Base);
      auto Memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
      for (const auto &[Path, Text] : Request.Overlay)
        Memory->addFile(Path, 0, llvm::MemoryBuffer::getMemBufferCopy(Text, Path));
      Overlay->pushOverlay(Memory);
      return Overlay;
    };
  }

  std::vector<FileScan> Scans = scanFiles(
      Request.Files, Commands, [&] { return makeContext(Request.Options); }, Request.Jobs,
      /*ApplyFixes=*/false, MakeFS);
  dropRepeats(Scans);

  ScanResult Result;
  std::vector<ClangTidyError> Errors;
  std::vector<FindingDetail> Details;
  for (auto &S : Scans) {
    Errors.insert(Errors.end(), S.Errors.begin(), S.Errors.end());
    Details.insert(Details.end(), S.Details.begin(), S.Details.end());
  }
  Result.Findings = collectFindings(Errors, Details);
  relocate(Result.Findings, Errors, Request.Overlay, MakeFS);
  Result.Problems = parseProblems(Scans, Hint);
  for (const auto &E : Errors)
    if (E.DiagnosticName == "clang-tidy-config" && E.DiagLevel == tooling::Diagnostic::Error)
      Result.ConfigErrors.push_back(E.Message.Message);
  return Result;
}

} // namespace mpnanny::check
