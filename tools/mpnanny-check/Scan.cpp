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
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

using namespace clang;

namespace mpnanny::check {

static bool isThirdParty(llvm::StringRef File) {
  if (File.startswith("/usr/") || File.startswith("/opt/"))
    return true;
  static const std::set<std::string> Folders = {
      "_deps",  "third_party", "third-party", "thirdparty", "3rdparty", "external",
      "extern", "vendor",      "deps",        "CMakeFiles", "node_modules"};
  for (auto It = llvm::sys::path::begin(File), End = llvm::sys::path::end(File); It != End;
       ++It)
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
    if (!Build.empty() && Path.startswith(Build) &&
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

std::vector<FileScan> scanFiles(const std::vector<std::string> &Files,
                                const std::vector<std::vector<tooling::CompileCommand>> &Commands,
                                const ContextFactory &MakeContext, unsigned Jobs,
                                bool ApplyFixes, const FileSystemFactory &MakeFS) {
  std::vector<FileScan> Scans(Files.size());
  std::atomic<size_t> Next{0};
  std::atomic<size_t> Started{0};
  std::mutex ProgressLock;
  const bool Progress = llvm::sys::Process::StandardErrIsDisplayed();
  auto Worker = [&] {
    for (size_t I = Next++; I < Files.size(); I = Next++) {
      if (Progress) {
        std::lock_guard<std::mutex> G(ProgressLock);
        llvm::errs() << "[" << ++Started << "/" << Files.size() << "] " << Files[I] << "\n";
      }
      FileScan &S = Scans[I];
      S.File = Files[I];
      S.Context = MakeContext();
      OneFileDatabase DB(Files[I], Commands[I]);
      // A physical file system of its own: the process-wide one follows chdir, and
      // clang-tidy sets the working directory of each compile command on it.
      auto FS = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(
          MakeFS ? MakeFS() : llvm::vfs::createPhysicalFileSystem());
      S.Errors = clang::tidy::runClangTidy(*S.Context, DB, {Files[I]}, FS, ApplyFixes);
      // The checks run on this thread and log here: the log is per thread.
      S.Details = FindingLog::take();
    }
  };
  Jobs = std::max(1u, std::min<unsigned>(Jobs, static_cast<unsigned>(Files.size())));
  if (Jobs == 1) {
    Worker();
    return Scans;
  }
  std::vector<std::thread> Threads;
  for (unsigned J = 0; J < Jobs; ++J)
    Threads.emplace_back(Worker);
  for (auto &T : Threads)
    T.join();
  return Scans;
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
                             return !Seen
                                         .emplace(absolutePath(Err.Message.FilePath,
                                                               Err.BuildDirectory),
                                                  Err.Message.FileOffset, Err.DiagnosticName,
                                                  Err.Message.Message)
                                         .second;
                           }),
            E.end());
  }
}

} // namespace mpnanny::check
