//===--- ValueUses.h - mpnanny -----------------------------------*- C++ -*-===//
//
// Where a tensor goes after it is made, within its function. Some values are harmless
// where they are made and hazardous only in some uses: fp16 probabilities are fine as
// attention weights, but a probability that fp16 rounded to 0 ends a top-p cumsum early,
// and divides to inf. A use is found through locals, conversions and views (`.to()`,
// `.contiguous()`, `.view()`, indexing), as the knowledge base's `uses:` of a risk names it.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_UTILS_VALUEUSES_H
#define MPNANNY_CHECKS_UTILS_VALUEUSES_H

#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"
#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::mpnanny {

/// The kinds of use a rule can name (rules/README.md, a risk's `uses:`).
enum class UseKind { PrefixSum, Log, Divisor, Threshold };

/// "prefix-sum", "log", "divisor", "threshold".
const char *toString(UseKind K);
std::optional<UseKind> parseUseKind(llvm::StringRef Name);

struct ValueUse {
  UseKind Kind;
  const Expr *At = nullptr; ///< the expression that uses the value that way
};

/// The first use of one of Kinds that Value reaches in its function, if any.
std::optional<ValueUse> firstUseAs(const Expr &Value, const std::vector<UseKind> &Kinds,
                                   ASTContext &Ctx);

} // namespace clang::tidy::mpnanny

#endif
