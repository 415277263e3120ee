//===--- KernelTypes.h - mpnanny ---------------------------------*- C++ -*-===//
//
// Precision in kernels: which types compute in half (the knowledge base's half-type entries,
// seen through typedefs and template substitutions), what the names of intrinsics do
// (rules/kernel.yaml), and why a value is half: the instantiation that binds a template
// parameter or an alias to a half type and where it comes from, "scalar_t = at::Half, from
// AT_DISPATCH_FLOATING_TYPES_AND_HALF at k.cpp:12".
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_KERNEL_UTILS_KERNELTYPES_H
#define MPNANNY_CHECKS_KERNEL_UTILS_KERNELTYPES_H

#include "KnowledgeBase.h"
#include "utils/PrecisionModel.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"
#include <optional>
#include <string>

namespace clang::tidy::mpnanny::kernel {

/// The half format a value of type T computes in: the knowledge base's half types (at::Half,
/// __half, half2, __nv_bfloat16, cutlass::half_t, ...) and Clang's _Float16 and __bf16. Not
/// through pointers or references.
std::optional<kb::Format> halfFormatOf(QualType T, const kb::KnowledgeBase &KB);
/// The half format of the values a pointer (or reference) of type T designates.
std::optional<kb::Format> halfPointeeFormatOf(QualType T, const kb::KnowledgeBase &KB);
/// A half type as users write it: at::Half for c10::Half, __half, half2.
std::string displayName(QualType T, const ASTContext &Ctx);

/// The knowledge-base entry of Role that names the call's callee (qualified or as written).
const kb::KernelName *calleeRule(const CallExpr &Call, const std::string &Role,
                                 const kb::KnowledgeBase &KB);

/// E without what converts it on the way: implicit casts, parentheses, temporaries, conversion
/// operators (Half -> float), converting constructors (float -> Half) and explicit casts.
const Expr *throughConversions(const Expr *E);
/// The expression a conversion of E leads into, when E is converted to a half type right away
/// (`(__half)expf(x)`, `static_cast<scalar_t>(exp(x))`, `scalar_t e = exp(x)`), else null.
const Expr *halfConversionOf(const Expr &E, const kb::KnowledgeBase &KB, ASTContext &Ctx);

/// The function whose body holds S (a lambda's call operator for a lambda body).
const FunctionDecl *enclosingFunctionOf(const Stmt &S, ASTContext &Ctx);

/// Why a value of half type T at S computes in half: the instantiation of the enclosing
/// function or class, or the alias a dispatch macro declares, that binds the type, and where
/// it comes from; or the declared type. Value is FP16 or BF16 as Format says.
PrecisionReason halfReason(const Stmt &S, QualType T, kb::Format Format, ASTContext &Ctx);

/// The loops whose repetition repeats S while Var keeps its value: those around S that do not
/// also hold Var's declaration, innermost first.
std::vector<const Stmt *> loopsRepeating(const Stmt &S, const VarDecl &Var, ASTContext &Ctx);
/// The trip count of a loop with constant bounds (`for (int i = 0; i < 4; ++i)`, a range-for
/// over a fixed-size array).
std::optional<uint64_t> constantTripCount(const Stmt &Loop, ASTContext &Ctx);

} // namespace clang::tidy::mpnanny::kernel

#endif
