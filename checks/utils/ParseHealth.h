//===--- ParseHealth.h - mpnanny ---------------------------------*- C++ -*-===//
//
// Keep going where the compiler would stop. Real projects are scanned without some of
// their headers (a third-party include that is not installed, a header of another
// platform), and Clang treats a missing include as fatal: it stops reading the file, so
// every function after it went unchecked. Every mpnanny check asks for this before the
// parse starts (registerPPCallbacks), so both doors behave alike: fatal errors become
// errors, there is no error limit, and the location of every error is recorded. A function
// whose body holds an error is checked only up to the statement before its first error (after
// it the AST is partial and would mislead the analysis, and what follows cannot have flowed
// into what came before); every other function is checked whole, and the count of those
// holding errors is logged for mpnanny-check to print per file.
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

/// Whether a finding about Node at Loc falls where its function's AST cannot be trusted: in a
/// function whose declaration is invalid, in an expression that holds an error, or in a
/// top-level statement of a function body (a loop counts whole) that ends after the function's
/// first error that may touch LibTorch state (`bool wide = absl::GetFlag(...) > 0;` only leaves
/// `wide` unknown, `std::ifstream f(path);` with <fstream> missing only a file). False outside
/// broken functions and when keepGoing() was not called.
bool inUncheckedPart(const Stmt *Node, SourceLocation Loc, const PrecisionContext &Functions,
                     ASTContext &Ctx);

/// Once per translation unit (later calls do nothing): logs how many user functions could
/// not be checked, with the first error inside one of them (FindingLog::recordParse).
void summarize(const PrecisionContext &Functions, ASTContext &Ctx);

} // namespace parse_health
} // namespace clang::tidy::mpnanny

#endif
