//===--- FindingLog.h - mpnanny ----------------------------------*- C++ -*-===//
//
// What a clang-tidy diagnostic cannot carry: for each finding, the function it is
// in, the normalized expression, the ATen ops that realize it at run time and the
// risk to confirm. mpnanny-check reads it to write JSON, SARIF and the sites file;
// inside clang-tidy it is simply never read.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_FINDINGLOG_H
#define MPNANNY_CHECKS_FINDINGLOG_H

#include <string>
#include <vector>

namespace mpnanny {

struct FindingDetail {
  std::string Check;
  std::string File;    ///< as the compiler saw it
  unsigned Offset = 0; ///< of the warning, in File
  unsigned Line = 0, Column = 0;
  std::string Function;   ///< qualified name of the enclosing function
  std::string Expression; ///< source text of the flagged expression, whitespace collapsed
  std::vector<std::string> AtenOps;
  std::string Risk;      ///< overflow, underflow, precision-loss, domain, banned
  std::string Severity;  ///< note, warning, error
  std::string Precision; ///< the format the code computes in
  std::string Fix;
};

/// A translation unit's user functions that the checks could not look at, because the
/// compiler reported an error inside them (ParseHealth.h).
struct ParseSummary {
  std::string File;           ///< the main file, as the compiler saw it
  unsigned Functions = 0;     ///< user functions with a body, headers of the project included
  unsigned Unchecked = 0;     ///< of those, the ones with a compile error inside
  std::string FirstUnchecked; ///< "name (file:line: first error)"
  /// Some function computes in fp16, bf16 or under autocast, as far as this unit shows: a scan of
  /// it alone that found nothing may have missed a precision only the project's other files show.
  bool ShowsReducedPrecision = false;
};

class FindingLog {
public:
  static void record(FindingDetail Detail);
  /// Everything recorded so far on this thread, and forgets it.
  static std::vector<FindingDetail> take();
  static void recordParse(ParseSummary Summary);
  /// The summaries recorded so far on this thread, and forgets them.
  static std::vector<ParseSummary> takeParse();
  /// A translation unit's precision facts, as JSON text (ProjectFacts.h), for the facts pass.
  static void recordFacts(std::string Json);
  static std::vector<std::string> takeFacts();
};

} // namespace mpnanny

#endif
