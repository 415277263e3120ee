//===--- ProjectFacts.h - mpnanny --------------------------------*- C++ -*-===//
//
// Precision facts across translation units. Real projects choose their dtype once and far
// from the ops: `model->to(device, torch::kHalf)` in main.cpp while the layers live in
// layers.cpp, autocast switched on in a trainer in another file, a `torch::Dtype` member set
// in a constructor. A facts pass over compile_commands.json exports each unit's facts
// (UnitFacts), merges them into one model of the project, resolves it (PrecisionModel), and
// writes what a single unit cannot see (ProjectFacts) to a facts file keyed by USR; every
// scan, through either door, reads that file and starts from it.
//
// The file (mpnanny-facts.json, next to the compilation database by default):
//   {"version": 1, "functions": {USR: {"precision", "where", "why", "cpu_autocast", "toggle",
//                                      "converts"}},
//    "classes": {USR: {"format", "name", "where"}}, "dtypes": {USR: {"format", "where"}},
//    "autocast_cache_clears": [place]}
// Each unit's exported facts are cached beside it (mpnanny-facts.units/) with the files the
// unit read, so that a rebuild reads again only what changed.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_UTILS_PROJECTFACTS_H
#define MPNANNY_CHECKS_UTILS_PROJECTFACTS_H

#include "PrecisionModel.h"
#include "llvm/Support/JSON.h"
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::mpnanny {

/// A dtype value a member or variable is given somewhere (`dtype_ = torch::kHalf`).
struct DtypeFact {
  kb::Format Format = kb::Format::FP16;
  Seen Where;
};

/// What one translation unit says, places only (no SourceLocation survives the unit).
struct UnitFacts {
  std::string File; ///< the main file
  /// The project's files the facts come from (the main file, headers with functions or
  /// classes): a unit is read again when one of them changes.
  std::vector<std::string> Inputs;
  std::vector<ModelFunction> Functions;
  std::map<std::string, Conversion> Conversions; ///< class USR -> direct conversion
  std::map<std::string, std::vector<std::string>> Submodules;
  std::map<std::string, std::string> ClassNames;
  std::map<std::string, DtypeFact> Dtypes;

  llvm::json::Value toJson() const;
  static std::optional<UnitFacts> fromJson(const llvm::json::Value &V, std::string &Error);
};

/// The project's facts once merged: what one unit needs from the others.
class ProjectFacts {
public:
  std::map<std::string, ExternalFunction> Functions;
  std::map<std::string, Conversion> Classes;
  std::map<std::string, DtypeFact> Dtypes;
  /// Where the project calls at::autocast::clear_cache(): a unit whose autocast regime is
  /// set in another file cannot see that file's loop, but can know whether anything clears.
  std::vector<Place> AutocastCacheClears;

  /// Merges every unit's facts into one model, resolves it, and keeps what matters to
  /// another unit: non-fp32 inherited precisions, autocast switches left behind, methods
  /// that convert their object, converted classes and half dtype values.
  static ProjectFacts merge(const std::vector<UnitFacts> &Units);

  llvm::json::Value toJson() const;
  static std::optional<ProjectFacts> fromJson(const llvm::json::Value &V, std::string &Error);

  /// The facts file at Path, read once per process and again when it changes on disk.
  /// Null with Error set when it cannot be read or is not a facts file.
  static std::shared_ptr<const ProjectFacts> load(const std::string &Path, std::string &Error);

  /// The file name the facts pass writes and the scans look for.
  static constexpr const char *FileName = "mpnanny-facts.json";
};

/// "fp16" -> Format; nullopt for anything else.
std::optional<kb::Format> parseFormat(llvm::StringRef Name);

} // namespace clang::tidy::mpnanny

#endif
