// The names of Alert.h's own enums, as stored in metrics.db. Alert types, severities and formats
// are named by the vocabulary (common/Vocabulary.cpp), which every layer links.
#include "mpnanny/Alert.h"

namespace mpnanny {

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Gradient: return "gradient";
    case Phase::Weight: return "weight";
    case Phase::LossScale: return "loss_scale";
    case Phase::ReducedGradient: return "reduced_gradient";
  }
  return "unknown";
}

}  // namespace mpnanny
