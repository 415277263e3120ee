//===--- ProjectFile.h - mpnanny-check ---------------------------*- C++ -*-===//
//
// What a project declares once, for every door that is not clang-tidy: `.mpnanny.yaml`
// in the compilation database's folder or a folder above it (the source's, without one).
// clang-tidy reads the same `Precision` key from `.clang-tidy`'s CheckOptions.
//
//   Precision: fp16                 # what the project trains or infers in
//   Facts: build/mpnanny-facts.json # the project's facts file (default: next to the database)
//   Rules: tools/mpnanny-rules      # another knowledge base
//
// Relative paths are relative to the file's folder.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_PROJECTFILE_H
#define MPNANNY_TOOLS_PROJECTFILE_H

#include <optional>
#include <string>

namespace mpnanny::check {

struct ProjectFile {
  std::string Path;
  std::string Precision; ///< "" when the file does not declare one
  std::string Facts;     ///< absolute, "" when not given
  std::string Rules;     ///< absolute, "" when not given
};

inline constexpr const char *ProjectFileName = ".mpnanny.yaml";

/// The nearest project file in Dir or above it. Nullopt when there is none, and also when
/// one is found but cannot be used: then Error says where and what (file:line:col: ...).
std::optional<ProjectFile> findProjectFile(const std::string &Dir, std::string &Error);

} // namespace mpnanny::check

#endif
