//===--- Diff.cpp - mpnanny-check ------------------------------------------===//
#include "Diff.h"

#include "Output.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

namespace mpnanny::check {

namespace {

llvm::Error malformed(llvm::StringRef Name, unsigned Line, const llvm::Twine &What) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 Name + ":" + llvm::Twine(Line) + ": malformed diff: " + What);
}

/// Git writes a path with unusual bytes as a C string: "b/dir/sp\303\244ce.cpp".
std::string unquote(llvm::StringRef S) {
  if (S.size() < 2 || !S.starts_with("\"") || !S.ends_with("\""))
    return S.str();
  S = S.drop_front().drop_back();
  std::string Out;
  for (size_t I = 0; I < S.size(); ++I) {
    if (S[I] != '\\' || I + 1 == S.size()) {
      Out += S[I];
      continue;
    }
    char C = S[++I];
    if (C >= '0' && C <= '7' && I + 2 < S.size()) {
      Out += static_cast<char>(((C - '0') << 6) | ((S[I + 1] - '0') << 3) | (S[I + 2] - '0'));
      I += 2;
      continue;
    }
    switch (C) {
    case 'n': Out += '\n'; break;
    case 't': Out += '\t'; break;
    case 'a': Out += '\a'; break;
    case 'b': Out += '\b'; break;
    case 'f': Out += '\f'; break;
    case 'r': Out += '\r'; break;
    case 'v': Out += '\v'; break;
    default: Out += C; // \\ and \"
    }
  }
  return Out;
}

/// The path of a `--- ` or `+++ ` line: quoted or not, without the timestamp `diff -u`
/// puts after a tab, and without git's a/ or b/ prefix.
std::string headerPath(llvm::StringRef Rest) {
  Rest = Rest.rtrim("\r");
  std::string Path;
  if (Rest.starts_with("\"")) {
    size_t End = 1;
    while (End < Rest.size() && !(Rest[End] == '"' && Rest[End - 1] != '\\'))
      ++End;
    Path = unquote(Rest.take_front(End + 1));
  } else {
    Path = Rest.split('\t').first.rtrim(" ").str();
  }
  llvm::StringRef P(Path);
  if (P.starts_with("a/") || P.starts_with("b/"))
    return P.drop_front(2).str();
  return Path;
}

/// "12" or "12,3" after '-' or '+'; the count defaults to 1.
bool parseRange(llvm::StringRef Text, unsigned &Start, unsigned &Count) {
  auto [First, Second] = Text.split(',');
  if (First.getAsInteger(10, Start))
    return false;
  Count = 1;
  return Second.empty() ? Text.find(',') == llvm::StringRef::npos : !Second.getAsInteger(10, Count);
}

} // namespace

llvm::Expected<std::vector<DiffFile>> parseUnifiedDiff(llvm::StringRef Text, llvm::StringRef Name) {
  std::vector<DiffFile> Files;
  bool HaveFile = false, Deleted = false, SawOld = false;
  unsigned OldLeft = 0, NewLeft = 0, NewLine = 0, HunkStart = 0;
  unsigned Number = 0;
  llvm::SmallVector<llvm::StringRef, 0> Lines;
  Text.split(Lines, '\n');
  if (!Lines.empty() && Lines.back().empty())
    Lines.pop_back();
  for (llvm::StringRef Line : Lines) {
    ++Number;
    if (OldLeft || NewLeft) {
      // Inside a hunk: its header said how many lines follow, so "--- x" here is a
      // removed line, not a file header. An empty line is a context line whose space
      // an editor stripped.
      char Kind = Line.empty() ? ' ' : Line[0];
      if (Kind == '\\') // "\ No newline at end of file"
        continue;
      if (Kind == ' ' || Kind == '-' || Kind == '+') {
        if ((Kind != '+' && OldLeft == 0) || (Kind != '-' && NewLeft == 0))
          return malformed(Name, Number,
                           "hunk at line " + llvm::Twine(HunkStart) +
                               " has more lines than its header says");
        if (Kind != '+')
          --OldLeft;
        if (Kind != '-') {
          if (Kind == '+' && !Deleted)
            Files.back().AddedLines.insert(NewLine);
          ++NewLine;
          --NewLeft;
        }
        continue;
      }
      return malformed(Name, Number,
                       "hunk at line " + llvm::Twine(HunkStart) + " ends after " +
                           "fewer lines than its header says");
    }
    if (Line.starts_with("\\"))
      continue;
    if (Line.starts_with("--- ")) {
      SawOld = true;
      continue;
    }
    if (Line.starts_with("+++ ")) {
      if (!SawOld)
        return malformed(Name, Number, "'+++' without a '---' line before it");
      SawOld = false;
      std::string Path = headerPath(Line.drop_front(4));
      if (Path.empty())
        return malformed(Name, Number, "'+++' names no file");
      Deleted = Path == "/dev/null";
      HaveFile = true;
      if (!Deleted)
        Files.push_back({Path, {}});
      continue;
    }
    if (SawOld)
      return malformed(Name, Number, "'---' line not followed by a '+++' line");
    if (Line.starts_with("@@")) {
      if (!HaveFile)
        return malformed(Name, Number, "hunk before any '+++ file' line");
      // @@ -a[,b] +c[,d] @@ [section]
      llvm::StringRef Rest = Line.drop_front(2).ltrim(' ');
      llvm::StringRef Old, New;
      std::tie(Old, Rest) = Rest.split(' ');
      std::tie(New, Rest) = Rest.split(' ');
      unsigned OldStart = 0, OldCount = 0, NewStart = 0, NewCount = 0;
      if (!Old.consume_front("-") || !New.consume_front("+") || !Rest.starts_with("@@") ||
          !parseRange(Old, OldStart, OldCount) || !parseRange(New, NewStart, NewCount))
        return malformed(Name, Number,
                         "bad hunk header '" + Line.rtrim("\r") + "' (want @@ -a,b +c,d @@)");
      OldLeft = OldCount;
      NewLeft = NewCount;
      NewLine = NewStart;
      HunkStart = Number;
      continue;
    }
    // Anything else outside a hunk is a header git writes (diff --git, index, new file
    // mode, rename from/to, similarity index, Binary files ... differ) or a commit
    // message before the diff: nothing to read from it.
  }
  if (OldLeft || NewLeft)
    return malformed(Name, Number,
                     "the input ends inside the hunk at line " + llvm::Twine(HunkStart));
  if (SawOld)
    return malformed(Name, Number, "'---' line not followed by a '+++' line");
  return Files;
}

static std::optional<std::string> run(llvm::ArrayRef<llvm::StringRef> Args, std::string &Err) {
  auto Git = llvm::sys::findProgramByName("git");
  if (!Git) {
    Err = "git not found on PATH";
    return std::nullopt;
  }
  llvm::SmallString<128> Out, ErrFile;
  llvm::sys::fs::createTemporaryFile("mpnanny-git", "out", Out);
  llvm::sys::fs::createTemporaryFile("mpnanny-git", "err", ErrFile);
  std::optional<llvm::StringRef> Redirects[] = {llvm::StringRef(""), llvm::StringRef(Out),
                                                llvm::StringRef(ErrFile)};
  std::vector<llvm::StringRef> Argv = {*Git};
  Argv.insert(Argv.end(), Args.begin(), Args.end());
  std::string ExecError;
  int Code = llvm::sys::ExecuteAndWait(*Git, Argv, std::nullopt, Redirects, 0, 0, &ExecError);
  auto Read = [](llvm::StringRef Path) {
    auto Buffer = llvm::MemoryBuffer::getFile(Path);
    return Buffer ? (*Buffer)->getBuffer().str() : std::string();
  };
  std::string Stdout = Read(Out), Stderr = Read(ErrFile);
  llvm::sys::fs::remove(Out);
  llvm::sys::fs::remove(ErrFile);
  if (Code != 0) {
    Err = !ExecError.empty() ? ExecError : llvm::StringRef(Stderr).trim().str();
    return std::nullopt;
  }
  return Stdout;
}

llvm::Expected<std::string> gitDiff(const std::string &Base, const std::string &Directory) {
  std::string Err;
  auto Text = run({"-C", Directory, "diff", "-U0", "--no-color", "--no-ext-diff", "--src-prefix=a/",
                   "--dst-prefix=b/", Base, "--"},
                  Err);
  if (!Text)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "git diff -U0 " + Base + " failed: " + Err);
  return *Text;
}

std::string gitTopLevel(const std::string &Directory) {
  std::string Err;
  auto Top = run({"-C", Directory, "rev-parse", "--show-toplevel"}, Err);
  return Top ? llvm::StringRef(*Top).trim().str() : "";
}

static std::string realPath(llvm::StringRef Path) {
  llvm::SmallString<256> Real;
  if (llvm::sys::fs::real_path(Path, Real))
    return Path.str();
  return std::string(Real);
}

ChangedLines resolveDiffPaths(const std::vector<DiffFile> &Files,
                              const std::vector<std::string> &Roots,
                              const std::vector<std::string> &Known,
                              std::vector<std::string> &Missing) {
  ChangedLines Out;
  for (const auto &F : Files) {
    std::string Found;
    if (llvm::sys::path::is_absolute(F.Path)) {
      if (llvm::sys::fs::exists(F.Path))
        Found = F.Path;
    } else {
      for (const auto &Root : Roots) {
        if (Root.empty())
          continue;
        llvm::SmallString<256> Candidate(Root);
        llvm::sys::path::append(Candidate, F.Path);
        if (llvm::sys::fs::exists(Candidate) && !llvm::sys::fs::is_directory(Candidate)) {
          Found = std::string(Candidate);
          break;
        }
      }
      for (size_t I = 0; Found.empty() && I < Known.size(); ++I)
        if (llvm::StringRef(Known[I]).ends_with("/" + F.Path))
          Found = Known[I];
    }
    if (Found.empty()) {
      Missing.push_back(F.Path);
      continue;
    }
    auto &Lines = Out[realPath(Found)];
    Lines.insert(F.AddedLines.begin(), F.AddedLines.end());
  }
  return Out;
}

bool isTranslationUnit(llvm::StringRef Path) {
  llvm::StringRef Ext = llvm::sys::path::extension(Path);
  return Ext == ".c" || Ext == ".cc" || Ext == ".cpp" || Ext == ".cxx" || Ext == ".c++" ||
         Ext == ".cu" || Ext == ".C";
}

void keepChangedLines(std::vector<FileScan> &Scans, const ChangedLines &Changed) {
  std::map<std::string, std::string> Real;
  for (auto &S : Scans) {
    std::vector<clang::tidy::ClangTidyError> Kept;
    for (auto &E : S.Errors) {
      if (E.DiagLevel == clang::tooling::Diagnostic::Error || E.Message.FilePath.empty()) {
        Kept.push_back(std::move(E));
        continue;
      }
      std::string Path = absolutePath(E.Message.FilePath, E.BuildDirectory);
      auto It = Real.find(Path);
      if (It == Real.end())
        It = Real.emplace(Path, realPath(Path)).first;
      auto File = Changed.find(It->second);
      if (File == Changed.end())
        continue;
      if (File->second.count(locate(Path, E.Message.FileOffset).Line))
        Kept.push_back(std::move(E));
    }
    S.Errors = std::move(Kept);
  }
}

llvm::Expected<ChangedLines> readChangedLines(const std::string &DiffFile, const std::string &Base,
                                              const std::string &BuildPath, bool FromDatabase,
                                              std::vector<std::string> &Scan) {
  llvm::SmallString<256> Cwd;
  llvm::sys::fs::current_path(Cwd);
  std::string Name, Text;
  if (!Base.empty()) {
    auto Out = gitDiff(Base, std::string(Cwd));
    if (!Out)
      return Out.takeError();
    Name = "git diff -U0 " + Base;
    Text = std::move(*Out);
  } else {
    Name = DiffFile.empty() || DiffFile == "-" ? "<stdin>" : DiffFile;
    auto Buffer =
        Name == "<stdin>" ? llvm::MemoryBuffer::getSTDIN() : llvm::MemoryBuffer::getFile(DiffFile);
    if (!Buffer)
      return llvm::createStringError(Buffer.getError(), "cannot read the diff '" + Name +
                                                            "': " + Buffer.getError().message());
    Text = (*Buffer)->getBuffer().str();
  }
  auto Files = parseUnifiedDiff(Text, Name);
  if (!Files)
    return Files.takeError();

  // The database's files: where a diff path relative to some other root is found, and, with
  // -p, the only files that can be scanned (their flags are there).
  std::vector<std::string> Known;
  if (FromDatabase) {
    std::string Error;
    auto DB = clang::tooling::CompilationDatabase::loadFromDirectory(BuildPath, Error);
    if (!DB)
      return llvm::createStringError(std::make_error_code(std::errc::no_such_file_or_directory),
                                     "no compilation database in '" + BuildPath +
                                         "': no compile_commands.json there (configure with "
                                         "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON)");
    for (const auto &F : DB->getAllFiles()) {
      llvm::SmallString<256> Real;
      Known.push_back(llvm::sys::fs::real_path(F, Real) ? F : std::string(Real));
    }
  }
  std::vector<std::string> Roots = {gitTopLevel(std::string(Cwd)), std::string(Cwd)};
  if (!BuildPath.empty()) {
    llvm::SmallString<256> Build(BuildPath);
    llvm::sys::fs::make_absolute(Build);
    Roots.push_back(llvm::sys::path::parent_path(Build).str());
    Roots.push_back(std::string(Build));
  }
  std::vector<std::string> Missing;
  ChangedLines Changed = resolveDiffPaths(*Files, Roots, Known, Missing);
  for (const auto &M : Missing)
    llvm::errs() << "mpnanny-check: note: " << M << " (from the diff) not found; skipped\n";
  for (const auto &[File, Lines] : Changed) {
    if (Lines.empty())
      continue; // only deletions: no line of the new file to report on
    bool Listed = std::find(Known.begin(), Known.end(), File) != Known.end();
    if (FromDatabase ? Listed : isTranslationUnit(File))
      Scan.push_back(File);
    else if (FromDatabase && isTranslationUnit(File))
      llvm::errs() << "mpnanny-check: note: " << File << " is not in " << BuildPath
                   << "/compile_commands.json; skipped\n";
  }
  return Changed;
}

} // namespace mpnanny::check
