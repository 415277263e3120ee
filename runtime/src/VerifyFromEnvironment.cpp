// The static initializer behind MPNANNY_VERIFY=1. mpnanny::runtime is a shared library, so this
// object runs whenever the library is loaded, referenced by the program or not; the CMake target
// keeps the library among the program's dependencies even under --as-needed (see
// runtime/CMakeLists.txt). Everything it calls (Nanny.cpp and the session's rooms: OpObserver,
// Recorder, AlertPolicy, BackwardHooks, Environment, SiteVerifier) keeps its namespace-scope
// state constant-initialized or in function-local statics, so the order of initializers between
// the library's files does not matter.
#include <iostream>  // std::cerr is ready before this file's initializer runs

#include "VerifyFromEnvironment.h"

namespace {

struct VerifyFromEnvironment {
  VerifyFromEnvironment() { mpnanny::start_verification_from_environment(); }
};

const VerifyFromEnvironment g_verify_from_environment;

}  // namespace
