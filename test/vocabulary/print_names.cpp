// Prints every name of the vocabulary (common/Vocabulary.h), one "<kind> <name>" a line, for
// spelled_once.py: the test takes the names from the vocabulary itself, not from a copy.
#include "Vocabulary.h"

#include <iostream>

namespace {

template <typename Enum> void print(const char *Kind) {
  for (const std::string &Name : mpnanny::vocab::names<Enum>())
    std::cout << Kind << ' ' << Name << '\n';
}

} // namespace

int main() {
  using namespace mpnanny::vocab;
  print<Precision>("precision");
  print<Format>("format");
  print<HalfFormat>("format");
  print<AlertType>("alert-type");
  print<AlertSeverity>("severity");
  print<Severity>("severity");
  print<Verdict>("verdict");
  print<Check>("check");
  print<RiskKind>("risk");
  print<BadValue>("bad-value");
  return 0;
}
