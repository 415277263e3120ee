//===--- Sandbox.cpp - mpnanny-mcp -----------------------------------------===//
#include "Sandbox.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <fstream>
#include <map>
#include <mutex>

namespace mpnanny::mcp {

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

bool isUnder(const std::string &P, const std::string &Dir) {
  if (Dir == "/")
    return llvm::StringRef(P).starts_with("/");
  return P == Dir ||
         (P.size() > Dir.size() && llvm::StringRef(P).starts_with(Dir) && P[Dir.size()] == '/');
}

static std::string canonical(const std::string &P) {
  llvm::SmallString<256> Real;
  if (fs::real_path(P, Real, /*expand_tilde=*/false))
    return "";
  return std::string(Real);
}

Sandbox::Sandbox(const std::vector<std::string> &GivenRoots, std::vector<std::string> Headers,
                 size_t MaxReadBytes)
    : MaxRead(MaxReadBytes) {
  for (const auto &R : GivenRoots) {
    std::string C = canonical(R);
    if (C.empty() || !fs::is_directory(C))
      throw std::runtime_error("root '" + R + "' is not a folder");
    Roots.push_back(C);
  }
  for (const auto &H : Headers)
    if (std::string C = canonical(H); !C.empty())
      HeaderDirs.push_back(C);
}

bool Sandbox::contains(const std::string &P) const {
  // A path that does not exist yet (a finding in a file deleted since) is judged by
  // the longest part of it that does, so a symlinked folder cannot smuggle it in.
  llvm::SmallString<256> Abs(P);
  path::remove_dots(Abs, /*remove_dot_dot=*/true);
  std::string Tail;
  while (!Abs.empty()) {
    std::string C = canonical(std::string(Abs));
    if (!C.empty()) {
      std::string Full = C + Tail;
      for (const auto &R : Roots)
        if (isUnder(Full, R))
          return true;
      return false;
    }
    Tail = "/" + path::filename(Abs).str() + Tail;
    llvm::StringRef Parent = path::parent_path(Abs);
    if (Parent == Abs)
      break;
    // The parent is a prefix of Abs: shorten it in place (assigning Abs a view into itself is
    // what LLVM's assertions refuse, since the copy may reallocate the buffer it reads).
    Abs.resize(Parent.size());
  }
  return false;
}

std::string Sandbox::resolve(const std::string &Given, Kind K, const std::string &Arg,
                             bool SizeBounded) const {
  if (Given.empty())
    throw RpcError(code::InvalidParams, Arg + ": an empty path", "invalid_path");
  if (Given.find('\0') != std::string::npos)
    throw RpcError(code::InvalidParams, Arg + ": a path with a NUL byte", "invalid_path");
  llvm::SmallString<256> Abs(Given);
  if (!path::is_absolute(Abs)) {
    Abs = Roots.front();
    path::append(Abs, Given);
  }
  std::string Roots1;
  for (const auto &R : Roots)
    Roots1 += (Roots1.empty() ? "" : ", ") + R;
  std::string C = canonical(std::string(Abs));
  if (C.empty()) {
    // Outside first: "no such file" for /etc/shadow-probe would tell what exists there.
    if (!contains(std::string(Abs)))
      throw RpcError(code::InvalidParams,
                     Arg + ": '" + Given + "' is outside the allowed roots (" + Roots1 + ")",
                     "outside_root");
    throw RpcError(code::InvalidParams, Arg + ": '" + Given + "' does not exist", "not_found");
  }
  bool Inside = false;
  for (const auto &R : Roots)
    Inside = Inside || isUnder(C, R);
  if (!Inside)
    throw RpcError(code::InvalidParams,
                   Arg + ": '" + Given + "' resolves to '" + C + "', outside the allowed roots (" +
                       Roots1 + ")",
                   "outside_root");
  fs::file_status St;
  if (fs::status(C, St))
    throw RpcError(code::InvalidParams, Arg + ": '" + Given + "' cannot be read", "not_found");
  if (K == Kind::File && St.type() != fs::file_type::regular_file)
    throw RpcError(code::InvalidParams, Arg + ": '" + Given + "' is not a regular file",
                   "not_a_file");
  if (K == Kind::Directory && St.type() != fs::file_type::directory_file)
    throw RpcError(code::InvalidParams, Arg + ": '" + Given + "' is not a folder",
                   "not_a_directory");
  if (SizeBounded && St.type() == fs::file_type::regular_file && St.getSize() > MaxRead)
    throw RpcError(code::InvalidParams,
                   Arg + ": '" + Given + "' is " + std::to_string(St.getSize()) +
                       " bytes, over the " + std::to_string(MaxRead) + "-byte limit",
                   "too_large");
  return C;
}

std::optional<std::string> readBounded(const std::string &Path, size_t Max) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    return std::nullopt;
  std::string Text(Max + 1, '\0');
  In.read(Text.data(), static_cast<std::streamsize>(Text.size()));
  if (In.bad())
    return std::nullopt;
  Text.resize(static_cast<size_t>(In.gcount()));
  return Text;
}

std::string Sandbox::read(const std::string &Resolved, const std::string &Arg) const {
  // Bounded again at read time: the file may have grown since resolve().
  auto Text = readBounded(Resolved, MaxRead);
  if (!Text)
    throw RpcError(code::InvalidParams, Arg + ": cannot read '" + Resolved + "'", "unreadable");
  if (Text->size() > MaxRead)
    throw RpcError(code::InvalidParams,
                   Arg + ": '" + Resolved + "' is over the " + std::to_string(MaxRead) +
                       "-byte limit",
                   "too_large");
  return *Text;
}

// LLVM 19 made vfs::FileSystem::getRealPath() non-const and exists() virtual; its
// ProxyFileSystem forwards exists() straight to the file system it wraps, past status(), so
// the fence must answer it too. (A wrong version bound fails to compile, `override`, rather
// than leaving a way around the fence.)
#if LLVM_VERSION_MAJOR >= 19
#define MPNANNY_VFS_CONST
#else
#define MPNANNY_VFS_CONST const
#endif

namespace {
/// Opens, lists and stats only under Allowed. Ancestors of an allowed folder may be
/// stat'ed (the compiler walks up to them), not opened or listed.
class FencedFileSystem : public llvm::vfs::ProxyFileSystem {
public:
  FencedFileSystem(llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS,
                   std::vector<std::string> Allowed)
      : ProxyFileSystem(std::move(FS)), Allowed(std::move(Allowed)) {}

  llvm::ErrorOr<llvm::vfs::Status> status(const llvm::Twine &P) override {
    auto A = access(P);
    if (A == Access::None)
      return std::make_error_code(std::errc::no_such_file_or_directory);
    return ProxyFileSystem::status(P);
  }
  llvm::ErrorOr<std::unique_ptr<llvm::vfs::File>> openFileForRead(const llvm::Twine &P) override {
    if (access(P) != Access::Full)
      return std::make_error_code(std::errc::no_such_file_or_directory);
    return ProxyFileSystem::openFileForRead(P);
  }
  llvm::vfs::directory_iterator dir_begin(const llvm::Twine &Dir, std::error_code &EC) override {
    if (access(Dir) != Access::Full) {
      EC = std::make_error_code(std::errc::no_such_file_or_directory);
      return {};
    }
    return ProxyFileSystem::dir_begin(Dir, EC);
  }
#if LLVM_VERSION_MAJOR >= 19
  bool exists(const llvm::Twine &P) override {
    return access(P) != Access::None && ProxyFileSystem::exists(P);
  }
#endif
  std::error_code getRealPath(const llvm::Twine &P,
                              llvm::SmallVectorImpl<char> &Output) MPNANNY_VFS_CONST override {
    if (const_cast<FencedFileSystem *>(this)->access(P) == Access::None)
      return std::make_error_code(std::errc::no_such_file_or_directory);
    return ProxyFileSystem::getRealPath(P, Output);
  }

private:
  enum class Access { None, StatOnly, Full };
  Access access(const llvm::Twine &P) {
    llvm::SmallString<256> Abs;
    P.toVector(Abs);
    if (getUnderlyingFS().makeAbsolute(Abs))
      return Access::None;
    std::string Key(Abs);
    std::lock_guard<std::mutex> Lock(CacheLock);
    if (auto It = Cache.find(Key); It != Cache.end())
      return It->second;
    llvm::SmallString<256> Real;
    Access A = Access::None;
    if (!getUnderlyingFS().getRealPath(Abs, Real)) {
      std::string R(Real);
      for (const auto &D : Allowed) {
        if (isUnder(R, D))
          A = Access::Full;
        else if (A == Access::None && isUnder(D, R))
          A = Access::StatOnly;
      }
    }
    return Cache[Key] = A;
  }
  std::vector<std::string> Allowed;
  std::mutex CacheLock;
  std::map<std::string, Access> Cache;
};
} // namespace

llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> Sandbox::compilerFileSystem() const {
  std::vector<std::string> Allowed = Roots;
  Allowed.insert(Allowed.end(), HeaderDirs.begin(), HeaderDirs.end());
  return llvm::makeIntrusiveRefCnt<FencedFileSystem>(llvm::vfs::createPhysicalFileSystem(),
                                                     Allowed);
}

llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> Sandbox::rootFileSystem() const {
  // Its working folder is the first root, not the server's: clang-tidy reads the options for
  // "" (relative, so the working folder) before the first file, and a server started outside
  // its roots printed "Error reading configuration from <cwd>: directory doesn't exist".
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> Physical = llvm::vfs::createPhysicalFileSystem();
  if (!Roots.empty())
    Physical->setCurrentWorkingDirectory(Roots.front());
  return llvm::makeIntrusiveRefCnt<FencedFileSystem>(std::move(Physical), Roots);
}

namespace {
/// Options whose value is the next argument.
const char *const SeparateValue[] = {"-I", "-isystem", "-iquote",   "-idirafter", "-D",     "-U",
                                     "-x", "-include", "-isysroot", "--sysroot",  "-target"};

/// Prefixes that load code, write files or reach the compiler's internals.
const char *const Unsafe[] = {"-fplugin",
                              "-fpass-plugin",
                              "-Xclang",
                              "-Xanalyzer",
                              "-Xpreprocessor",
                              "-Xassembler",
                              "-Xlinker",
                              "-Xarch",
                              "-mllvm",
                              "-load",
                              "-plugin",
                              "-add-plugin",
                              "-ftime-trace",
                              "-fmodules",
                              "-fmodule-",
                              "-fimplicit-module",
                              "-fprebuilt-module",
                              "-fcxx-modules",
                              "-fcrash-diagnostics",
                              "-save-temps",
                              "-save-stats",
                              "-fprofile",
                              "-fsave-optimization-record",
                              "-foptimization-record",
                              "--config",
                              "-serialize-diagnostics",
                              "--serialize-diagnostics",
                              "-MJ",
                              "-MF",
                              "-dependency-",
                              "-header-include",
                              "-ivfsoverlay",
                              "-fproc-stat-report",
                              "-emit-",
                              "--precompile",
                              "-fdepfile",
                              "-B",
                              "-fcoverage",
                              "-fembed"};
/// Of the unsafe ones, those that take the next argument as their value.
const char *const UnsafeSeparate[] = {"-Xclang",
                                      "-Xanalyzer",
                                      "-Xpreprocessor",
                                      "-Xassembler",
                                      "-Xlinker",
                                      "-mllvm",
                                      "-load",
                                      "-plugin",
                                      "-add-plugin",
                                      "-MF",
                                      "-MJ",
                                      "-MT",
                                      "-MQ",
                                      "-o",
                                      "-serialize-diagnostics",
                                      "--serialize-diagnostics",
                                      "-ivfsoverlay",
                                      "--config",
                                      "-dependency-file",
                                      "-dependency-dot",
                                      "-header-include-file"};

bool startsWithAny(llvm::StringRef A, llvm::ArrayRef<const char *> Prefixes) {
  for (const char *P : Prefixes)
    if (A.starts_with(P))
      return true;
  return false;
}
} // namespace

void Sandbox::checkFlags(const std::vector<std::string> &Flags, const std::string &Arg) {
  // Allowed: what decides how the code parses. Everything else is refused by name, so
  // that an agent learns what to drop instead of getting a silently different scan.
  static const char *const Allowed[] = {
      "-std=",     "--std=",   "-I",        "-isystem",  "-iquote",  "-idirafter", "-D",
      "-U",        "-x",       "-W",        "-w",        "-O",       "-g",         "-f",
      "-m",        "-pthread", "-nostdinc", "-stdlib=",  "-include", "-isysroot",  "--sysroot",
      "-pedantic", "-ansi",    "-target",   "--target=", "-fopenmp", "-c"};
  for (size_t I = 0; I < Flags.size(); ++I) {
    llvm::StringRef A = Flags[I];
    bool Ok = !A.empty() && A.front() == '-' && startsWithAny(A, Allowed) &&
              !startsWithAny(A, Unsafe) && !A.starts_with("-mllvm");
    if (!Ok)
      throw RpcError(code::InvalidParams,
                     Arg + ": flag '" + A.str() +
                         "' is not allowed (allowed: -std=, -I, -isystem, -iquote, -idirafter, "
                         "-D, -U, -x, -W, -f, -m, -O, -g, -include, -stdlib=, --sysroot, "
                         "-target; no plugins, -Xclang, -mllvm, or output files)",
                     "flag_not_allowed");
    for (const char *S : SeparateValue)
      if (A == S) {
        if (I + 1 == Flags.size())
          throw RpcError(code::InvalidParams, Arg + ": flag '" + A.str() + "' needs a value",
                         "flag_not_allowed");
        ++I; // the value is a path or a macro, not a flag
        break;
      }
  }
}

clang::tooling::ArgumentsAdjuster Sandbox::stripUnsafeArguments() {
  return [](const clang::tooling::CommandLineArguments &Args, llvm::StringRef) {
    clang::tooling::CommandLineArguments Out;
    for (size_t I = 0; I < Args.size(); ++I) {
      llvm::StringRef A = Args[I];
      if (I > 0 && (startsWithAny(A, Unsafe) || A.starts_with("@"))) {
        for (const char *S : UnsafeSeparate)
          if (A == S) {
            ++I;
            break;
          }
        continue;
      }
      Out.push_back(Args[I]);
    }
    return Out;
  };
}

} // namespace mpnanny::mcp
