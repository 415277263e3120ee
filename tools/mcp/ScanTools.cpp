//===--- ScanTools.cpp - mpnanny-mcp ---------------------------------------===//
//
// The static scan as tools: scan_file, scan_project and suggest_fix, through the same
// scanner as mpnanny-check, over files under the server's roots or inline text.
//
//===----------------------------------------------------------------------===//
#include "Diff.h"
#include "Scanner.h"
#include "ToolGroups.h"
#include "ToolKit.h"
#include "Vocabulary.h"

#include "clang/Tooling/CommonOptionsParser.h" // ArgumentsAdjustingCompilations
#include "clang/Tooling/CompilationDatabase.h"
#include "clang/Tooling/Core/Replacement.h"
#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

using nlohmann::json;

namespace mpnanny::mcp {

namespace {

const char *const InlineName = "mpnanny-inline.cpp";
/// A build's compile_commands.json may be far larger than any source.
const size_t MaxCompileDatabaseBytes = 64u << 20;

json findingSchema() {
  json Location = objectSchema({{"file", str("")}, {"line", integer("")}, {"column", integer("")}});
  json Note = objectSchema(
      {{"message", str("")}, {"file", str("")}, {"line", integer("")}, {"column", integer("")}});
  json FixIt = objectSchema({{"file", str("")},
                             {"line", integer("")},
                             {"column", integer("")},
                             {"end_line", integer("")},
                             {"end_column", integer("")},
                             {"text", str("replacement text")}});
  (void)Location;
  return objectSchema(
      {{"check", str("check name, e.g. mpnanny-log-softmax")},
       {"severity", {{"type", "string"}, {"enum", vocab::names<vocab::Severity>()}}},
       {"file", str("absolute path")},
       {"line", integer("1-based")},
       {"column", integer("1-based, bytes")},
       {"function", str("enclosing function")},
       {"message", str("")},
       {"fix", str("what to write instead, in words")},
       {"site_id", str("stable id of the site; the runtime's verdicts use it")},
       {"expression", str("the flagged expression, whitespace collapsed")},
       {"risk", {{"type", "string"}, {"enum", vocab::names<vocab::RiskKind>()}}},
       {"precision", str("the format the code computes in")},
       {"aten_ops", strings("ATen ops that realize it at run time")},
       {"notes", {{"type", "array"}, {"items", Note}}},
       {"fixits",
        {{"type", "array"}, {"items", FixIt}, {"description", "exact rewrites; see suggest_fix"}}}},
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

struct Prepared {
  std::string File;  ///< absolute: canonical on disk, or the virtual inline path
  std::string Label; ///< as the agent should read it
  bool Inline = false;
  std::string Text; ///< the text scanned
};

/// A compilation database whose commands lose what could load code or write files.
std::unique_ptr<clang::tooling::CompilationDatabase>
fenced(std::unique_ptr<clang::tooling::CompilationDatabase> Base) {
  auto DB = std::make_unique<clang::tooling::ArgumentsAdjustingCompilations>(std::move(Base));
  DB->appendArgumentsAdjuster(Sandbox::stripUnsafeArguments());
  return DB;
}

std::unique_ptr<clang::tooling::CompilationDatabase> loadBuildDir(const Sandbox &Box,
                                                                  const std::string &Given,
                                                                  const std::string &Tool,
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

  Outcome run(const std::vector<std::string> &Files,
              const std::map<std::string, std::string> &Overlay,
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
    return fenced(
        std::make_unique<clang::tooling::FixedCompilationDatabase>(Box.roots().front(), Flags));
  }

  json scanFile(const json &Args) const {
    const std::string Tool = "scan_file";
    Prepared P = prepare(Args, Tool);
    auto DB = commandsFor(Args, Tool);
    size_t Max = static_cast<size_t>(optInt(Args, Tool, "max_findings").value_or(S.MaxFindings));
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
    size_t MaxFiles =
        static_cast<size_t>(optInt(Args, Tool, "max_files").value_or(S.MaxProjectFiles));
    size_t Max = static_cast<size_t>(optInt(Args, Tool, "max_findings").value_or(S.MaxFindings));

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
      invalid(Tool + ": '" + Dir +
                  "/compile_commands.json' lists no project source under the "
                  "roots (third-party, generated and outside files are skipped)",
              "no_files");
    size_t Skipped = 0;
    if (Files.size() > MaxFiles) {
      Skipped = Files.size() - MaxFiles;
      Files.resize(MaxFiles);
    }
    auto DB = fenced(std::move(Loaded));
    Outcome O =
        run(Files, {}, *DB, precisionArg(Args, Tool), checksArg(Args, Tool), std::max(1u, S.Jobs));
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
             (!Check || F.Check == *Check || F.Check == std::string(vocab::checkPrefix()) + *Check);
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
      json Summary = {{"site_id", F.SiteId},  {"check", F.Check},         {"file", F.Where.File},
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

} // namespace

ScanTools scanTools(const Sandbox &Box, const Settings &S) {
  auto Scan = std::make_shared<const Scanning>(Box, S);
  json Findings = {{"type", "array"}, {"items", findingSchema()}};
  json StringArray = stringArraySchema();
  json Rows = rowsSchema();
  ScanTools Out;
  json ScanFileIn = objectSchema(scanInputProperties());
  Out.ScanFile = {
      "scan_file",
      "Scan a C++ file for fp16/bf16 hazards",
      "Run mpnanny's static checks (clang-tidy based) on one LibTorch C++ file or on C++ text. "
      "Returns each finding with its place, the enclosing function, the risk (overflow, "
      "underflow, domain, precision loss), the precision it computes in, what to write "
      "instead, a stable site_id, and the exact fix-its when the check has one. Nothing is "
      "written.",
      ScanFileIn,
      objectSchema(
          {{"file", str("absolute path scanned (virtual for inline source)")},
           {"inline", {{"type", "boolean"}}},
           {"findings", Findings},
           {"total_findings", integer("")},
           {"truncated", {{"type", "boolean"}}},
           {"findings_outside_roots", integer("findings in headers outside the roots, left out")},
           {"parse_errors", StringArray},
           {"config_errors", StringArray},
           {"summary", str("")}},
          {"file", "findings", "total_findings", "truncated", "parse_errors"}),
      true,
      [Scan](const json &A) { return Scan->scanFile(A); }};

  Out.ScanProject = {
      "scan_project",
      "Scan every source of a CMake build",
      "Run the checks on the project's own sources listed in <build_dir>/compile_commands.json "
      "(third-party, generated and out-of-root files are skipped), with the build's flags.",
      objectSchema(
          {{"build_dir", str("Build folder holding compile_commands.json, under the roots")},
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
                    {"findings_by_check",
                     {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}}},
                    {"findings_outside_roots", integer("")},
                    {"parse_errors", StringArray},
                    {"config_errors", StringArray},
                    {"summary", str("")}},
                   {"build_dir", "files_scanned", "findings", "total_findings", "parse_errors"}),
      true,
      [Scan](const json &A) { return Scan->scanProject(A); }};

  json FixIn = scanInputProperties();
  FixIn.erase("max_findings");
  FixIn["site_id"] = str("Fix only this finding (its site_id from scan_file)");
  FixIn["line"] = integer("Fix only the findings on this line", 1, 100000000);
  FixIn["check"] = str("Fix only the findings of this check");
  Out.SuggestFix = {
      "suggest_fix",
      "Propose the fix-its as a unified diff",
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
      true,
      [Scan](const json &A) { return Scan->suggestFix(A); }};
  return Out;
}

} // namespace mpnanny::mcp
