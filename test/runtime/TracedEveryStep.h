// Options for the integration tests: every step traced into a scratch directory, nothing printed.
#ifndef MPNANNY_TEST_TRACED_EVERY_STEP_H
#define MPNANNY_TEST_TRACED_EVERY_STEP_H

#include "TestSupport.h"
#include "mpnanny/Nanny.h"

namespace mpnanny::test {

inline Options traced_every_step(const ScratchDir& dir) {
  Options options;
  options.trace_interval = 1;
  options.output_dir = dir.path();
  options.verbosity = 0;
  return options;
}

}  // namespace mpnanny::test

#endif  // MPNANNY_TEST_TRACED_EVERY_STEP_H
