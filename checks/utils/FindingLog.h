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

class FindingLog {
public:
  static void record(FindingDetail Detail);
  /// Everything recorded so far on this thread, and forgets it.
  static std::vector<FindingDetail> take();
};

} // namespace mpnanny

#endif
