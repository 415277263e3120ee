//===--- Scan.cpp - mpnanny-check ------------------------------------------===//
#include "Scan.h"

#include "Output.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <set>
#include <spawn.h>
#include <thread>
#include <tuple>
#include <unistd.h>

using namespace clang;

namespace mpnanny::check {

static bool isThirdParty(llvm::StringRef File) {
  if (File.starts_with("/usr/") || File.starts_with("/opt/"))
    return true;
  static const std::set<std::string> Folders = {
      "_deps",  "third_party", "third-party", "thirdparty", "3rdparty",    "external",
      "extern", "vendor",      "deps",        "CMakeFiles", "node_modules"};
  for (auto It = llvm::sys::path::begin(File), End = llvm::sys::path::end(File); It != End; ++It)
    if (Folders.count(It->str()))
      return true;
  return false;
}

static bool isSource(llvm::StringRef File) {
  llvm::StringRef Ext = llvm::sys::path::extension(File);
  return Ext == ".cpp" || Ext == ".cc" || Ext == ".cxx" || Ext == ".c++" || Ext == ".C" ||
         Ext == ".cu";
}

std::vector<std::string> projectFiles(const tooling::CompilationDatabase &DB,
                                      const std::string &BuildDir) {
  llvm::SmallString<256> Build(BuildDir);
  llvm::sys::fs::make_absolute(Build);
  llvm::sys::fs::real_path(Build, Build);
  std::set<std::string> Out;
  for (const std::string &F : DB.getAllFiles()) {
    llvm::SmallString<256> Real(F);
    if (llvm::sys::fs::real_path(F, Real))
      Real = F; // listed but gone: keep the name, the scan reports it
    llvm::StringRef Path = Real;
    if (!isSource(Path) || isThirdParty(Path))
      continue;
    // Sources generated into the build folder (moc, protobuf, configure_file) are not
    // the user's code.
    if (!Build.empty() && Path.starts_with(Build) &&
        (Path.size() == Build.size() || Path[Build.size()] == '/'))
      continue;
    Out.insert(F);
  }
  return {Out.begin(), Out.end()};
}

namespace {
/// The commands worked out beforehand for one file: the database a worker thread
/// hands to clang-tidy, so that no two threads share a database object.
class OneFileDatabase : public tooling::CompilationDatabase {
public:
  OneFileDatabase(std::string File, std::vector<tooling::CompileCommand> Commands)
      : File(std::move(File)), Commands(std::move(Commands)) {}
  std::vector<tooling::CompileCommand> getCompileCommands(llvm::StringRef F) const override {
    return F == File ? Commands : std::vector<tooling::CompileCommand>{};
  }
  std::vector<std::string> getAllFiles() const override { return {File}; }

private:
  std::string File;
  std::vector<tooling::CompileCommand> Commands;
};
} // namespace

/// Starts Command in a session of its own with its standard streams on /dev/null, and does
/// not wait for it: it may outlive this process, and holds no pipe of whoever runs us
/// (a CI step or CTest waits for those to close). False when it could not be started.
static bool startDetached(const std::vector<std::string> &Command) {
  std::vector<char *> Argv;
  for (const std::string &A : Command)
    Argv.push_back(const_cast<char *>(A.c_str()));
  Argv.push_back(nullptr);
  posix_spawn_file_actions_t Streams;
  posix_spawnattr_t Attributes;
  posix_spawn_file_actions_init(&Streams);
  posix_spawnattr_init(&Attributes);
  for (int Fd = 0; Fd < 3; ++Fd)
    posix_spawn_file_actions_addopen(&Streams, Fd, "/dev/null", Fd ? O_WRONLY : O_RDONLY, 0);
  posix_spawnattr_setflags(&Attributes, POSIX_SPAWN_SETSID);
  pid_t Child = 0;
  const int Error = posix_spawn(&Child, Argv[0], &Streams, &Attributes, Argv.data(), environ);
  posix_spawnattr_destroy(&Attributes);
  posix_spawn_file_actions_destroy(&Streams);
  return Error == 0;
}

/// Each file's precompiled header, built once per distinct set of leading includes
/// and flags, Jobs entries at a time, before any file is scanned. An entry missing for
/// a single file would cost more to build and load than a plain parse: that file is
/// scanned without it while the entry is built for the next scan, by a detached process
/// (DetachedBuild) or else on a thread of Background. ForegroundOnly builds every entry
/// before returning.
static std::vector<std::optional<std::string>>
prepareCache(HeaderCache &Cache, const std::vector<std::string> &Files,
             const std::vector<std::vector<tooling::CompileCommand>> &Commands, unsigned Jobs,
             const FileSystemFactory &MakeFS, std::vector<std::thread> &Background,
             const std::vector<std::string> &DetachedBuild, bool ForegroundOnly = false) {
  std::vector<std::optional<std::string>> Pch(Files.size());
  std::map<std::string, std::pair<HeaderCache::Plan, std::vector<size_t>>> ByKey;
  auto FS = MakeFS ? MakeFS() : llvm::vfs::createPhysicalFileSystem();
  for (size_t I = 0; I < Files.size(); ++I) {
    // A file built twice with other flags would need two entries: scanned as it is.
    if (Commands[I].size() != 1)
      continue;
    auto Text = FS->getBufferForFile(Files[I]);
    if (!Text)
      continue;
    if (auto Plan = HeaderCache::planFor(Commands[I].front(), (*Text)->getBuffer())) {
      auto &Entry = ByKey[Plan->Key];
      Entry.first = std::move(*Plan);
      Entry.second.push_back(I);
    }
  }
  std::vector<const std::pair<HeaderCache::Plan, std::vector<size_t>> *> Entries;
  const bool Debug = std::getenv("MPNANNY_DEBUG_SCAN") && *std::getenv("MPNANNY_DEBUG_SCAN");
  static std::mutex Print;
  auto Tell = [](const std::string &Note, const char *Kind = vocab::name(vocab::Severity::Note)) {
    if (Note.empty())
      return;
    std::lock_guard<std::mutex> G(Print);
    llvm::errs() << "mpnanny-check: " << Kind << ": " << Note << "\n";
  };
  bool Detached = false;
  for (const auto &[Key, Entry] : ByKey) {
    if (!ForegroundOnly && Entry.second.size() == 1) {
      std::string Note;
      const bool Missing = Cache.needsBuild(Entry.first, Note);
      Tell(Note);
      if (Missing) {
        if (Debug)
          Tell(Files[Entry.second.front()] + ": header cache entry built in the background",
               "debug");
        // One process builds every single file's entry: it finds them as this scan did.
        if (!DetachedBuild.empty() && (Detached || startDetached(DetachedBuild))) {
          Detached = true;
          continue;
        }
        Background.emplace_back([&Cache, Plan = Entry.first, Tell] {
          std::string Note;
          Cache.pchFor(Plan, Note);
          Tell(Note);
        });
        continue;
      }
    }
    Entries.push_back(&Entry);
  }
  std::atomic<size_t> Next{0};
  // Building an entry for LibTorch takes about as long as a scan: say so on a terminal.
  const bool Progress = llvm::sys::Process::StandardErrIsDisplayed();
  auto Worker = [&] {
    for (size_t E = Next++; E < Entries.size(); E = Next++) {
      if (Progress && !Cache.ready(Entries[E]->first)) {
        llvm::StringRef First = llvm::StringRef(Entries[E]->first.Includes).split('\n').first;
        Tell("building the header cache for " + std::to_string(Entries[E]->second.size()) +
                 " file(s) (" + First.str() + "...), once",
             "progress");
      }
      std::string Note;
      std::optional<std::string> Built = Cache.pchFor(Entries[E]->first, Note);
      Tell(Note);
      for (size_t I : Entries[E]->second) {
        Pch[I] = Built;
        if (Debug && Built)
          Tell(Files[I] + ": header cache " + *Built, "debug");
      }
    }
  };
  std::vector<std::thread> Threads;
  for (unsigned J = 1; J < std::min<size_t>(Jobs, Entries.size()); ++J)
    Threads.emplace_back(Worker);
  Worker();
  for (auto &T : Threads)
    T.join();
  return Pch;
}

/// One file: with its precompiled header when it has one, and again without it when the
/// compiler refuses the header (stale or corrupt since it was checked), which is then
/// dropped from the cache.
static void scanOne(FileScan &S, const std::vector<tooling::CompileCommand> &Commands,
                    const std::optional<std::string> &Pch, const ContextFactory &MakeContext,
                    bool ApplyFixes, const FileSystemFactory &MakeFS,
                    const ScanSettings &Settings) {
  auto Run = [&](const std::vector<tooling::CompileCommand> &Given) {
    S.Context = MakeContext();
    OneFileDatabase DB(S.File, Given);
    // A physical file system of its own: the process-wide one follows chdir, and
    // clang-tidy sets the working directory of each compile command on it.
    auto FS = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(
        MakeFS ? MakeFS() : llvm::vfs::createPhysicalFileSystem());
    S.Errors =
        clang::tidy::runClangTidy(*S.Context, DB, {S.File}, FS, ApplyFixes, Settings.Profile);
    // The checks run on this thread and log here: the log is per thread.
    S.Details = FindingLog::take();
    S.Parse = FindingLog::takeParse();
    S.Facts = FindingLog::takeFacts();
  };
  if (Pch && Settings.Cache) {
    std::vector<tooling::CompileCommand> WithPch;
    for (const auto &C : Commands)
      WithPch.push_back(HeaderCache::withPch(C, *Pch));
    Run(WithPch);
    auto Refusal = std::find_if(S.Errors.begin(), S.Errors.end(), [](const auto &E) {
      return E.DiagLevel == tooling::Diagnostic::Error &&
             HeaderCache::isPchError(E.Message.Message);
    });
    if (Refusal == S.Errors.end())
      return;
    llvm::errs() << "mpnanny-check: note: " << S.File << ": the compiler refused the header "
                 << "cache entry " << *Pch << " (" << Refusal->Message.Message
                 << "); scanned without it, and the entry is rebuilt next time\n";
    Settings.Cache->discard(*Pch);
  }
  Run(Commands);
}

std::vector<FileScan> scanFiles(const std::vector<std::string> &Files,
                                const std::vector<std::vector<tooling::CompileCommand>> &Commands,
                                const ContextFactory &MakeContext, unsigned Jobs, bool ApplyFixes,
                                const FileSystemFactory &MakeFS, const ScanSettings &Settings) {
  Jobs = std::max(1u, std::min<unsigned>(Jobs, static_cast<unsigned>(Files.size())));
  std::vector<std::optional<std::string>> Pch(Files.size());
  // Entries built alongside the scan; joined before returning (by a destructor, so that
  // every return waits for them: a half-built entry is only a temporary file, but the
  // thread must not outlive the cache it writes to).
  struct Joiner {
    std::vector<std::thread> Threads;
    ~Joiner() {
      for (auto &T : Threads)
        T.join();
    }
  } Background;
  if (Settings.Cache)
    Pch = prepareCache(*Settings.Cache, Files, Commands, Jobs, MakeFS, Background.Threads,
                       Settings.DetachedCacheBuild);

  std::vector<FileScan> Scans(Files.size());
  std::atomic<size_t> Started{0};
  std::mutex ProgressLock;
  const bool Progress = llvm::sys::Process::StandardErrIsDisplayed();
  auto Announce = [&](size_t I) {
    if (!Progress)
      return;
    std::lock_guard<std::mutex> G(ProgressLock);
    llvm::errs() << "[" << ++Started << "/" << Files.size() << "] " << Files[I] << "\n";
  };

  if (!Settings.TimeoutSeconds) {
    std::atomic<size_t> Next{0};
    auto Worker = [&] {
      for (size_t I = Next++; I < Files.size(); I = Next++) {
        Announce(I);
        Scans[I].File = Files[I];
        scanOne(Scans[I], Commands[I], Pch[I], MakeContext, ApplyFixes, MakeFS, Settings);
      }
    };
    std::vector<std::thread> Threads;
    for (unsigned J = 1; J < Jobs; ++J)
      Threads.emplace_back(Worker);
    Worker();
    for (auto &T : Threads)
      T.join();
    return Scans;
  }

  // With a time limit, each file runs on a thread of its own that can be abandoned: a
  // parse cannot be interrupted. What such a thread touches is its own (shared_ptr), so
  // it may go on running after this function has returned.
  struct Job {
    FileScan Scan;
    std::vector<tooling::CompileCommand> Commands;
    std::optional<std::string> Pch;
    ContextFactory MakeContext;
    FileSystemFactory MakeFS;
    ScanSettings Settings;
    bool ApplyFixes = false;
    std::chrono::steady_clock::time_point Deadline;
    bool Done = false;
  };
  auto Finished = std::make_shared<std::pair<std::mutex, std::condition_variable>>();
  std::vector<std::shared_ptr<Job>> Running(Files.size());
  std::vector<bool> Collected(Files.size(), false);
  size_t Next = 0, Active = 0, Left = Files.size();
  std::unique_lock<std::mutex> L(Finished->first);
  while (Left) {
    while (Active < Jobs && Next < Files.size()) {
      size_t I = Next++;
      Announce(I);
      auto J = std::make_shared<Job>();
      J->Scan.File = Files[I];
      J->Commands = Commands[I];
      J->Pch = Pch[I];
      J->MakeContext = MakeContext;
      J->MakeFS = MakeFS;
      J->Settings = Settings;
      J->ApplyFixes = ApplyFixes;
      J->Deadline =
          std::chrono::steady_clock::now() + std::chrono::seconds(Settings.TimeoutSeconds);
      Running[I] = J;
      ++Active;
      std::thread([J, Finished] {
        scanOne(J->Scan, J->Commands, J->Pch, J->MakeContext, J->ApplyFixes, J->MakeFS,
                J->Settings);
        std::lock_guard<std::mutex> G(Finished->first);
        J->Done = true;
        Finished->second.notify_all();
      }).detach();
    }
    auto Earliest = std::chrono::steady_clock::time_point::max();
    for (size_t I = 0; I < Files.size(); ++I)
      if (Running[I] && !Collected[I])
        Earliest = std::min(Earliest, Running[I]->Deadline);
    Finished->second.wait_until(L, Earliest);
    auto Now = std::chrono::steady_clock::now();
    for (size_t I = 0; I < Files.size(); ++I) {
      if (!Running[I] || Collected[I])
        continue;
      if (Running[I]->Done) {
        Scans[I] = std::move(Running[I]->Scan);
      } else if (Now >= Running[I]->Deadline) {
        Scans[I].File = Files[I];
        Scans[I].Context = MakeContext(); // what the reporters read, with no finding
        Scans[I].StoppedAfterSeconds = Settings.TimeoutSeconds;
      } else {
        continue;
      }
      Collected[I] = true;
      Running[I].reset();
      --Active;
      --Left;
    }
  }
  return Scans;
}

void buildCacheEntries(HeaderCache &Cache, const std::vector<std::string> &Files,
                       const std::vector<std::vector<tooling::CompileCommand>> &Commands,
                       unsigned Jobs) {
  std::vector<std::thread> None;
  prepareCache(Cache, Files, Commands, Jobs, nullptr, None, {}, /*ForegroundOnly=*/true);
}

void dropRepeats(std::vector<FileScan> &Scans) {
  std::set<std::tuple<std::string, unsigned, std::string, std::string>> Seen;
  for (auto &S : Scans) {
    auto &E = S.Errors;
    E.erase(std::remove_if(E.begin(), E.end(),
                           [&](const clang::tidy::ClangTidyError &Err) {
                             // Errors without a place (a bad option) are the same for
                             // every file; command-line errors count for each file.
                             bool Placeless = Err.Message.FilePath.empty();
                             if (Placeless && Err.DiagnosticName != "clang-tidy-config")
                               return false;
                             return !Seen.emplace(
                                             absolutePath(Err.Message.FilePath, Err.BuildDirectory),
                                             Err.Message.FileOffset, Err.DiagnosticName,
                                             Err.Message.Message)
                                         .second;
                           }),
            E.end());
  }
}

} // namespace mpnanny::check
