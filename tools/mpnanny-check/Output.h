//===--- Output.h - mpnanny-check --------------------------------*- C++ -*-===//
//
// Findings as mpnanny-check reports them: clang-tidy's diagnostics joined with the
// details the checks logged (function, expression, ATen ops), written as JSON.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_OUTPUT_H
#define MPNANNY_TOOLS_OUTPUT_H

#include "Vocabulary.h"
#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "utils/FindingLog.h"
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mpnanny::check {

struct Location {
  std::string File;
  unsigned Line = 0, Column = 0;
};

struct Note {
  std::string Message;
  Location Where;
};

/// One replacement of a fix-it: bytes [Offset, Offset + Length) of File become Text.
struct Edit {
  std::string File;
  unsigned Offset = 0, Length = 0;
  std::string Text;
  Location Begin, End; ///< End is the position just past the replaced bytes
};

struct Finding {
  std::string Check;
  std::string Message;
  Location Where;
  unsigned Offset = 0;
  std::string Severity = vocab::name(vocab::Severity::Warning);
  std::string Function;
  std::string Expression;
  std::string Risk;
  std::string Precision;
  std::string Fix;
  std::vector<std::string> AtenOps;
  std::vector<Note> Notes;
  std::vector<Edit> Edits; ///< the exact fix-it, when the check offers one
  std::string SiteId;
};

/// The mpnanny findings among clang-tidy's diagnostics (NOLINT already applied),
/// sorted by file, line, column and check.
std::vector<Finding> collectFindings(const std::vector<clang::tidy::ClangTidyError> &Errors,
                                     const std::vector<FindingDetail> &Details);

/// Line and column (1-based, bytes) of an offset in a file.
Location locate(const std::string &File, unsigned Offset);

/// A stable id: the check, the file, the function and the normalized expression,
/// plus the rank among identical ones, so edits elsewhere in the file keep it.
std::string siteIdOf(const Finding &F, unsigned Occurrence);

nlohmann::json toJson(const Finding &F);

/// The sites file the runtime reads (format: tools/mpnanny-check/README.md).
nlohmann::json sitesDocument(const std::vector<Finding> &Findings, const std::string &GeneratedBy);

/// A diagnostic path made absolute: clang-tidy keeps paths as the compile command
/// spelled them, relative to its directory.
std::string absolutePath(const std::string &Path, const std::string &Directory);

} // namespace mpnanny::check

#endif
