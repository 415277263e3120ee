//===--- ParseHealth.h - mpnanny ---------------------------------*- C++ -*-===//
//
// Keep going where the compiler would stop. Real projects are scanned without some of
// their headers (a third-party include that is not installed, a header of another
// platform), and Clang treats a missing include as fatal: it stops reading the file, so
// every function after it went unchecked. Every mpnanny check asks for this before the
// parse starts (registerPPCallbacks), so both doors behave alike: fatal errors become
// errors, there is no error limit, and the location of every error is recorded. In a function
// whose body holds an error, the statement of the body that holds it is not checked (its AST is
// partial and would mislead the analysis), nor is a later statement that reads what that one may
// have changed, transitively; the statements before it, and those after it that read none of
// that, run on values the compiler saw whole and are checked. The count of functions checked in
// part is logged for mpnanny-check to print per file.
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
/// function whose declaration is invalid, in an expression that holds an error, in a top-level
/// statement of a function body (a loop counts whole) that holds an error that may touch
/// LibTorch state (`bool wide = absl::GetFlag(...) > 0;` only leaves `wide` unknown,
/// `std::ifstream f(path);` with <fstream> missing only a file), or in a later one that reads
/// what such a statement may have changed. False outside broken functions and when keepGoing()
/// was not called.
bool inUncheckedPart(const Stmt *Node, SourceLocation Loc, const PrecisionContext &Functions,
                     ASTContext &Ctx);

/// Once per translation unit (later calls do nothing): logs how many user functions could
/// not be checked, with the first error inside one of them (FindingLog::recordParse).
void summarize(const PrecisionContext &Functions, ASTContext &Ctx);

} // namespace parse_health
} // namespace clang::tidy::mpnanny

#endif
