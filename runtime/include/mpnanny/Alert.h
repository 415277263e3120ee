// Alert kinds raised by the runtime; one knowledge page per kind in knowledge/alert-<TYPE>.md.
#ifndef MPNANNY_ALERT_H
#define MPNANNY_ALERT_H

#include <cstdint>
#include <optional>
#include <string>

namespace mpnanny {

/// The precision a run is judged against: fp32 tensors on the CPU are checked for what would go
/// wrong if the same values lived in this format.
enum class Precision { FP16, BF16 };

enum class AlertType {
  Nan,
  Inf,
  Overflow,
  OverflowRisk,
  Underflow,
  GradExplosion,
  GradVanish,
  Swamping,
  LossScaleDrop,
  LossScaleCollapse,
};
/// Every alert type, in the enum's order.
inline constexpr AlertType kAlertTypes[] = {
    AlertType::Nan,      AlertType::Inf,           AlertType::Overflow,      AlertType::OverflowRisk,
    AlertType::Underflow, AlertType::GradExplosion, AlertType::GradVanish,    AlertType::Swamping,
    AlertType::LossScaleDrop, AlertType::LossScaleCollapse,
};

enum class Severity { Info, Warning, Error };

/// "NAN", "OVERFLOW_RISK", ...: the names stored in the database and used by knowledge/ pages.
const char* to_string(AlertType type);
const char* to_string(Severity severity);
const char* to_string(Precision precision);
std::optional<AlertType> alert_type_from_string(const std::string& name);
/// "NAN, INF, ...": every alert type's name, for messages that list them.
std::string alert_type_names();

/// Where in the user's program an observation comes from.
struct SourceLocation {
  std::string function;
  std::string file;  ///< absolute path as recorded in DWARF; empty when the frame has no debug info
  int line = 0;

  bool known() const { return line > 0 || !function.empty(); }
};

/// Which part of a step produced the observed tensor.
enum class Phase { Forward, Backward, Gradient, Weight, LossScale };
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
