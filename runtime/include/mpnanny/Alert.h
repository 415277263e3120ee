// Alert kinds raised by the runtime; one knowledge page per kind in knowledge/alert-<TYPE>.md.
#ifndef MPNANNY_ALERT_H
#define MPNANNY_ALERT_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "Vocabulary.h"  // common/: the names of alert types, severities and formats

namespace mpnanny {

/// The precision a run is judged against: fp32 tensors on the CPU are checked for what would go
/// wrong if the same values lived in this format.
using Precision = vocab::HalfFormat;
using AlertType = vocab::AlertType;
using Severity = vocab::AlertSeverity;

/// Every alert type, in the enum's order.
inline const std::vector<AlertType>& alert_types() { return vocab::all<AlertType>(); }

/// "NAN", "OVERFLOW_RISK", ...: the names stored in the database and used by knowledge/ pages
/// (spelled in the vocabulary, common/Vocabulary.cpp).
inline const char* to_string(AlertType type) { return vocab::name(type); }
inline const char* to_string(Severity severity) { return vocab::name(severity); }
inline const char* to_string(Precision precision) { return vocab::name(precision); }
inline std::optional<AlertType> alert_type_from_string(const std::string& name) {
  return vocab::parse<AlertType>(name);
}
/// "NAN, INF, ...": every alert type's name, for messages that list them.
inline std::string alert_type_names() { return vocab::joinedNames<AlertType>(); }

/// Where in the user's program an observation comes from.
struct SourceLocation {
  std::string function;
  std::string file;  ///< absolute path as recorded in DWARF; empty when the frame has no debug info
  int line = 0;

  bool known() const { return line > 0 || !function.empty(); }
};

/// Which part of a step produced the observed tensor.
/// ReducedGradient: a parameter's gradient after the user's all-reduce (with a process group);
/// Gradient is the one this rank's backward pass produced.
enum class Phase { Forward, Backward, Gradient, Weight, LossScale, ReducedGradient };
const char* to_string(Phase phase);

struct Alert {
  int64_t step = 0;
  AlertType type = AlertType::Nan;
  Severity severity = Severity::Error;
  Phase phase = Phase::Forward;
  bool adaptive = false;  ///< raised by the robust baseline rather than the fixed limit
  std::string op;         ///< ATen op name, e.g. "aten::softmax" (empty for parameters)
  std::string name;       ///< parameter name for Gradient/Weight alerts
  SourceLocation location;
  double value = 0.0;      ///< the measured quantity the rule compared
  double threshold = 0.0;  ///< the limit it was compared against
  std::string message;
};

}  // namespace mpnanny

#endif  // MPNANNY_ALERT_H
