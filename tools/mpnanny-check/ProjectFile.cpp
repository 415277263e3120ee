//===--- ProjectFile.cpp - mpnanny-check -----------------------------------===//
#include "ProjectFile.h"

#include "KnowledgeBase.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <yaml-cpp/yaml.h>

namespace mpnanny::check {

static std::string at(const std::string &Path, const YAML::Mark &Mark) {
  return Path + ":" + std::to_string(Mark.line + 1) + ":" + std::to_string(Mark.column + 1);
}

static std::string absoluteFrom(const std::string &Dir, const std::string &Path) {
  if (Path.empty() || llvm::sys::path::is_absolute(Path))
    return Path;
  llvm::SmallString<256> Abs(Dir);
  llvm::sys::path::append(Abs, Path);
  llvm::sys::path::remove_dots(Abs, /*remove_dot_dot=*/true);
  return std::string(Abs);
}

static std::optional<ProjectFile> read(const std::string &Path, std::string &Error) {
  YAML::Node Root;
  try {
    Root = YAML::LoadFile(Path);
  } catch (const YAML::ParserException &E) {
    Error = at(Path, E.mark) + ": error: " + E.msg;
    return std::nullopt;
  } catch (const YAML::Exception &E) {
    Error = Path + ": error: " + E.what();
    return std::nullopt;
  }
  ProjectFile P;
  P.Path = Path;
  if (Root.IsNull())
    return P;
  if (!Root.IsMap()) {
    Error = at(Path, Root.Mark()) + ": error: expected keys such as 'Precision: fp16'";
    return std::nullopt;
  }
  llvm::SmallString<256> Dir(Path);
  llvm::sys::path::remove_filename(Dir);
  for (const auto &Entry : Root) {
    const std::string Key = Entry.first.as<std::string>("");
    const YAML::Node &Value = Entry.second;
    if (!Value.IsScalar()) {
      Error = at(Path, Value.Mark()) + ": error: '" + Key + "' takes a single value";
      return std::nullopt;
    }
    const std::string Text = Value.as<std::string>();
    if (Key == "Precision") {
      if (!kb::parsePrecision(Text)) {
        Error = at(Path, Value.Mark()) + ": error: unknown precision '" + Text +
                "' (use fp32, fp16, bf16, autocast-fp16 or autocast-bf16)";
        return std::nullopt;
      }
      P.Precision = Text;
    } else if (Key == "Facts") {
      P.Facts = Text == "none" ? Text : absoluteFrom(std::string(Dir), Text);
    } else if (Key == "Rules") {
      P.Rules = absoluteFrom(std::string(Dir), Text);
    } else {
      Error = at(Path, Entry.first.Mark()) + ": error: unknown key '" + Key +
              "' (known: Precision, Facts, Rules)";
      return std::nullopt;
    }
  }
  return P;
}

std::optional<ProjectFile> findProjectFile(const std::string &Dir, std::string &Error) {
  llvm::SmallString<256> Path(Dir);
  llvm::sys::fs::make_absolute(Path);
  llvm::sys::path::remove_dots(Path, /*remove_dot_dot=*/true);
  while (!Path.empty()) {
    llvm::SmallString<256> Candidate(Path);
    llvm::sys::path::append(Candidate, ProjectFileName);
    if (llvm::sys::fs::is_regular_file(Candidate))
      return read(std::string(Candidate), Error);
    llvm::StringRef Parent = llvm::sys::path::parent_path(Path);
    if (Parent == Path)
      break;
    Path = Parent;
  }
  return std::nullopt;
}

} // namespace mpnanny::check
