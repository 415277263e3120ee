// MPNANNY_VERIFY=1 without user code: the runtime library starts a site-verification session
// when it is loaded (VerifyFromEnvironment.cpp), before main() runs.
#ifndef MPNANNY_VERIFYFROMENVIRONMENT_H
#define MPNANNY_VERIFYFROMENVIRONMENT_H

namespace mpnanny {

/// Reads MPNANNY_VERIFY (and MPNANNY_SITES, MPNANNY_VERIFY_STEPS, MPNANNY_DIR, ...); when it is
/// set, starts a process-wide op-observing session whose steps are backward passes, reports its
/// verdicts at exit, and lets the first Nanny the program constructs take it over. Never throws.
void start_verification_from_environment();

}  // namespace mpnanny

#endif  // MPNANNY_VERIFYFROMENVIRONMENT_H
