//===--- Tools.cpp - mpnanny-mcp -------------------------------------------===//
#include "Tools.h"

#include "Diff.h"
#include "KnowledgeBase.h"
#include "Pages.h"
#include "Scanner.h"

#include "clang/Tooling/CommonOptionsParser.h" // ArgumentsAdjustingCompilations
#include "clang/Tooling/CompilationDatabase.h"
#include "clang/Tooling/Core/Replacement.h"
#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>

#ifdef MPNANNY_MCP_HAVE_QUERIES
#include "Database.h"
#include "Queries.h"
#endif

using nlohmann::json;

namespace mpnanny::mcp {

namespace {

const char *const PrecisionNames[] = {"fp32", "fp16", "bf16", "autocast-fp16", "autocast-bf16"};
const char *const InlineName = "mpnanny-inline.cpp";
/// The verification verdicts (runtime/src/SiteVerifier.cpp), in the order site_verdicts sorts them.
const char *const VerdictNames[] = {"CONFIRMED", "AT_RISK", "NOT_OBSERVED", "NOT_REACHED"};
/// A build's compile_commands.json may be far larger than any source.
const size_t MaxCompileDatabaseBytes = 64u << 20;

// ---------------------------------------------------------------------------
// Arguments

[[noreturn]] void invalid(const std::string &Message, const std::string &Reason = "invalid_argument") {
  throw RpcError(code::InvalidParams, Message, Reason);
}

std::optional<std::string> optString(const json &Args, const std::string &Tool,
                                     const std::string &Name) {
  if (!Args.contains(Name) || Args[Name].is_null())
    return std::nullopt;
  if (!Args[Name].is_string())
    invalid(Tool + ": '" + Name + "' must be a string");
  return Args[Name].get<std::string>();
}

std::string reqString(const json &Args, const std::string &Tool, const std::string &Name) {
  auto V = optString(Args, Tool, Name);
  if (!V || V->empty())
    invalid(Tool + ": '" + Name + "' is required", "missing_argument");
  return *V;
}

/// An integer argument; its range is the schema's, checked by checkArguments before the tool runs.
std::optional<int64_t> optInt(const json &Args, const std::string &Tool, const std::string &Name) {
  if (!Args.contains(Name) || Args[Name].is_null())
    return std::nullopt;
  if (!Args[Name].is_number_integer())
    invalid(Tool + ": '" + Name + "' must be an integer");
  return Args[Name].get<int64_t>();
}

std::optional<std::string> upperOpt(std::optional<std::string> Text) {
  if (Text)
    for (char &C : *Text)
      C = static_cast<char>(std::toupper(static_cast<unsigned char>(C)));
  return Text;
}

std::vector<std::string> optStrings(const json &Args, const std::string &Tool,
                                    const std::string &Name) {
  std::vector<std::string> Out;
  if (!Args.contains(Name) || Args[Name].is_null())
    return Out;
  if (!Args[Name].is_array())
    invalid(Tool + ": '" + Name + "' must be an array of strings");
  for (const auto &V : Args[Name]) {
    if (!V.is_string())
      invalid(Tool + ": '" + Name + "' must be an array of strings");
    Out.push_back(V.get<std::string>());
  }
  return Out;
}

/// What the input schema says of every tool's arguments: no argument it does not list, and
/// integers within its minimum and maximum.
void checkArguments(const json &Args, const std::string &Tool, const json &Schema) {
  for (const auto &[Key, Value] : Args.items()) {
    if (!Schema["properties"].contains(Key))
      invalid(Tool + ": unknown argument '" + Key + "'", "unknown_argument");
    const json &Property = Schema["properties"][Key];
    if (!Property.contains("minimum") || Value.is_null())
      continue;
    const int64_t Min = Property["minimum"], Max = Property["maximum"];
    // Unsigned beyond int64 reads as out of range, not as a wrapped negative number.
    if (!Value.is_number_integer() ||
        (Value.is_number_unsigned() && Value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) ||
        Value.get<int64_t>() < Min || Value.get<int64_t>() > Max)
      invalid(Tool + ": '" + Key + "' must be an integer between " + std::to_string(Min) +
              " and " + std::to_string(Max));
  }
}

std::string precisionArg(const json &Args, const std::string &Tool) {
  auto P = optString(Args, Tool, "precision");
  if (!P || P->empty())
    return "";
  if (!kb::parsePrecision(*P))
    invalid(Tool + ": unknown precision '" + *P +
            "' (use fp32, fp16, bf16, autocast-fp16 or autocast-bf16)");
  return *P;
}

std::optional<std::string> checksArg(const json &Args, const std::string &Tool) {
  auto C = optString(Args, Tool, "checks");
  if (!C)
    return std::nullopt;
  for (char Ch : *C)
    if (!std::isalnum(static_cast<unsigned char>(Ch)) && !std::strchr("*,-_.", Ch))
      invalid(Tool + ": 'checks' is a clang-tidy glob such as '-*,mpnanny-log-softmax'");
  return C;
}

// ---------------------------------------------------------------------------
// Schemas

json str(const std::string &Description) {
  return {{"type", "string"}, {"description", Description}};
}
json integer(const std::string &Description) {
  return {{"type", "integer"}, {"description", Description}};
}
/// An integer argument and the range optInt enforces for it, so that a client validating against
/// the schema learns the range before a call is refused.
json integer(const std::string &Description, int64_t Min, int64_t Max) {
  return {{"type", "integer"}, {"description", Description}, {"minimum", Min}, {"maximum", Max}};
}
json strings(const std::string &Description) {
  return {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", Description}};
}
json precisionSchema() {
  return {{"type", "string"},
          {"enum", PrecisionNames},
          {"description", "Force the precision instead of inferring it per function"}};
}
json objectSchema(json Properties, std::vector<std::string> Required = {}) {
  json S = {{"type", "object"}, {"properties", std::move(Properties)}};
  if (!Required.empty())
    S["required"] = Required;
  return S;
}

json findingSchema() {
  json Location = objectSchema({{"file", str("")}, {"line", integer("")}, {"column", integer("")}});
  json Note = objectSchema({{"message", str("")},
                            {"file", str("")},
                            {"line", integer("")},
                            {"column", integer("")}});
  json FixIt = objectSchema({{"file", str("")},
                             {"line", integer("")},
                             {"column", integer("")},
                             {"end_line", integer("")},
                             {"end_column", integer("")},
                             {"text", str("replacement text")}});
  (void)Location;
  return objectSchema(
      {{"check", str("check name, e.g. mpnanny-log-softmax")},
       {"severity", {{"type", "string"}, {"enum", {"note", "warning", "error"}}}},
       {"file", str("absolute path")},
       {"line", integer("1-based")},
       {"column", integer("1-based, bytes")},
       {"function", str("enclosing function")},
       {"message", str("")},
       {"fix", str("what to write instead, in words")},
       {"site_id", str("stable id of the site; the runtime's verdicts use it")},
       {"expression", str("the flagged expression, whitespace collapsed")},
       {"risk", str("overflow, underflow, precision-loss, domain or banned")},
       {"precision", str("the format the code computes in")},
       {"aten_ops", strings("ATen ops that realize it at run time")},
       {"notes", {{"type", "array"}, {"items", Note}}},
       {"fixits", {{"type", "array"}, {"items", FixIt}, {"description", "exact rewrites; see suggest_fix"}}}},
      {"check", "severity", "file", "line", "column", "message", "site_id"});
}

json scanInputProperties() {
  return {{"path", str("Source file under the server's roots (relative to the first root, or "
                       "absolute). Give path or source.")},
          {"source", str("C++ source text to scan instead of a file (never written to disk). "
                         "Give path or source.")},
          {"filename", str("Name for inline source (default mpnanny-inline.cpp), e.g. model.cpp")},
          {"flags", strings("Compiler flags, e.g. [\"-std=c++17\", \"-isystem\", \"/path/to/"
                            "libtorch/include\"]; default: C++17 and LibTorch's headers if found")},
          {"build_dir", str("Build folder with compile_commands.json to take the flags from")},
          {"precision", precisionSchema()},
          {"checks", str("clang-tidy glob of checks to run (default: all mpnanny-* checks)")},
          {"max_findings", integer("Return at most this many findings (default 500)", 0, 100000)}};
}

// ---------------------------------------------------------------------------
// Scanning

struct Prepared {
  std::string File;  ///< absolute: canonical on disk, or the virtual inline path
  std::string Label; ///< as the agent should read it
  bool Inline = false;
  std::string Text;  ///< the text scanned
};

/// A compilation database whose commands lose what could load code or write files.
std::unique_ptr<clang::tooling::CompilationDatabase>
fenced(std::unique_ptr<clang::tooling::CompilationDatabase> Base) {
  auto DB = std::make_unique<clang::tooling::ArgumentsAdjustingCompilations>(std::move(Base));
  DB->appendArgumentsAdjuster(Sandbox::stripUnsafeArguments());
  return DB;
}

std::unique_ptr<clang::tooling::CompilationDatabase>
loadBuildDir(const Sandbox &Box, const std::string &Given, const std::string &Tool,
             std::string &Resolved) {
  Resolved = Box.resolve(Given, Sandbox::Kind::Directory, Tool + ": build_dir");
  std::string DbFile;
  try {
    DbFile = Box.resolve(Resolved + "/compile_commands.json", Sandbox::Kind::File,
                         Tool + ": build_dir", /*SizeBounded=*/false);
  } catch (const RpcError &E) {
    if (E.Reason != "not_found")
      throw;
    invalid(Tool + ": no compile_commands.json in '" + Given +
                "' (configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)",
            "not_found");
  }
  uint64_t Size = 0;
  llvm::sys::fs::file_size(DbFile, Size);
  if (Size > MaxCompileDatabaseBytes)
    invalid(Tool + ": '" + DbFile + "' is " + std::to_string(Size) + " bytes, over the " +
                std::to_string(MaxCompileDatabaseBytes) + "-byte limit",
            "too_large");
  auto Text = readBounded(DbFile, MaxCompileDatabaseBytes);
  if (!Text || Text->size() > MaxCompileDatabaseBytes)
    invalid(Tool + ": cannot read '" + DbFile + "' (at most " +
                std::to_string(MaxCompileDatabaseBytes) + " bytes)",
            "unreadable");
  std::string Error;
  auto DB = clang::tooling::JSONCompilationDatabase::loadFromBuffer(
      *Text, Error, clang::tooling::JSONCommandLineSyntax::AutoDetect);
  if (!DB)
    invalid(Tool + ": '" + DbFile + "' is not a compilation database: " + Error, "unreadable");
  return DB;
}

/// The scanned text of every file a finding or a fix-it names, for the diff and
/// for dropping what lies outside the roots.
json findingsJson(const std::vector<check::Finding> &Findings, size_t Max, size_t &Omitted) {
  json Out = json::array();
  for (const auto &F : Findings) {
    if (Out.size() >= Max) {
      ++Omitted;
      continue;
    }
    Out.push_back(check::toJson(F));
  }
  return Out;
}

class Scanning {
public:
  Scanning(const Sandbox &Box, const Settings &S) : Box(Box), S(S) {}

  /// The file of scan_file / suggest_fix: a path under a root or inline text.
  Prepared prepare(const json &Args, const std::string &Tool) const {
    auto Path = optString(Args, Tool, "path");
    auto Source = optString(Args, Tool, "source");
    if (Path.has_value() == Source.has_value())
      invalid(Tool + ": give exactly one of 'path' (a file under the roots) or 'source' "
                     "(C++ text)",
              "missing_argument");
    Prepared P;
    if (Path) {
      P.File = Box.resolve(*Path, Sandbox::Kind::File, Tool + ": path");
      P.Text = Box.read(P.File, Tool + ": path");
      P.Label = *Path;
      return P;
    }
    if (Source->size() > Box.maxReadBytes())
      invalid(Tool + ": 'source' is " + std::to_string(Source->size()) + " bytes, over the " +
                  std::to_string(Box.maxReadBytes()) + "-byte limit",
              "too_large");
    std::string Name = optString(Args, Tool, "filename").value_or(InlineName);
    llvm::StringRef Ext = llvm::sys::path::extension(Name);
    bool NameOk = !Name.empty() && Name.size() <= 128 && Name[0] != '.' &&
                  std::all_of(Name.begin(), Name.end(), [](char C) {
                    return std::isalnum(static_cast<unsigned char>(C)) || C == '_' || C == '-' ||
                           C == '.' || C == '+';
                  });
    if (!NameOk || !(Ext == ".cpp" || Ext == ".cc" || Ext == ".cxx" || Ext == ".cu" ||
                     Ext == ".h" || Ext == ".hpp"))
      invalid(Tool + ": 'filename' must be a plain file name ending in .cpp, .cc, .cxx, .cu, .h "
                     "or .hpp",
              "invalid_path");
    // In the first root, so that #include "model.h" finds the project's headers.
    P.File = Box.roots().front() + "/" + Name;
    P.Label = Name;
    P.Inline = true;
    P.Text = *Source;
    return P;
  }

  struct Outcome {
    check::ScanResult Result;
    size_t OutsideRoots = 0;
  };

  Outcome run(const std::vector<std::string> &Files, const std::map<std::string, std::string> &Overlay,
              const clang::tooling::CompilationDatabase &DB, const std::string &Precision,
              const std::optional<std::string> &Checks, unsigned Jobs) const {
    check::ScanRequest R;
    R.Files = Files;
    R.Overlay = Overlay;
    R.Database = &DB;
    R.Options.Checks = Checks;
    R.Options.Precision = Precision;
    R.Options.RulesDir = S.RulesDir;
    R.Options.ConfigFS = Box.rootFileSystem();
    R.Jobs = Jobs;
    R.BaseFS = [this] { return Box.compilerFileSystem(); };
    Outcome O;
    O.Result = check::scan(R, "Pass the build's flags: 'build_dir' (a folder with "
                              "compile_commands.json) or 'flags' (e.g. -std=c++17 -isystem "
                              "<libtorch>/include). The compiler reads headers only under the "
                              "server's roots, LibTorch's and the system's folders, and those "
                              "the server was started with (--include-dir DIR)");
    // A finding in a header outside the roots would hand back text from it.
    auto &F = O.Result.Findings;
    auto Keep = [&](const check::Finding &X) {
      return Overlay.count(X.Where.File) || Box.contains(X.Where.File);
    };
    auto End = std::stable_partition(F.begin(), F.end(), Keep);
    O.OutsideRoots = static_cast<size_t>(F.end() - End);
    F.erase(End, F.end());
    return O;
  }

  /// The database for one file of scan_file / suggest_fix.
  std::unique_ptr<clang::tooling::CompilationDatabase> commandsFor(const json &Args,
                                                                   const std::string &Tool) const {
    auto Flags = optStrings(Args, Tool, "flags");
    auto BuildDir = optString(Args, Tool, "build_dir");
    if (BuildDir && Args.contains("flags"))
      invalid(Tool + ": give 'flags' or 'build_dir', not both");
    if (BuildDir) {
      std::string Resolved;
      // A file the database does not list (inline source, a new file) gets the
      // commands of its nearest neighbour.
      return fenced(clang::tooling::inferMissingCompileCommands(
          loadBuildDir(Box, *BuildDir, Tool, Resolved)));
    }
    if (Args.contains("flags")) {
      Sandbox::checkFlags(Flags, Tool + ": flags");
    } else {
      Flags = check::defaultFlags();
    }
    return fenced(std::make_unique<clang::tooling::FixedCompilationDatabase>(
        Box.roots().front(), Flags));
  }

  json scanFile(const json &Args) const {
    const std::string Tool = "scan_file";
    Prepared P = prepare(Args, Tool);
    auto DB = commandsFor(Args, Tool);
    size_t Max = static_cast<size_t>(
        optInt(Args, Tool, "max_findings").value_or(S.MaxFindings));
    std::map<std::string, std::string> Overlay;
    if (P.Inline)
      Overlay[P.File] = P.Text;
    Outcome O = run({P.File}, Overlay, *DB, precisionArg(Args, Tool), checksArg(Args, Tool), 1);
    size_t Omitted = 0;
    json Findings = findingsJson(O.Result.Findings, Max, Omitted);
    return {{"file", P.File},
            {"inline", P.Inline},
            {"findings", Findings},
            {"total_findings", O.Result.Findings.size()},
            {"truncated", Omitted > 0},
            {"findings_outside_roots", O.OutsideRoots},
            {"parse_errors", O.Result.Problems},
            {"config_errors", O.Result.ConfigErrors},
            {"summary", summaryLine(O.Result, P.Label)}};
  }

  json scanProject(const json &Args) const {
    const std::string Tool = "scan_project";
    std::string Dir;
    auto Loaded = loadBuildDir(Box, reqString(Args, Tool, "build_dir"), Tool, Dir);
    auto Only = optStrings(Args, Tool, "files");
    size_t MaxFiles = static_cast<size_t>(
        optInt(Args, Tool, "max_files").value_or(S.MaxProjectFiles));
    size_t Max = static_cast<size_t>(
        optInt(Args, Tool, "max_findings").value_or(S.MaxFindings));

    std::vector<std::string> Listed = check::projectFiles(*Loaded, Dir);
    std::vector<std::string> Files;
    size_t OutsideRoots = 0, NotListed = 0;
    std::set<std::string> Wanted;
    for (const auto &F : Only)
      Wanted.insert(Box.resolve(F, Sandbox::Kind::File, Tool + ": files"));
    for (const auto &F : Listed) {
      llvm::SmallString<256> Real;
      bool Known = !llvm::sys::fs::real_path(F, Real);
      if (!Known || !Box.contains(std::string(Real))) {
        ++OutsideRoots;
        continue;
      }
      if (!Wanted.empty() && !Wanted.count(std::string(Real)))
        continue;
      Files.push_back(F);
    }
    for (const auto &W : Wanted) {
      bool Found = false;
      for (const auto &F : Files) {
        llvm::SmallString<256> Real;
        Found = Found || (!llvm::sys::fs::real_path(F, Real) && std::string(Real) == W);
      }
      NotListed += !Found;
    }
    if (Files.empty())
      invalid(Tool + ": '" + Dir + "/compile_commands.json' lists no project source under the "
                     "roots (third-party, generated and outside files are skipped)",
              "no_files");
    size_t Skipped = 0;
    if (Files.size() > MaxFiles) {
      Skipped = Files.size() - MaxFiles;
      Files.resize(MaxFiles);
    }
    auto DB = fenced(std::move(Loaded));
    Outcome O = run(Files, {}, *DB, precisionArg(Args, Tool), checksArg(Args, Tool),
                    std::max(1u, S.Jobs));
    std::map<std::string, size_t> PerCheck;
    for (const auto &F : O.Result.Findings)
      ++PerCheck[F.Check];
    size_t Omitted = 0;
    json Findings = findingsJson(O.Result.Findings, Max, Omitted);
    return {{"build_dir", Dir},
            {"files_scanned", Files},
            {"files_not_scanned", Skipped},
            {"files_outside_roots", OutsideRoots},
            {"files_not_in_database", NotListed},
            {"findings", Findings},
            {"total_findings", O.Result.Findings.size()},
            {"truncated", Omitted > 0},
            {"findings_by_check", PerCheck},
            {"findings_outside_roots", O.OutsideRoots},
            {"parse_errors", O.Result.Problems},
            {"config_errors", O.Result.ConfigErrors},
            {"summary", summaryLine(O.Result, std::to_string(Files.size()) + " file(s)")}};
  }

  json suggestFix(const json &Args) const {
    const std::string Tool = "suggest_fix";
    Prepared P = prepare(Args, Tool);
    auto DB = commandsFor(Args, Tool);
    std::map<std::string, std::string> Overlay;
    if (P.Inline)
      Overlay[P.File] = P.Text;
    Outcome O = run({P.File}, Overlay, *DB, precisionArg(Args, Tool), checksArg(Args, Tool), 1);
    auto SiteId = optString(Args, Tool, "site_id");
    auto Line = optInt(Args, Tool, "line");
    auto Check = optString(Args, Tool, "check");
    auto Selected = [&](const check::Finding &F) {
      return (!SiteId || F.SiteId == *SiteId) && (!Line || F.Where.Line == *Line) &&
             (!Check || F.Check == *Check || F.Check == "mpnanny-" + *Check);
    };

    // Per file, the replacements of the selected findings; an edit that overlaps one
    // taken before is left for a second round, as clang-tidy --fix does.
    std::map<std::string, clang::tooling::Replacements> ByFile;
    json Fixes = json::array(), WithoutFixIt = json::array(), Conflicts = json::array();
    size_t Matching = 0;
    for (const auto &F : O.Result.Findings) {
      if (!Selected(F))
        continue;
      ++Matching;
      json Summary = {{"site_id", F.SiteId}, {"check", F.Check}, {"file", F.Where.File},
                      {"line", F.Where.Line}, {"column", F.Where.Column}, {"message", F.Message}};
      if (F.Edits.empty()) {
        Summary["advice"] = F.Fix;
        WithoutFixIt.push_back(Summary);
        continue;
      }
      bool Taken = true;
      std::map<std::string, clang::tooling::Replacements> Trial = ByFile;
      for (const auto &E : F.Edits) {
        if (!Overlay.count(E.File) && !Box.contains(E.File)) {
          Taken = false;
          break;
        }
        if (auto Err = Trial[E.File].add(
                clang::tooling::Replacement(E.File, E.Offset, E.Length, E.Text))) {
          llvm::consumeError(std::move(Err));
          Taken = false;
          break;
        }
      }
      Summary["edits"] = F.Edits.size();
      if (!Taken) {
        Conflicts.push_back(Summary);
        continue;
      }
      ByFile = std::move(Trial);
      Fixes.push_back(Summary);
    }
    if ((SiteId || Line || Check) && Matching == 0)
      invalid(Tool + ": no finding matches the given site_id/line/check (" +
                  std::to_string(O.Result.Findings.size()) +
                  " finding(s) in the file; scan_file lists them)",
              "no_match");

    std::string Diff;
    for (const auto &[File, Replacements] : ByFile) {
      std::string Before;
      if (auto It = Overlay.find(File); It != Overlay.end())
        Before = It->second;
      else if (File == P.File)
        Before = P.Text;
      else
        Before = Box.read(File, Tool); // a header the fix-it also edits; contained above
      std::vector<Replacement> Edits;
      for (const auto &R : Replacements)
        Edits.push_back({R.getOffset(), R.getLength(), R.getReplacementText().str()});
      // The path as the agent named it; a/ and b/ prefixes as git writes them.
      std::string Label = File == P.File ? P.Label : File;
      Diff += unifiedDiff(Label.front() == '/' ? Label.substr(1) : Label, Before, Edits);
    }
    std::string Message =
        Fixes.empty()
            ? (Matching == 0 ? "no findings in this file"
                             : "no selected finding has an exact fix-it; each entry of "
                               "'without_fixit' says what to write instead")
            : std::to_string(Fixes.size()) +
                  " fix-it(s) as a unified diff; nothing was written. Apply it, then scan again "
                  "to confirm the finding is gone.";
    return {{"file", P.File},
            {"inline", P.Inline},
            {"diff", Diff},
            {"applied", false},
            {"fixes", Fixes},
            {"without_fixit", WithoutFixIt},
            {"conflicting", Conflicts},
            {"parse_errors", O.Result.Problems},
            {"message", Message}};
  }

private:
  static std::string summaryLine(const check::ScanResult &R, const std::string &What) {
    std::map<std::string, size_t> Severities;
    for (const auto &F : R.Findings)
      ++Severities[F.Severity];
    std::string Out = What + ": " + std::to_string(R.Findings.size()) + " finding(s)";
    for (const auto &[S, N] : Severities)
      Out += ", " + std::to_string(N) + " " + S;
    if (!R.Problems.empty())
      Out += "; " + std::to_string(R.Problems.size()) +
             " file(s) did not compile, so the scan is incomplete (see parse_errors)";
    return Out;
  }

  const Sandbox &Box;
  const Settings &S;
};

// ---------------------------------------------------------------------------
// Knowledge pages

struct Page {
  std::string Name, File;
};

std::vector<Page> pages() {
  std::vector<Page> Out;
  std::error_code EC;
  std::string Dir = check::knowledgeDir();
  for (llvm::sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC; It.increment(EC)) {
    llvm::StringRef Name = llvm::sys::path::filename(It->path());
    if (!Name.ends_with(".md") || Name == "README.md")
      continue;
    Out.push_back({Name.drop_back(3).str(), It->path()});
  }
  std::sort(Out.begin(), Out.end(), [](const Page &A, const Page &B) { return A.Name < B.Name; });
  return Out;
}

std::string readPage(const std::string &File) {
  // Pages are ours, not the user's, but a page is still bounded like anything read.
  const size_t Max = 1u << 20;
  auto Text = readBounded(File, Max);
  if (!Text || Text->size() > Max)
    throw RpcError(code::Internal, "cannot read the knowledge page '" + File + "' (at most " +
                                       std::to_string(Max) + " bytes)");
  return *Text;
}

std::string titleOf(const std::string &Text, const std::string &Fallback) {
  llvm::StringRef T(Text);
  for (llvm::StringRef Line = T.split('\n').first; !T.empty();
       T = T.split('\n').second, Line = T.split('\n').first)
    if (Line.starts_with("# "))
      return Line.drop_front(2).trim().str();
  return Fallback;
}

std::optional<Page> findPage(const std::string &Name) {
  std::string Upper = Name;
  std::transform(Upper.begin(), Upper.end(), Upper.begin(),
                 [](unsigned char C) { return std::toupper(C); });
  auto All = pages();
  for (const std::string &Candidate :
       {Name, "mpnanny-" + Name, "alert-" + Name, "alert-" + Upper})
    for (const auto &P : All)
      if (P.Name == Candidate)
        return P;
  return std::nullopt;
}

json explainCheck(const json &Args) {
  const std::string Tool = "explain_check";
  std::string Name = reqString(Args, Tool, "check");
  if (Name.size() > 100 || !std::all_of(Name.begin(), Name.end(), [](char C) {
        return std::isalnum(static_cast<unsigned char>(C)) || C == '-' || C == '_';
      }))
    invalid(Tool + ": 'check' is a check name (mpnanny-log-softmax) or an alert type (OVERFLOW)",
            "invalid_argument");
  auto P = findPage(Name);
  if (!P) {
    std::string Known;
    for (const auto &Q : pages())
      Known += (Known.empty() ? "" : ", ") + Q.Name;
    invalid(Tool + ": no knowledge page for '" + Name + "' (pages: " + Known + ")", "not_found");
  }
  std::string Text = readPage(P->File);
  return {{"name", P->Name},
          {"uri", "mpnanny://knowledge/" + P->Name},
          {"title", titleOf(Text, P->Name)},
          {"summary", check::summaryOf(Text)},
          {"why", check::sectionOf(Text, "Why")},
          {"fixed_code", check::sectionOf(Text, "Fixed code")},
          {"markdown", Text}};
}

json listChecks(const json &) {
  json Checks = json::array(), Alerts = json::array();
  std::set<std::string> Listed;
  for (const auto &Name : check::checkNames()) {
    auto P = findPage(Name);
    json Entry = {{"name", Name}, {"has_page", P.has_value()}, {"summary", ""}};
    if (P) {
      Entry["summary"] = check::summaryOf(readPage(P->File));
      Entry["uri"] = "mpnanny://knowledge/" + P->Name;
      Listed.insert(P->Name);
    }
    Checks.push_back(Entry);
  }
  for (const auto &P : pages()) {
    if (llvm::StringRef(P.Name).starts_with("alert-"))
      Alerts.push_back({{"type", P.Name.substr(6)},
                        {"name", P.Name},
                        {"summary", check::summaryOf(readPage(P.File))},
                        {"uri", "mpnanny://knowledge/" + P.Name}});
  }
  return {{"checks", Checks}, {"alerts", Alerts}};
}

// ---------------------------------------------------------------------------
// Training runs

#ifdef MPNANNY_MCP_HAVE_QUERIES
query::Databases openRuns(const Sandbox &Box, const json &Args, const std::string &Tool) {
  std::string Spec = reqString(Args, Tool, "db");
  // FILE#RUN picks a run; the path part is what must lie under a root.
  std::string Path = Spec, Run;
  if (auto Hash = Spec.rfind('#'); Hash != std::string::npos &&
                                   Hash + 1 < Spec.size() &&
                                   std::all_of(Spec.begin() + Hash + 1, Spec.end(), ::isdigit)) {
    Path = Spec.substr(0, Hash);
    Run = Spec.substr(Hash);
  }
  std::string Resolved =
      Box.resolve(Path, Sandbox::Kind::Any, Tool + ": db", /*SizeBounded=*/false);
  std::vector<std::string> Files;
  try {
    Files = query::database_files(Resolved + Run);
  } catch (const std::exception &E) {
    invalid(Tool + ": " + E.what(), "unreadable");
  }
  // A folder under a root may hold links that lead out of it: each file is checked before
  // anything opens it, so that not even an error message tells what lies outside.
  for (const auto &File : Files) {
    const std::string FilePath = Run.empty() ? File : File.substr(0, File.size() - Run.size());
    llvm::SmallString<256> Real;
    if (llvm::sys::fs::real_path(FilePath, Real) || !Box.contains(std::string(Real)))
      invalid(Tool + ": '" + FilePath + "' does not resolve to a file under the allowed roots", "outside_root");
  }
  query::Databases Dbs;
  try {
    Dbs = query::open_databases(Files);
  } catch (const std::exception &E) {
    invalid(Tool + ": " + E.what(), "unreadable");
  }
  return Dbs;
}

/// Rows a result may carry: at most Limit, and no more than fit in a response. A result is sent
/// twice (as text and as structuredContent, the text with its quotes escaped), and a response
/// over Limits.MaxResponseBytes (4 MiB) is refused whole; 1 MiB of rows keeps it well under that,
/// and the rows left out are reported as truncated instead.
json rowsWithin(const json &All, size_t Limit) {
  constexpr size_t RowBytes = 1u << 20;
  json Rows = json::array();
  size_t Bytes = 0;
  for (size_t I = 0; I < All.size() && I < Limit; ++I) {
    Bytes += All[I].dump().size();
    if (Bytes > RowBytes && !Rows.empty())
      break;
    Rows.push_back(All[I]);
  }
  return Rows;
}

json databasesJson(const query::Databases &Dbs) {
  json Out = json::array();
  for (const auto &D : Dbs)
    Out.push_back({{"file", D->path()}, {"rank", D->rank()}, {"run_id", D->run_id()}});
  return Out;
}

json queryAlerts(const Sandbox &Box, const json &Args) {
  const std::string Tool = "query_alerts";
  auto Dbs = openRuns(Box, Args, Tool);
  query::AlertFilter Filter;
  // Names are matched as the CLI matches them: in any case.
  Filter.severity = upperOpt(optString(Args, Tool, "severity"));
  if (Filter.severity && *Filter.severity != "ERROR" && *Filter.severity != "WARNING" &&
      *Filter.severity != "INFO")
    invalid(Tool + ": severity is ERROR, WARNING or INFO");
  Filter.type = upperOpt(optString(Args, Tool, "type"));
  if (Filter.type)
    if (const auto Unknown = query::unknown_alert_type(*Filter.type))
      invalid(Tool + ": " + *Unknown);
  Filter.site = optString(Args, Tool, "site");
  Filter.first_step = optInt(Args, Tool, "first_step");
  Filter.last_step = optInt(Args, Tool, "last_step");
  size_t Limit = static_cast<size_t>(optInt(Args, Tool, "limit").value_or(200));
  json All;
  try {
    All = query::alerts(Dbs, Filter);
  } catch (const std::exception &E) {
    invalid(Tool + ": " + E.what(), "unreadable");
  }
  json Rows = rowsWithin(All, Limit);
  return {{"databases", databasesJson(Dbs)},
          {"alerts", Rows},
          {"total", All.size()},
          {"truncated", All.size() > Rows.size()}};
}

json runSummary(const Sandbox &Box, const json &Args) {
  const std::string Tool = "run_summary";
  auto Dbs = openRuns(Box, Args, Tool);
  int Worst = static_cast<int>(optInt(Args, Tool, "worst_sites").value_or(5));
  json Runs;
  try {
    Runs = query::summary(Dbs, Worst);
  } catch (const std::exception &E) {
    invalid(Tool + ": " + E.what(), "unreadable");
  }
  if (!Runs.is_array())
    Runs = json::array({Runs});
  return {{"databases", databasesJson(Dbs)}, {"runs", Runs}};
}

json siteVerdicts(const Sandbox &Box, const json &Args) {
  const std::string Tool = "site_verdicts";
  auto Dbs = openRuns(Box, Args, Tool);
  size_t Limit = static_cast<size_t>(optInt(Args, Tool, "limit").value_or(500));
  auto Verdict = upperOpt(optString(Args, Tool, "verdict"));
  if (Verdict && std::find(std::begin(VerdictNames), std::end(VerdictNames), *Verdict) == std::end(VerdictNames))
  {
    std::string Known;
    for (const char *Name : VerdictNames)
      Known += (Known.empty() ? "" : ", ") + std::string(Name);
    invalid(Tool + ": no verdict '" + *Verdict + "' (verdicts: " + Known + ")");
  }
  json Result;
  try {
    Result = query::sites(Dbs);
  } catch (const std::exception &E) {
    invalid(Tool + ": " + E.what(), "unreadable");
  }
  bool Any = false;
  for (const auto &A : Result["available"])
    Any = Any || A.value("verification", false);
  json Matching = json::array();
  for (const auto &R : Result["verdicts"]) {
    if (Verdict && R.value("verdict", json()).is_string() && R["verdict"] != *Verdict)
      continue;
    Matching.push_back(R);
  }
  const size_t Total = Matching.size();
  json Rows = rowsWithin(Matching, Limit);
  std::map<std::string, size_t> Counts;
  for (const auto &R : Result["verdicts"])
    if (R.contains("verdict") && R["verdict"].is_string())
      ++Counts[R["verdict"].get<std::string>()];
  return {{"databases", databasesJson(Dbs)},
          {"verification_data", Any},
          {"message",
           Any ? std::to_string(Result["verdicts"].size()) + " verdict(s)"
               : "no verification data: the run was not made with MPNANNY_VERIFY=1 and "
                 "MPNANNY_SITES=<sites.json> (mpnanny-check --export-sites), so no static "
                 "finding was checked at run time"},
          {"counts", Counts},
          {"verdicts", Rows},
          {"total", Total},
          {"truncated", Total > Rows.size()}};
}
#else
json noQueries(const Sandbox &, const json &) {
  throw RpcError(code::Internal,
                 "this mpnanny-mcp was built without the run query library (tools/mpnanny, "
                 "SQLite); rebuild with it to query training runs",
                 "unavailable");
}
#endif

} // namespace

// ---------------------------------------------------------------------------

std::vector<Tool> makeTools(const Sandbox &Box, const Settings &S) {
  auto Scan = std::make_shared<Scanning>(Box, S);
  json Findings = {{"type", "array"}, {"items", findingSchema()}};
  json StringArray = {{"type", "array"}, {"items", {{"type", "string"}}}};
  json Rows = {{"type", "array"}, {"items", {{"type", "object"}}}};
  json Databases = {{"type", "array"},
                    {"items", objectSchema({{"file", str("")},
                                            {"rank", integer("")},
                                            {"run_id", integer("")}})}};
  json DbArg = str("A metrics database (nanny_logs/metrics.db), a folder of them (one per "
                   "rank), or FILE#RUN; under the server's roots");

  std::vector<Tool> Tools;
  auto Add = [&](Tool T) {
    auto Run = T.Run;
    json Schema = T.InputSchema;
    std::string Name = T.Name;
    T.InputSchema["additionalProperties"] = false;
    T.Run = [Run, Schema, Name](const json &Args) {
      checkArguments(Args, Name, Schema);
      return Run(Args);
    };
    Tools.push_back(std::move(T));
  };

  json ScanFileIn = objectSchema(scanInputProperties());
  Add({"scan_file", "Scan a C++ file for fp16/bf16 hazards",
       "Run mpnanny's static checks (clang-tidy based) on one LibTorch C++ file or on C++ text. "
       "Returns each finding with its place, the enclosing function, the risk (overflow, "
       "underflow, domain, precision loss), the precision it computes in, what to write "
       "instead, a stable site_id, and the exact fix-its when the check has one. Nothing is "
       "written.",
       ScanFileIn,
       objectSchema({{"file", str("absolute path scanned (virtual for inline source)")},
                     {"inline", {{"type", "boolean"}}},
                     {"findings", Findings},
                     {"total_findings", integer("")},
                     {"truncated", {{"type", "boolean"}}},
                     {"findings_outside_roots", integer("findings in headers outside the roots, left out")},
                     {"parse_errors", StringArray},
                     {"config_errors", StringArray},
                     {"summary", str("")}},
                    {"file", "findings", "total_findings", "truncated", "parse_errors"}),
       true, [Scan](const json &A) { return Scan->scanFile(A); }});

  Add({"scan_project", "Scan every source of a CMake build",
       "Run the checks on the project's own sources listed in <build_dir>/compile_commands.json "
       "(third-party, generated and out-of-root files are skipped), with the build's flags.",
       objectSchema({{"build_dir", str("Build folder holding compile_commands.json, under the roots")},
                     {"files", strings("Only these sources (paths under the roots)")},
                     {"precision", precisionSchema()},
                     {"checks", str("clang-tidy glob of checks to run")},
                     {"max_files", integer("Scan at most this many files (default 200)", 1, 100000)},
                     {"max_findings", integer("Return at most this many findings (default 500)", 0, 100000)}},
                    {"build_dir"}),
       objectSchema({{"build_dir", str("")},
                     {"files_scanned", StringArray},
                     {"files_not_scanned", integer("over max_files")},
                     {"files_outside_roots", integer("")},
                     {"files_not_in_database", integer("")},
                     {"findings", Findings},
                     {"total_findings", integer("")},
                     {"truncated", {{"type", "boolean"}}},
                     {"findings_by_check", {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}}},
                     {"findings_outside_roots", integer("")},
                     {"parse_errors", StringArray},
                     {"config_errors", StringArray},
                     {"summary", str("")}},
                    {"build_dir", "files_scanned", "findings", "total_findings", "parse_errors"}),
       true, [Scan](const json &A) { return Scan->scanProject(A); }});

  Add({"explain_check", "Explain a check or a runtime alert",
       "The knowledge page of a check (mpnanny-log-softmax) or a runtime alert type (OVERFLOW): "
       "what it flags, why (with the number), bad code, fixed code, the run-time symptom, "
       "references.",
       objectSchema({{"check", str("Check name (mpnanny-log-softmax or log-softmax) or alert type (OVERFLOW)")}},
                    {"check"}),
       objectSchema({{"name", str("")},
                     {"uri", str("the same page as a resource")},
                     {"title", str("")},
                     {"summary", str("")},
                     {"why", str("")},
                     {"fixed_code", str("")},
                     {"markdown", str("the whole page")}},
                    {"name", "uri", "markdown"}),
       true, explainCheck});

  Add({"list_checks", "List the checks and alert pages",
       "Every mpnanny check with its one-line summary, and the runtime alert types that have a "
       "page.",
       objectSchema(json::object()),
       objectSchema({{"checks", {{"type", "array"},
                                 {"items", objectSchema({{"name", str("")},
                                                         {"summary", str("")},
                                                         {"has_page", {{"type", "boolean"}}},
                                                         {"uri", str("")}},
                                                        {"name", "summary", "has_page"})}}},
                     {"alerts", Rows}},
                    {"checks", "alerts"}),
       true, listChecks});

  json FixIn = scanInputProperties();
  FixIn.erase("max_findings");
  FixIn["site_id"] = str("Fix only this finding (its site_id from scan_file)");
  FixIn["line"] = integer("Fix only the findings on this line", 1, 100000000);
  FixIn["check"] = str("Fix only the findings of this check");
  Add({"suggest_fix", "Propose the fix-its as a unified diff",
       "Scan the file and return the exact rewrites the checks offer (e.g. log(softmax(x)) -> "
       "log_softmax(x)) as a unified diff. Nothing is written: apply the diff yourself, then "
       "scan again. Findings without an exact rewrite come back with advice in words.",
       objectSchema(FixIn),
       objectSchema({{"file", str("")},
                     {"inline", {{"type", "boolean"}}},
                     {"diff", str("unified diff; empty when there is nothing to rewrite")},
                     {"applied", {{"type", "boolean"}, {"description", "always false"}}},
                     {"fixes", Rows},
                     {"without_fixit", Rows},
                     {"conflicting", Rows},
                     {"parse_errors", StringArray},
                     {"message", str("")}},
                    {"diff", "applied", "fixes", "message"}),
       true, [Scan](const json &A) { return Scan->suggestFix(A); }});

#ifdef MPNANNY_MCP_HAVE_QUERIES
  const Sandbox *B = &Box;
  auto QueryAlerts = [B](const json &A) { return queryAlerts(*B, A); };
  auto RunSummary = [B](const json &A) { return runSummary(*B, A); };
  auto SiteVerdicts = [B](const json &A) { return siteVerdicts(*B, A); };
#else
  const Sandbox *B = &Box;
  auto QueryAlerts = [B](const json &A) { return noQueries(*B, A); };
  auto RunSummary = QueryAlerts;
  auto SiteVerdicts = QueryAlerts;
#endif

  Add({"query_alerts", "Alerts of a training run",
       "The runtime's alerts (NAN, INF, OVERFLOW, OVERFLOW_RISK, UNDERFLOW, GRAD_EXPLOSION, "
       "GRAD_VANISH, SWAMPING, LOSS_SCALE_DROP, LOSS_SCALE_COLLAPSE) with the step, op, tensor, "
       "source line, value and threshold, in step order.",
       objectSchema({{"db", DbArg},
                     {"severity", {{"type", "string"}, {"enum", {"ERROR", "WARNING", "INFO"}}}},
                     {"type", str("Alert type, e.g. OVERFLOW")},
                     {"site", str("FILE:LINE, a function (substring), a parameter or an op")},
                     {"first_step", integer("", 0, INT64_MAX)},
                     {"last_step", integer("", 0, INT64_MAX)},
                     {"limit", integer("At most this many alerts (default 200)", 1, 10000)}},
                    {"db"}),
       objectSchema({{"databases", Databases},
                     {"alerts", Rows},
                     {"total", integer("")},
                     {"truncated", {{"type", "boolean"}}}},
                    {"databases", "alerts", "total", "truncated"}),
       true, QueryAlerts});

  Add({"run_summary", "Summary of a training run",
       "Run metadata (precision, torch version), steps seen and traced, alert counts by type "
       "and severity, the first ERROR, the sites with the least fp16/bf16 headroom, and the "
       "loss-scale history.",
       objectSchema({{"db", DbArg}, {"worst_sites", integer("How many worst sites (default 5)", 0, 100)}},
                    {"db"}),
       objectSchema({{"databases", Databases}, {"runs", Rows}}, {"databases", "runs"}),
       true, RunSummary});

  Add({"site_verdicts", "Which static findings were confirmed at run time",
       "For a run made with MPNANNY_VERIFY=1 and the sites file of mpnanny-check: each static "
       "finding's verdict (CONFIRMED, AT_RISK, NOT_OBSERVED, NOT_REACHED) with its evidence.",
       objectSchema({{"db", DbArg},
                     {"verdict", {{"type", "string"},
                                  {"enum", VerdictNames},
                                  {"description", "Only this verdict"}}},
                     {"limit", integer("At most this many verdicts (default 500)", 1, 10000)}},
                    {"db"}),
       objectSchema({{"databases", Databases},
                     {"verification_data", {{"type", "boolean"}}},
                     {"message", str("")},
                     {"counts", {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}}},
                     {"verdicts", Rows},
                     {"total", integer("")},
                     {"truncated", {{"type", "boolean"}}}},
                    {"databases", "verification_data", "message", "verdicts"}),
       true, SiteVerdicts});
  return Tools;
}

std::vector<Resource> knowledgeResources() {
  std::vector<Resource> Out;
  for (const auto &P : pages()) {
    std::string Text;
    try {
      Text = readPage(P.File);
    } catch (const RpcError &) {
      continue;
    }
    std::string File = P.File;
    Out.push_back({"mpnanny://knowledge/" + P.Name, P.Name, titleOf(Text, P.Name),
                   check::summaryOf(Text), "text/markdown", [File] { return readPage(File); }});
  }
  return Out;
}

/// A tool's arguments as a prompt shows them: JSON, so that a quote in a path stays a quote.
std::string argumentsText(const json &Args) {
  return Args.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<Prompt> makePrompts() {
  std::vector<Prompt> Out;
  Out.push_back(
      {"review-model-for-mixed-precision", "Review a model for fp16/bf16 training",
       "Scan a LibTorch model, explain each finding, propose fixes and plan the run-time check",
       {{"path", "The model's source file (or a build folder with compile_commands.json)", true},
        {"precision", "fp16, bf16, autocast-fp16 or autocast-bf16 (default: inferred)", false}},
       [](const json &A) {
         std::string Path = A.value("path", "");
         std::string Precision = A.value("precision", "");
         const auto ScanArgs = [&](const char *PathArg) {
           json Args = {{PathArg, Path}};
           if (!Precision.empty())
             Args["precision"] = Precision;
           return argumentsText(Args);
         };
         return "Review `" + Path + "` for mixed-precision (" +
                (Precision.empty() ? std::string("fp16/bf16") : Precision) +
                ") training with the mpnanny tools. Work in this order:\n\n"
                "1. Scan. If `" + Path + "` is a build folder, call `scan_project` with " +
                ScanArgs("build_dir") + "; otherwise call `scan_file` with " + ScanArgs("path") +
                ". If `parse_errors` is not empty the scan "
                "is incomplete: pass `build_dir` (compile_commands.json) or `flags` "
                "(-std=c++17 -isystem <libtorch include dirs>) and scan again before judging.\n"
                "2. Explain. Group the findings by `check`. For each check call `explain_check` "
                "once and tell the user, per finding: the line, the expression, the risk "
                "(overflow, underflow, domain, precision loss), the precision it runs in, and "
                "why it matters there (the page's numbers: 65504, 2^-24, ...). Order by "
                "severity: errors, then warnings, then notes.\n"
                "3. Fix. Call `suggest_fix` (same path/flags) to get the exact rewrites as a "
                "unified diff; show it and do not claim it was applied: the server writes "
                "nothing. For findings listed in `without_fixit`, propose the change from the "
                "finding's `fix` text and the page's \"Fixed code\" section.\n"
                "4. Verify. After the user applies fixes, scan again and confirm the findings "
                "are gone. For the findings that remain, plan a run-time check: export the "
                "sites with `mpnanny-check --export-sites sites.json <file>`, train a few "
                "hundred steps with MPNANNY_VERIFY=1 MPNANNY_SITES=sites.json, then call "
                "`site_verdicts` and `query_alerts` on nanny_logs/metrics.db to see which "
                "findings were CONFIRMED.\n\n"
                "Answer the user's question directly at the end: is this model ready to train "
                "in " + (Precision.empty() ? std::string("fp16/bf16") : Precision) +
                ", and what must change first?";
       }});
  Out.push_back(
      {"diagnose-training-run", "Diagnose a mixed-precision training run",
       "Read a run's alerts and verdicts, tie them to source lines and propose fixes",
       {{"db", "The run's metrics database (nanny_logs/metrics.db) or its folder", true},
        {"source", "The model's source file, to scan and fix (optional)", false}},
       [](const json &A) {
         std::string Db = A.value("db", "");
         std::string Source = A.value("source", "");
         return "Diagnose the mixed-precision training run recorded in `" + Db +
                "` with the mpnanny tools:\n\n"
                "1. Summarize. Call `run_summary` with " + argumentsText({{"db", Db}}) + ": precision, "
                "steps, alert counts, the first ERROR and the sites with the least headroom.\n"
                "2. Find the first failure. Call `query_alerts` with " +
                argumentsText({{"db", Db}, {"severity", "ERROR"}}) + "; the earliest alert is usually the cause and the rest "
                "its consequences (an OVERFLOW in forward, then NAN in backward, then "
                "LOSS_SCALE_DROP). Note its op, tensor, file:line and value vs threshold.\n"
                "3. Explain. Call `explain_check` with the alert type (e.g. OVERFLOW) and with "
                "the check of any static finding at the same line.\n"
                "4. Verify against the static scan. Call `site_verdicts` with " + argumentsText({{"db", Db}}) +
                "; CONFIRMED findings are proven at run time. If it reports no verification "
                "data, say how to get it (mpnanny-check --export-sites, then MPNANNY_VERIFY=1).\n"
                "5. Fix. " +
                (Source.empty()
                     ? std::string("Scan the source file the alerts point to with `scan_file`")
                     : "Call `scan_file` with " + argumentsText({{"path", Source}})) +
                ", then `suggest_fix` for the lines the alerts name; show the diff, which the "
                "server never applies.\n\n"
                "End with: the root cause in one sentence, the fix, and how the next run will "
                "show it worked (which alert should disappear).";
       }});
  return Out;
}

std::string serverInstructions() {
  return "mpnanny finds fp16/bf16 hazards in LibTorch C++ code before training (scan_file, "
         "scan_project, suggest_fix, explain_check, list_checks) and reads what its runtime "
         "recorded during training (run_summary, query_alerts, site_verdicts). Paths are "
         "relative to the first root the server was started with. The server never writes "
         "files: fixes come back as diffs. The prompts review-model-for-mixed-precision and "
         "diagnose-training-run give the order of work.";
}

} // namespace mpnanny::mcp
