//===--- ParseHealth.h - mpnanny ---------------------------------*- C++ -*-===//
//
// Keep going where the compiler would stop. Real projects are scanned without some of
// their headers (a third-party include that is not installed, a header of another
// platform), and Clang treats a missing include as fatal: it stops reading the file, so
// every function after it went unchecked. Every mpnanny check asks for this before the
// parse starts (registerPPCallbacks), so both doors behave alike: fatal errors become
// errors, there is no error limit, and the location of every error is recorded. A function
// whose body holds an error is not checked (its AST is partial and would mislead the
// analysis); every other function is, and the count of those left out is logged for
// mpnanny-check to print per file.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_UTILS_PARSEHEALTH_H
#define MPNANNY_CHECKS_UTILS_PARSEHEALTH_H

#include "clang/AST/ASTContext.h"
#include "clang/Lex/Preprocessor.h"

namespace clang::tidy::mpnanny {

class PrecisionContext;

namespace parse_health {

/// Before the parse: fatal errors become errors, the error limit goes, and errors are
/// recorded from now on for this translation unit. Idempotent within a translation unit.
void keepGoing(Preprocessor &PP);

/// Whether the user function that holds Loc had a compile error inside it (or is invalid).
/// False outside any user function and when keepGoing() was not called for this unit.
bool inBrokenFunction(SourceLocation Loc, const PrecisionContext &Functions, ASTContext &Ctx);

/// Once per translation unit (later calls do nothing): logs how many user functions could
/// not be checked, with the first error inside one of them (FindingLog::recordParse).
void summarize(const PrecisionContext &Functions, ASTContext &Ctx);

} // namespace parse_health
} // namespace clang::tidy::mpnanny

#endif
