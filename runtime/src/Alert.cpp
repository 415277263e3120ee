// The names of Alert.h's enums, as stored in metrics.db. Needs no LibTorch: the after-training
// tools compile it too, to check the alert types they are asked for.
#include "mpnanny/Alert.h"

namespace mpnanny {

const char* to_string(AlertType type) {
  switch (type) {
    case AlertType::Nan: return "NAN";
    case AlertType::Inf: return "INF";
    case AlertType::Overflow: return "OVERFLOW";
    case AlertType::OverflowRisk: return "OVERFLOW_RISK";
    case AlertType::Underflow: return "UNDERFLOW";
    case AlertType::GradExplosion: return "GRAD_EXPLOSION";
    case AlertType::GradVanish: return "GRAD_VANISH";
    case AlertType::Swamping: return "SWAMPING";
    case AlertType::LossScaleDrop: return "LOSS_SCALE_DROP";
    case AlertType::LossScaleCollapse: return "LOSS_SCALE_COLLAPSE";
  }
  return "UNKNOWN";
}

std::optional<AlertType> alert_type_from_string(const std::string& name) {
  for (const AlertType type : kAlertTypes) {
    if (name == to_string(type)) return type;
  }
  return std::nullopt;
}

const char* to_string(Severity severity) {
  switch (severity) {
    case Severity::Info: return "INFO";
    case Severity::Warning: return "WARNING";
    case Severity::Error: return "ERROR";
  }
  return "UNKNOWN";
}

const char* to_string(Precision precision) { return precision == Precision::FP16 ? "fp16" : "bf16"; }

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Gradient: return "gradient";
    case Phase::Weight: return "weight";
    case Phase::LossScale: return "loss_scale";
  }
  return "unknown";
}

std::string alert_type_names() {
  std::string names;
  for (const AlertType type : kAlertTypes) names += (names.empty() ? "" : ", ") + std::string(to_string(type));
  return names;
}

}  // namespace mpnanny
