//===--- HeaderCache.cpp - mpnanny-check -----------------------------------===//
#include "HeaderCache.h"

#include "utils/LlvmCompat.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Basic/Version.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Frontend/TextDiagnosticBuffer.h"
#include "clang/Frontend/Utils.h"
#include "clang/Lex/Lexer.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/LockFileManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include <cstdlib>
#include <nlohmann/json.hpp>

using namespace clang;
namespace fs = llvm::sys::fs;

namespace mpnanny::check {

/// Bumped when the layout of an entry changes: old entries are then simply unused.
static const char *const EntryFormat = "mpnanny-header-cache-1";

std::string defaultCacheDirectory() {
  llvm::SmallString<256> Dir;
  if (const char *Xdg = std::getenv("XDG_CACHE_HOME"); Xdg && *Xdg)
    Dir = Xdg;
  else if (const char *Home = std::getenv("HOME"); Home && *Home)
    llvm::sys::path::append(Dir, Home, ".cache");
  else
    return "";
  llvm::sys::path::append(Dir, "mpnanny");
  return std::string(Dir);
}

std::string leadingAngleIncludes(llvm::StringRef Source) {
  SourceManagerForFile Owner("mpnanny-prefix.cpp", Source);
  const SourceManager &SM = Owner.get();
  LangOptions Lang;
  Lang.CPlusPlus = Lang.CPlusPlus11 = Lang.CPlusPlus14 = Lang.CPlusPlus17 = true;
  Lang.LineComment = true;
  Lexer Raw(SM.getMainFileID(), SM.getBufferOrFake(SM.getMainFileID()), SM, Lang);
  std::string Out;
  Token T;
  Raw.LexFromRawLexer(T);
  while (T.is(tok::hash) && T.isAtStartOfLine()) {
    unsigned Begin = SM.getFileOffset(T.getLocation());
    Token Name, Open;
    Raw.LexFromRawLexer(Name);
    if (Name.isAtStartOfLine() || !Name.is(tok::raw_identifier) ||
        Name.getRawIdentifier() != "include")
      break;
    Raw.LexFromRawLexer(Open);
    if (Open.isAtStartOfLine() || !Open.is(tok::less))
      break;
    // The directive ends where the next line's first token begins.
    unsigned End = SM.getFileOffset(Open.getLocation()) + Open.getLength();
    for (Raw.LexFromRawLexer(T); !T.is(tok::eof) && !T.isAtStartOfLine(); Raw.LexFromRawLexer(T))
      End = SM.getFileOffset(T.getLocation()) + T.getLength();
    Out += Source.substr(Begin, End - Begin).str() + "\n";
  }
  return Out;
}

std::optional<HeaderCache::Plan> HeaderCache::planFor(const tooling::CompileCommand &Command,
                                                      llvm::StringRef Source) {
  Plan P;
  P.Includes = leadingAngleIncludes(Source);
  if (P.Includes.empty() || Command.CommandLine.empty())
    return std::nullopt;
  P.WorkingDirectory = Command.Directory;
  tooling::CommandLineArguments Args = Command.CommandLine;
  Args = tooling::getClangStripOutputAdjuster()(Args, Command.Filename);
  Args = tooling::getClangStripDependencyFileAdjuster()(Args, Command.Filename);
  llvm::SmallString<256> Absolute(Command.Filename);
  fs::make_absolute(Command.Directory, Absolute);
  for (size_t I = 0; I < Args.size(); ++I) {
    llvm::StringRef A = Args[I];
    if (I > 0 && (A == "-c" || A == "-S" || A == "-E" || A == "-fsyntax-only" ||
                  A == Command.Filename || A == Absolute))
      continue;
    // Text before the file's first line, or all inputs after "--": the includes are
    // then not the start of what the compiler reads.
    if (A == "--" || A.starts_with("-include") || A.starts_with("--include") || A == "-imacros" ||
        A.starts_with("--imacros"))
      return std::nullopt;
    P.Args.push_back(A.str());
  }
  std::string Identity =
      std::string(EntryFormat) + '\0' + getClangFullVersion() + '\0' + P.WorkingDirectory + '\0';
  for (const auto &A : P.Args)
    Identity += A + '\0';
  Identity += P.Includes;
  P.Key = llvm::utohexstr(llvm::xxHash64(Identity), /*LowerCase=*/true);
  return P;
}

std::string HeaderCache::path(const std::string &Key, llvm::StringRef Extension) const {
  llvm::SmallString<256> P(Directory);
  llvm::sys::path::append(P, Key + "." + Extension.str());
  return std::string(P);
}

namespace {

struct Input {
  std::string Path;
  uint64_t Size = 0;
  int64_t Time = 0;
};

std::optional<Input> stat(const std::string &Path) {
  fs::file_status S;
  if (fs::status(Path, S) || !fs::is_regular_file(S))
    return std::nullopt;
  return Input{Path, S.getSize(),
               static_cast<int64_t>(llvm::sys::toTimeT(S.getLastModificationTime()))};
}

std::optional<uint64_t> hashOf(const std::string &Path) {
  auto Buffer = llvm::MemoryBuffer::getFile(Path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!Buffer)
    return std::nullopt;
  return llvm::xxHash64((*Buffer)->getBuffer());
}

/// Writes Text to Path through a temporary file in the same folder and a rename, so
/// that a reader sees the old file or the new one, never a part.
bool writeAtomically(const std::string &Path, llvm::StringRef Text) {
  llvm::SmallString<256> Temp;
  int FD;
  if (fs::createUniqueFile(Path + ".tmp-%%%%%%%%", FD, Temp))
    return false;
  {
    llvm::raw_fd_ostream Out(FD, /*shouldClose=*/true);
    Out << Text;
    Out.close();
    if (Out.has_error()) {
      Out.clear_error();
      fs::remove(Temp);
      return false;
    }
  }
  if (fs::rename(Temp, Path)) {
    fs::remove(Temp);
    return false;
  }
  return true;
}

/// Generates the PCH and remembers every file it read: the entry's identity.
class RecordingPchAction : public GeneratePCHAction {
public:
  std::vector<std::string> Files;

protected:
  void EndSourceFileAction() override {
    const SourceManager &SM = getCompilerInstance().getSourceManager();
    for (auto It = SM.fileinfo_begin(); It != SM.fileinfo_end(); ++It)
      Files.push_back(clang::tidy::mpnanny::realPathOrName(It->first));
    GeneratePCHAction::EndSourceFileAction();
  }
};

} // namespace

HeaderCache::State HeaderCache::check(const std::string &Key, std::string &Why) const {
  auto Text = llvm::MemoryBuffer::getFile(path(Key, "json"));
  if (!Text)
    return State::Missing;
  nlohmann::json M = nlohmann::json::parse((*Text)->getBuffer().begin(), (*Text)->getBuffer().end(),
                                           nullptr, false);
  try {
    if (M.is_discarded() || M.at("format") != EntryFormat) {
      Why = "its manifest is unreadable";
      return State::Broken;
    }
    for (const auto &I : M.at("inputs")) {
      auto Now = stat(I.at(0).get<std::string>());
      if (!Now || Now->Size != I.at(1).get<uint64_t>() || Now->Time != I.at(2).get<int64_t>()) {
        Why = I.at(0).get<std::string>() + " changed since it was built";
        return State::Broken;
      }
    }
    if (!M.at("ok").get<bool>()) {
      Why = M.at("error").get<std::string>();
      return State::Failed;
    }
    auto Pch = stat(path(Key, "pch"));
    if (!Pch || Pch->Size != M.at("size").get<uint64_t>()) {
      Why = "its precompiled header is missing or has the wrong size";
      return State::Broken;
    }
    auto Hash = hashOf(path(Key, "pch"));
    if (!Hash || llvm::utohexstr(*Hash, true) != M.at("hash").get<std::string>()) {
      Why = "its precompiled header does not match its hash";
      return State::Broken;
    }
  } catch (const nlohmann::json::exception &) {
    Why = "its manifest is unreadable";
    return State::Broken;
  }
  return State::Valid;
}

void HeaderCache::remove(const std::string &Key) {
  // The manifest first: without it the entry is missing, whatever else is left.
  fs::remove(path(Key, "json"));
  fs::remove(path(Key, "pch"));
}

void HeaderCache::discard(const std::string &Pch) { remove(llvm::sys::path::stem(Pch).str()); }

bool HeaderCache::build(const Plan &P, std::string &Error) {
  std::string Header = path(P.Key, "h");
  // The header is an input of the PCH: rewriting it would make other entries stale.
  auto Existing = llvm::MemoryBuffer::getFile(Header);
  if ((!Existing || (*Existing)->getBuffer() != P.Includes) &&
      !writeAtomically(Header, P.Includes)) {
    Error = "cannot write to the cache folder " + Directory;
    return false;
  }
  llvm::SmallString<256> Temp;
  int FD;
  if (fs::createUniqueFile(path(P.Key, "pch") + ".tmp-%%%%%%%%", FD, Temp)) {
    Error = "cannot write to the cache folder " + Directory;
    return false;
  }
  llvm::sys::Process::SafelyCloseFileDescriptor(FD);

  std::vector<std::string> Args = P.Args;
  tooling::addTargetAndModeForProgramName(Args, Args.front());
  Args.insert(Args.end(), {"-x", "c++-header", Header});
  std::vector<const char *> Argv;
  for (const auto &A : Args)
    Argv.push_back(A.c_str());

  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS = llvm::vfs::createPhysicalFileSystem();
  FS->setCurrentWorkingDirectory(P.WorkingDirectory);
  auto *Diagnostics = new TextDiagnosticBuffer; // owned by the engine
  IntrusiveRefCntPtr<DiagnosticOptions> DiagOpts = new DiagnosticOptions;
  IntrusiveRefCntPtr<DiagnosticsEngine> Engine =
      CompilerInstance::createDiagnostics(DiagOpts.get(), Diagnostics);
  CreateInvocationOptions Options;
  Options.Diags = Engine;
  Options.VFS = FS;
  std::shared_ptr<CompilerInvocation> Invocation = createInvocation(Argv, Options);
  RecordingPchAction Action;
  bool Ok = false;
  if (Invocation) {
    // createInvocation() asks the driver for a syntax-only job: make it write the PCH.
    Invocation->getFrontendOpts().ProgramAction = frontend::GeneratePCH;
    Invocation->getFrontendOpts().OutputFile = std::string(Temp);
    // The AST is freed: this process goes on to scan.
    Invocation->getFrontendOpts().DisableFree = false;
    // Instantiate in the entry the templates LibTorch's own headers use, once, instead of in
    // every scan that loads it (-fpch-instantiate-templates): on the example a warm
    // -fsyntax-only went from 5.2 s to 2.1 s, for a 20 % larger entry built 20 % slower. A
    // benign option: the scans that load the entry need not set it.
    clang::tidy::mpnanny::langOptionsOf(*Invocation).PCHInstantiateTemplates = true;
    CompilerInstance Compiler;
    Compiler.setInvocation(std::move(Invocation));
    Compiler.createDiagnostics(Diagnostics, /*ShouldOwnClient=*/false);
    Compiler.createFileManager(FS);
    Ok = Compiler.ExecuteAction(Action) && !Compiler.getDiagnostics().hasErrorOccurred();
  }
  if (!Ok) {
    Error = "the includes do not compile on their own";
    if (Diagnostics->err_begin() != Diagnostics->err_end())
      Error += " (first error: " + Diagnostics->err_begin()->second + ")";
  }

  nlohmann::json Manifest = {{"format", EntryFormat},
                             {"compiler", getClangFullVersion()},
                             {"includes", P.Includes},
                             {"ok", Ok},
                             {"error", Ok ? "" : Error}};
  nlohmann::json Inputs = nlohmann::json::array();
  Action.Files.push_back(Header);
  for (const auto &F : Action.Files) {
    llvm::SmallString<256> Absolute(F);
    fs::make_absolute(P.WorkingDirectory, Absolute);
    if (auto I = stat(std::string(Absolute)))
      Inputs.push_back({I->Path, I->Size, I->Time});
  }
  Manifest["inputs"] = Inputs;
  if (Ok) {
    auto Built = stat(std::string(Temp));
    auto Hash = hashOf(std::string(Temp));
    if (!Built || !Built->Size || !Hash || fs::rename(Temp, path(P.Key, "pch"))) {
      fs::remove(Temp);
      Error = "cannot write to the cache folder " + Directory;
      return false;
    }
    Manifest["size"] = Built->Size;
    Manifest["hash"] = llvm::utohexstr(*Hash, true);
  } else {
    fs::remove(Temp);
  }
  // A failure is remembered too, until a header changes: a prefix that does not
  // compile would otherwise cost a full parse on every scan.
  if (!writeAtomically(path(P.Key, "json"), Manifest.dump(1)) && Ok) {
    Error = "cannot write to the cache folder " + Directory;
    return false;
  }
  return Ok;
}

void HeaderCache::reportOnce(const std::string &Key, const std::string &Text, std::string &Note) {
  std::lock_guard<std::mutex> G(Lock);
  if (Reported.insert(Key).second)
    Note = Text;
}

bool HeaderCache::needsBuild(const Plan &P, std::string &Note) {
  std::string Why;
  switch (check(P.Key, Why)) {
  case State::Valid: return false;
  case State::Failed:
    reportOnce(P.Key, "header cache not used for these includes: " + Why, Note);
    return false;
  case State::Broken:
    reportOnce(P.Key, "header cache entry " + path(P.Key, "pch") + " rebuilt: " + Why, Note);
    remove(P.Key);
    return true;
  case State::Missing: break;
  }
  return true;
}

std::optional<std::string> HeaderCache::pchFor(const Plan &P, std::string &Note) {
  auto ReportOnce = [&](const std::string &Text) { reportOnce(P.Key, Text, Note); };
  std::string Why;
  switch (check(P.Key, Why)) {
  case State::Valid: return path(P.Key, "pch");
  case State::Failed:
    ReportOnce("header cache not used for these includes: " + Why);
    return std::nullopt;
  case State::Missing:
  case State::Broken: break;
  }
  if (std::error_code EC = fs::create_directories(Directory)) {
    ReportOnce("header cache not used: cannot create " + Directory + ": " + EC.message());
    return std::nullopt;
  }
  // One process builds; the others wait for it and then read its entry.
  llvm::LockFileManager Locked(path(P.Key, "build"));
  if (Locked == llvm::LockFileManager::LFS_Shared) {
    Locked.waitForUnlock(/*MaxSeconds=*/900);
    if (check(P.Key, Why) == State::Valid)
      return path(P.Key, "pch");
  }
  // Owned (or the lock could not be taken: the renames still keep entries whole). It may
  // have been finished by the process that held the lock before.
  State Now = check(P.Key, Why);
  if (Now == State::Valid)
    return path(P.Key, "pch");
  if (Now == State::Failed) {
    ReportOnce("header cache not used for these includes: " + Why);
    return std::nullopt;
  }
  if (Now == State::Broken) {
    ReportOnce("header cache entry " + path(P.Key, "pch") + " rebuilt: " + Why);
    remove(P.Key);
  }
  std::string Error;
  if (!build(P, Error)) {
    std::lock_guard<std::mutex> G(Lock);
    Note = (Note.empty() ? "" : Note + "; ") + "header cache not used for these includes: " + Error;
    Reported.insert(P.Key);
    return std::nullopt;
  }
  return path(P.Key, "pch");
}

tooling::CompileCommand HeaderCache::withPch(tooling::CompileCommand Command,
                                             const std::string &Pch) {
  if (Command.CommandLine.empty())
    return Command;
  Command.CommandLine.insert(Command.CommandLine.begin() + 1,
                             {"-include-pch", Pch, "-fmodules-validate-system-headers"});
  return Command;
}

bool HeaderCache::isPchError(llvm::StringRef Message) {
  return Message.contains("precompiled header") || Message.contains("PCH file") ||
         Message.contains("AST file") || Message.contains(".pch'");
}

} // namespace mpnanny::check
