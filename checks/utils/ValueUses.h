//===--- ValueUses.h - mpnanny -----------------------------------*- C++ -*-===//
//
// Where a tensor goes after it is made, within its function. Some values are harmless
// where they are made and hazardous only in some uses: fp16 probabilities are fine as
// attention weights, but a probability that fp16 rounded to 0 ends a top-p cumsum early,
// and divides to inf. A use is found through locals, conversions, reorderings (sort, topk),
// indexing (`x[i]`) and the ops whose knowledge-base entry passes values on unchanged
// (`transfer: identity`: views, `index`, `gather`; `transfer: union`: cat, stack), as the
// knowledge base's `uses:` of a risk names it.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_UTILS_VALUEUSES_H
#define MPNANNY_CHECKS_UTILS_VALUEUSES_H

#include "KnowledgeBase.h"
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
                                   const ::mpnanny::kb::KnowledgeBase &KB, ASTContext &Ctx);

/// The bounded function (tanh, sigmoid, erf, atan) that an overflow of Value reaches within
/// its expression, through sums with a named tensor or a scalar and products or quotients
/// with a nonzero scalar: an inf there only takes the function to its limit. GELU's tanh
/// form, tanh(c * (x + 0.044715 * pow(x, 3))), is +-1 once the cube passes 65504, the exact
/// limit of GELU. Null when the inf may meet anything else on the way: a tensor factor that
/// may be 0 (inf * 0 is NaN), another expression that may be an inf of the other sign.
const CallExpr *saturatingConsumer(const Expr &Value, ASTContext &Ctx);

/// True when Value is compared with 0 where it is made and nothing else reads it
/// (`x.sum().item<float>() == 0.f`, `x.sum() > 0`, `x.sum().ne(0)`): only its sign is read,
/// and half keeps the sign of a float total, inf included (a total below 2.98e-8 that fp16
/// flushes to 0 is the one exception, too small for a sum of any real data).
bool onlyComparedWithZero(const Expr &Value, ASTContext &Ctx);

} // namespace clang::tidy::mpnanny

#endif
