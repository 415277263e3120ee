//===--- CudaFlags.cpp - mpnanny-check -------------------------------------===//
#include "CudaFlags.h"

#include "KnowledgeBase.h" // installedDataDirectory
#include "clang/Basic/Version.h"
#include "clang/Driver/Options.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Option/ArgList.h"
#include "llvm/Option/OptTable.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include <algorithm>
#include <cstdlib>

using namespace clang;

namespace mpnanny::check {

bool hasCudaExtension(llvm::StringRef File) {
  llvm::StringRef Ext = llvm::sys::path::extension(File);
  return Ext == ".cu" || Ext == ".cuh";
}

/// The language a `-x` option names, joined (-xcuda) or not (-x cuda); nullopt for
/// any other argument.
static std::optional<llvm::StringRef> languageNamedBy(const tooling::CommandLineArguments &Args,
                                                      size_t &I) {
  llvm::StringRef A = Args[I];
  if (A == "-x" && I + 1 < Args.size())
    return llvm::StringRef(Args[++I]);
  if (A.starts_with("-x") && A.size() > 2 && !A.starts_with("-xc++-") &&
      A.drop_front(2).find('=') == llvm::StringRef::npos)
    return A.drop_front(2);
  return std::nullopt;
}

bool compilesCuda(const tooling::CommandLineArguments &Args, llvm::StringRef File) {
  std::optional<llvm::StringRef> Language;
  for (size_t I = 1; I < Args.size(); ++I) {
    if (Args[I] == File || llvm::sys::path::filename(Args[I]) == llvm::sys::path::filename(File))
      break; // a -x after the source does not apply to it
    if (auto L = languageNamedBy(Args, I))
      Language = *L;
  }
  if (Language)
    return *Language == "cuda" || *Language == "cu";
  return hasCudaExtension(File);
}

bool isNvccCommand(const tooling::CommandLineArguments &Args) {
  if (Args.empty())
    return false;
  llvm::StringRef Name = llvm::sys::path::filename(Args.front());
  return Name == "nvcc" || Name == "nvcc.exe";
}

/// The SM number of an architecture name (sm_80, compute_86, sm_90a, 80); 0 for
/// names that are not one (native, all).
static unsigned smNumber(llvm::StringRef Name) {
  Name.consume_front("sm_") || Name.consume_front("compute_") || Name.consume_front("lto_");
  unsigned N = 0;
  Name = Name.take_while([](char C) { return C >= '0' && C <= '9'; });
  if (Name.getAsInteger(10, N))
    return 0;
  return N;
}

/// The newest SM architecture the Clang we were built with knows (Clang 16: sm_90).
static unsigned newestKnownSm() {
  const unsigned Major = CLANG_VERSION_MAJOR;
  return Major >= 20 ? 120 : 90;
}

/// Every architecture an nvcc -gencode / -arch / -code value names
/// ("arch=compute_80,code=[sm_80,compute_80]", "sm_86").
static void collectArchitectures(llvm::StringRef Value, std::vector<unsigned> &Out) {
  llvm::SmallVector<llvm::StringRef, 8> Parts;
  Value.split(Parts, ',');
  for (llvm::StringRef Part : Parts) {
    Part = Part.trim();
    Part.consume_front("arch=") || Part.consume_front("code=");
    Part = Part.trim("[] \"'");
    if (unsigned N = smNumber(Part))
      Out.push_back(N);
  }
}

/// True when Clang's driver knows Flag, which takes no separate value: a GCC-only flag
/// (-fno-gnu-unique) would be a driver error, and no file would be parsed.
static bool clangKnows(llvm::StringRef Flag) {
  const std::string Storage = Flag.str();
  const char *Argv[] = {Storage.c_str()};
  unsigned MissingIndex = 0, MissingCount = 0;
  llvm::opt::InputArgList Parsed =
      driver::getDriverOptTable().ParseArgs(Argv, MissingIndex, MissingCount);
  if (MissingCount)
    return false;
  for (const llvm::opt::Arg *A : Parsed)
    if (A->getOption().getID() == driver::options::OPT_UNKNOWN ||
        A->getOption().getKind() == llvm::opt::Option::InputClass)
      return false;
  return true;
}

/// The flags a host compiler option (-Xcompiler) carries that matter to a parse and that
/// Clang takes as they are.
static bool hostFlagClangTakes(llvm::StringRef F) {
  for (llvm::StringRef Prefix :
       {"-I", "-isystem", "-D", "-U", "-std=", "-O", "-W", "-f", "-g", "-pthread"})
    if (F.starts_with(Prefix))
      return clangKnows(F);
  return false;
}

tooling::CommandLineArguments fromNvcc(const tooling::CommandLineArguments &Args) {
  // nvcc options that take their value as the next argument, and are not Clang's: dropped
  // with it (the -gencode family is read first).
  static const llvm::StringSet<> DroppedWithValue = {"-Xptxas",
                                                     "--ptxas-options",
                                                     "-Xlinker",
                                                     "--linker-options",
                                                     "-Xnvlink",
                                                     "--nvlink-options",
                                                     "-Xarchive",
                                                     "--archive-options",
                                                     "-Xfatbin",
                                                     "--fatbin-options",
                                                     "-ccbin",
                                                     "--compiler-bindir",
                                                     "-maxrregcount",
                                                     "--maxrregcount",
                                                     "--threads",
                                                     "-t",
                                                     "-diag-suppress",
                                                     "--diag-suppress",
                                                     "-MF",
                                                     "-MT",
                                                     "-MQ",
                                                     "--dependency-output",
                                                     "-cudart",
                                                     "--cudart",
                                                     "-default-stream",
                                                     "--default-stream",
                                                     "-split-compile",
                                                     "--split-compile",
                                                     "-rdc",
                                                     "--relocatable-device-code",
                                                     "--options-file",
                                                     "-optf",
                                                     "-l",
                                                     "-L",
                                                     "--library",
                                                     "--library-path",
                                                     "-ftz",
                                                     "-prec-div",
                                                     "-prec-sqrt",
                                                     "-fmad",
                                                     "--ftz",
                                                     "--prec-div",
                                                     "--prec-sqrt",
                                                     "--fmad",
                                                     "-Werror",
                                                     "-odir",
                                                     "--output-directory",
                                                     "-ldir",
                                                     "-arch-ls",
                                                     "--dlink-time-opt",
                                                     "-time",
                                                     "--time",
                                                     "--keep-dir",
                                                     "-keep-dir",
                                                     "--run-args"};
  static const llvm::StringSet<> ArchOptions = {
      "-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code", "--gpu-code"};
  // nvcc's long spellings of options Clang has.
  static const std::pair<llvm::StringRef, llvm::StringRef> Renamed[] = {
      {"--include-path", "-I"},
      {"--system-include", "-isystem"},
      {"--define-macro", "-D"},
      {"--undefine-macro", "-U"},
      {"--pre-include", "-include"},
      {"--output-file", "-o"},
      {"--compile", "-c"},
      {"--std", "-std="},
      {"-std", "-std="}};

  tooling::CommandLineArguments Out;
  Out.push_back("clang++");
  std::vector<unsigned> Architectures;
  // An absolute nvcc names its toolkit: <toolkit>/bin/nvcc.
  if (llvm::sys::path::is_absolute(Args.front())) {
    llvm::SmallString<256> Toolkit(Args.front());
    llvm::sys::path::remove_filename(Toolkit);
    if (llvm::sys::path::filename(Toolkit) == "bin") {
      llvm::sys::path::remove_filename(Toolkit);
      Out.push_back("--cuda-path=" + std::string(Toolkit));
    }
  }
  auto KeepHostFlags = [&](llvm::StringRef Value) {
    // nvcc splits -Xcompiler values at commas; a quoted value may also hold spaces.
    llvm::SmallVector<llvm::StringRef, 8> Flags;
    Value.split(Flags, ',');
    for (llvm::StringRef Group : Flags) {
      llvm::SmallVector<llvm::StringRef, 4> Words;
      Group.split(Words, ' ', -1, /*KeepEmpty=*/false);
      for (llvm::StringRef F : Words)
        if (hostFlagClangTakes(F))
          Out.push_back(F.str());
    }
  };
  for (size_t I = 1; I < Args.size(); ++I) {
    llvm::StringRef A = Args[I];
    const bool HasNext = I + 1 < Args.size();
    llvm::StringRef Name = A.split('=').first;
    llvm::StringRef Joined = A.contains('=') ? A.split('=').second : llvm::StringRef();
    if (ArchOptions.contains(Name)) {
      if (A.contains('='))
        collectArchitectures(Joined, Architectures);
      else if (HasNext)
        collectArchitectures(Args[++I], Architectures);
      continue;
    }
    if (Name == "-Xcompiler" || Name == "--compiler-options") {
      if (A.contains('='))
        KeepHostFlags(Joined);
      else if (HasNext)
        KeepHostFlags(Args[++I]);
      continue;
    }
    if (DroppedWithValue.contains(Name)) {
      if (!A.contains('=') && HasNext)
        ++I;
      continue;
    }
    if (A == "-x" && HasNext) {
      llvm::StringRef Language = Args[++I];
      Out.push_back("-x");
      Out.push_back(Language == "cu" ? "cuda" : Language.str());
      continue;
    }
    bool WasRenamed = false;
    for (const auto &[Long, Short] : Renamed) {
      if (Name != Long)
        continue;
      WasRenamed = true;
      llvm::StringRef Value = A.contains('=') ? Joined : HasNext ? llvm::StringRef(Args[++I]) : "";
      if (Short == "-c") {
        Out.push_back("-c");
      } else if (Short.ends_with("=")) {
        Out.push_back((Short + Value).str());
      } else {
        Out.push_back(Short.str());
        Out.push_back(Value.str());
      }
      break;
    }
    if (WasRenamed)
      continue;
    // Clang's own spellings, kept with their values.
    if (A == "-I" || A == "-isystem" || A == "-iquote" || A == "-idirafter" || A == "-D" ||
        A == "-U" || A == "-include" || A == "-o") {
      Out.push_back(A.str());
      if (HasNext)
        Out.push_back(Args[++I]);
      continue;
    }
    if (A.starts_with("-I") || A.starts_with("-isystem") || A.starts_with("-iquote") ||
        A.starts_with("-idirafter") || A.starts_with("-D") || A.starts_with("-U") ||
        A.starts_with("-std=") || A == "-c" || A.starts_with("-O") || A.starts_with("-W") ||
        A.starts_with("--cuda-path=")) {
      // nvcc's -Werror takes a kind list (cross-execution-space-call), not a warning name.
      if (A.starts_with("-Werror=") || A.starts_with("-Wno-deprecated-gpu-targets") ||
          A.starts_with("-Wext-lambda") || A.starts_with("-Wreorder"))
        continue;
      Out.push_back(A.str());
      continue;
    }
    if (A.starts_with("-")) // an nvcc option of its own (--expt-relaxed-constexpr, -lineinfo, ...)
      continue;
    // A source; a value of an nvcc option not listed above is not one.
    llvm::StringRef Ext = llvm::sys::path::extension(A);
    if (Ext == ".cu" || Ext == ".cuh" || Ext == ".cpp" || Ext == ".cc" || Ext == ".cxx" ||
        Ext == ".c" || Ext == ".C" || Ext == ".c++")
      Out.push_back(A.str());
  }
  // One architecture: tooling parses one job. The newest one listed that Clang knows,
  // since that is the code modern GPUs run.
  unsigned Newest = 0;
  for (unsigned N : Architectures)
    if (N <= newestKnownSm())
      Newest = std::max(Newest, N);
  if (Newest)
    Out.push_back("--cuda-gpu-arch=sm_" + std::to_string(Newest));
  return Out;
}

std::string newestReadableCudaVersion() {
  switch (CLANG_VERSION_MAJOR) {
  case 16: return "11.8";
  case 17: return "12.1";
  case 18: return "12.3";
  default: return CLANG_VERSION_MAJOR < 16 ? "11.5" : "12.5";
  }
}

/// "MAJOR.MINOR" as a comparable number (11.8 -> 1108).
static unsigned versionNumber(llvm::StringRef Version) {
  auto [Major, Minor] = Version.split('.');
  unsigned A = 0, B = 0;
  if (Major.getAsInteger(10, A))
    return 0;
  Minor.take_while([](char C) { return C >= '0' && C <= '9'; }).getAsInteger(10, B);
  return A * 100 + B;
}

/// The toolkit's version, from version.json (CUDA 11.1+), version.txt, or cuda.h.
static std::string toolkitVersion(const std::string &Path) {
  struct Source {
    const char *File;
    const char *Pattern;
  };
  static const Source Sources[] = {
      {"/version.json", "\"cuda\"[^}]*\"version\"[ \t]*:[ \t]*\"([0-9]+)\\.([0-9]+)"},
      {"/version.txt", "CUDA Version ([0-9]+)\\.([0-9]+)"},
  };
  for (const auto &S : Sources) {
    auto Buffer = llvm::MemoryBuffer::getFile(Path + S.File);
    if (!Buffer)
      continue;
    llvm::SmallVector<llvm::StringRef, 3> Match;
    if (llvm::Regex(S.Pattern).match((*Buffer)->getBuffer(), &Match))
      return (Match[1] + "." + Match[2]).str();
  }
  if (auto Buffer = llvm::MemoryBuffer::getFile(Path + "/include/cuda.h")) {
    llvm::SmallVector<llvm::StringRef, 2> Match;
    unsigned N = 0;
    if (llvm::Regex("#define[ \t]+CUDA_VERSION[ \t]+([0-9]+)")
            .match((*Buffer)->getBuffer(), &Match) &&
        !Match[1].getAsInteger(10, N))
      return std::to_string(N / 1000) + "." + std::to_string(N % 1000 / 10);
  }
  return "";
}

static bool isToolkit(const std::string &Path) {
  return llvm::sys::fs::exists(Path + "/include/cuda.h") ||
         llvm::sys::fs::exists(Path + "/bin/nvcc");
}

std::optional<CudaToolkit> findCudaToolkit(const tooling::CommandLineArguments &Args) {
  std::vector<std::string> Candidates;
  if (const char *Env = std::getenv("MPNANNY_CUDA_PATH"); Env && *Env) {
    if (llvm::StringRef(Env) == "none")
      return std::nullopt;
    Candidates.push_back(Env);
  }
  for (size_t I = 0; I < Args.size(); ++I) {
    llvm::StringRef A = Args[I];
    if (A.starts_with("--cuda-path="))
      Candidates.push_back(A.drop_front(strlen("--cuda-path=")).str());
    else if (A == "--cuda-path" && I + 1 < Args.size())
      Candidates.push_back(Args[I + 1]);
  }
  // A --cuda-path names the toolkit, or none at all: Clang looks no further.
  const bool Named = !Candidates.empty();
  if (!Named) {
    for (const char *Var : {"CUDA_PATH", "CUDA_HOME"})
      if (const char *Env = std::getenv(Var); Env && *Env)
        Candidates.push_back(Env);
    Candidates.push_back("/usr/local/cuda");
    Candidates.push_back("/usr/lib/cuda");
  }
  for (const auto &Path : Candidates) {
    if (!isToolkit(Path)) {
      if (Named)
        return std::nullopt;
      continue;
    }
    CudaToolkit T;
    T.Path = Path;
    T.Version = toolkitVersion(Path);
    T.Readable = !T.Version.empty() &&
                 versionNumber(T.Version) <= versionNumber(newestReadableCudaVersion());
    return T;
  }
  return std::nullopt;
}

std::string cudaIncludeDir() {
  if (const char *Env = std::getenv("MPNANNY_CUDA_INCLUDE"); Env && *Env)
    return Env;
  if (std::string Installed = kb::installedDataDirectory("cuda-include"); !Installed.empty())
    return Installed;
  return MPNANNY_SOURCE_CUDA_INCLUDE_DIR;
}

/// True when Dir is inside the toolkit at Root (its include/ or targets/*/include).
static bool isUnder(llvm::StringRef Dir, llvm::StringRef Root) {
  llvm::SmallString<256> RealDir, RealRoot;
  if (llvm::sys::fs::real_path(Dir, RealDir) || llvm::sys::fs::real_path(Root, RealRoot))
    return false;
  return llvm::StringRef(RealDir).starts_with(RealRoot) &&
         (RealDir.size() == RealRoot.size() || RealDir[RealRoot.size()] == '/');
}

/// A toolkit's include folder that is not the one found: it holds cuda_runtime.h, or it is
/// missing here and named like one (/usr/local/cuda/include from another machine's database).
static bool isOtherToolkitInclude(llvm::StringRef Dir) {
  if (llvm::sys::fs::exists(Dir + "/cuda_runtime.h"))
    return true;
  static const llvm::Regex Named("/cuda[^/]*(/targets/[^/]+)?/include/?$");
  return !llvm::sys::fs::exists(Dir) && Named.match(Dir);
}

/// Args without the include folders of a toolkit (inside the one at Root, or another's), and
/// without --cuda-path.
static tooling::CommandLineArguments withoutToolkit(const tooling::CommandLineArguments &Args,
                                                    const std::optional<CudaToolkit> &Toolkit) {
  static const char *const IncludeOptions[] = {"-I", "-isystem", "-idirafter"};
  tooling::CommandLineArguments Out;
  for (size_t I = 0; I < Args.size(); ++I) {
    llvm::StringRef A = Args[I];
    if (A.starts_with("--cuda-path="))
      continue;
    if (A == "--cuda-path") {
      ++I;
      continue;
    }
    bool Dropped = false;
    for (llvm::StringRef O : IncludeOptions) {
      if (!A.starts_with(O))
        continue;
      const bool Separate = A.size() == O.size();
      if (Separate && I + 1 >= Args.size())
        break;
      llvm::StringRef Dir = Separate ? llvm::StringRef(Args[I + 1]) : A.drop_front(O.size());
      if ((Toolkit && isUnder(Dir, Toolkit->Path)) || isOtherToolkitInclude(Dir)) {
        Dropped = true;
        I += Separate ? 1 : 0;
      }
      break;
    }
    if (!Dropped)
      Out.push_back(A.str());
  }
  return Out;
}

static bool hasFlag(const tooling::CommandLineArguments &Args, llvm::StringRef Flag) {
  return std::find(Args.begin(), Args.end(), Flag) != Args.end();
}

tooling::ArgumentsAdjuster cudaArgumentsAdjuster() {
  return [](const tooling::CommandLineArguments &Given, llvm::StringRef File) {
    tooling::CommandLineArguments Args = isNvccCommand(Given) ? fromNvcc(Given) : Given;
    if (Args.empty() || !compilesCuda(Args, File))
      return Args;
    tooling::CommandLineArguments Cuda;
    // A .cuh header is not a CUDA input by its name alone.
    if (llvm::sys::path::extension(File) == ".cuh")
      Cuda.push_back("-xcuda");
    // The host side: Clang parses device function bodies there as well, and defers the
    // errors of calls across the two sides, which the checks do not need.
    if (!hasFlag(Args, "--cuda-host-only") && !hasFlag(Args, "--cuda-device-only") &&
        !hasFlag(Args, "--cuda-compile-host-device"))
      Cuda.push_back("--cuda-host-only");
    if (!hasFlag(Args, "-nocudalib"))
      Cuda.push_back("-nocudalib");
    std::optional<CudaToolkit> Toolkit = findCudaToolkit(Args);
    if (Toolkit && Toolkit->Readable) {
      Args.erase(std::remove_if(Args.begin(), Args.end(),
                                [](llvm::StringRef A) { return A.starts_with("--cuda-path="); }),
                 Args.end());
      Cuda.push_back("--cuda-path=" + Toolkit->Path);
    } else {
      // No toolkit this Clang reads: its headers are left out and ours stand in, first in
      // the search order. --cuda-path names a folder with no toolkit, so that Clang does
      // not find the unreadable one by itself: with CUDA 13 installed or none, the parse
      // is the same.
      Args = withoutToolkit(Args, Toolkit);
      const std::string Ours = cudaIncludeDir();
      for (const std::string &F :
           {std::string("-nocudainc"), "--cuda-path=" + Ours, std::string("-isystem"), Ours,
            std::string("-include"), std::string("mpnanny_cuda_prelude.h"),
            std::string("-Wno-unknown-cuda-version")})
        Cuda.push_back(F);
    }
    Args.insert(Args.begin() + 1, Cuda.begin(), Cuda.end());
    return Args;
  };
}

} // namespace mpnanny::check
