//===--- TorchCalls.h - mpnanny ----------------------------------*- C++ -*-===//
//
// Recognizes LibTorch calls however the user spells them (torch::softmax,
// at::softmax, x.softmax, torch::nn::functional::softmax, a torch::nn::Softmax
// module), and the dtype names and literals they are passed. One place for the
// knowledge of LibTorch's spellings, used by every check.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_TORCHCALLS_H
#define MPNANNY_CHECKS_TORCHCALLS_H

#include "KnowledgeBase.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/SmallVector.h"
#include <functional>
#include <optional>
#include <string>

namespace clang {
class ASTContext;
namespace tidy::mpnanny {

namespace kb = ::mpnanny::kb;
namespace vocab = ::mpnanny::vocab;

enum class Spelling { Function, Method, Functional, Module };

struct TorchCall {
  const CallExpr *Call = nullptr;
  const FunctionDecl *Callee = nullptr;
  std::string Name; ///< unqualified name; for a module, the class without "Impl"
  Spelling Kind = Spelling::Function;
  const Expr *Self = nullptr; ///< the tensor operated on, when there is one
  /// Arguments after `self`, as written (default arguments dropped).
  llvm::SmallVector<const Expr *, 4> Args;

  /// How the user wrote it, for messages: torch::softmax, Tensor::softmax, ...
  std::string spelled() const;
  /// The tensor the op computes on: self, or in a call with a scalar first
  /// (`torch::pow(2, m)`) the first tensor argument.
  const Expr *operand() const;
};

/// std::nullopt when the call is not a LibTorch op call.
std::optional<TorchCall> classifyTorchCall(const CallExpr &Call);
/// The knowledge-base entry for the call's spelling, if any.
const kb::Op *lookupOp(const TorchCall &Call, const kb::KnowledgeBase &KB);
/// The op's argument that the knowledge base's value-argument index names.
const Expr *valueArgument(const TorchCall &Call, const kb::Op &Op, unsigned Index);

/// The format a dtype name stands for: kHalf, torch::kFloat16, at::ScalarType::BFloat16...
std::optional<kb::Format> formatOfDtypeName(const NamedDecl &D);
/// The first dtype named anywhere inside E (e.g. in `dtype(torch::kFloat)` options).
std::optional<kb::Format> dtypeNamedIn(const Stmt *E);
/// The lowest-precision dtype an expression may stand for, following local
/// variables to their initializers: `cuda ? torch::kHalf : torch::kFloat` may be fp16.
std::optional<kb::Format> lowestDtypeIn(const Stmt *E);
/// The dtype the call requests explicitly through one of its arguments.
std::optional<kb::Format> explicitDtype(const TorchCall &Call);

/// The tensor whose dtype a call copies instead of naming one: `probs.to(logits.dtype())`,
/// `.to(logits.scalar_type())`, `torch::zeros(n, logits.options())` (also through a local
/// holding those options), and for to() and type_as() a tensor argument, `.to(logits)`. Null
/// where the call copies none.
const Expr *dtypeDonor(const TorchCall &Call);

/// True for an op whose dtype argument names the type it computes and returns in
/// (softmax(x, dim, kHalf), x.sum(kFloat)): that dtype is the op's, not its function's data.
bool dtypeIsTheResultsOnly(const TorchCall &Call);

/// The LibTorch parameter a written argument (one of Call.Args) binds to, when the callee is
/// known: ATen's parameter names (`dim`, `index`, `min`) say what an argument means in
/// every overload, where its position does not.
const ParmVarDecl *parameterOf(const TorchCall &Call, unsigned ArgIndex);

/// True when the call reduces over dimensions it names (`x.sum(-1)`, `x.norm(2, dim)`,
/// `torch::sum(x, {0, 1})`), that is, when a written argument binds to ATen's `dim`
/// parameter; false for a reduction over every element (`x.sum()`, `x.norm()`).
bool namesDimensions(const TorchCall &Call);

/// True for a factory (torch::full, zeros, ones, empty, randn, ...) called without
/// TensorOptions or a dtype: its tensor has LibTorch's default dtype, fp32, whatever
/// precision the code around it computes in.
bool isDefaultDtypeFactory(const TorchCall &Call);

/// The value of a numeric literal argument, seeing through Scalar conversions,
/// unary minus and constant expressions.
std::optional<double> evaluateNumber(const Expr *E, const ASTContext &Ctx);

/// The class of the object a member call is made on, through pointers and the
/// derived-to-base cast (`net->to(...)` is made on NetImpl, not torch::nn::Module).
const CXXRecordDecl *objectRecordOf(const CXXMemberCallExpr &Call);

/// The local, parameter, member or global an expression names (`x`, `this->x_`, `cfg.dtype`).
const ValueDecl *namedValue(const Expr *E);

/// True for at::Tensor (and references to it), the type every op works on.
bool isTensorType(QualType T);
/// TensorOptions, ScalarType or TypeMeta: a value that can name a dtype.
bool isOptionsOrDtype(QualType T);
/// Whether a value of type T can hold or reach LibTorch state (a tensor, a module, an
/// optimizer, a dtype): a type of torch, at or c10, one derived from one, a template over
/// one, a pointer to one, or a class of the project with such a member. A type the compiler
/// could not work out (dependent, or an incomplete class outside std) may.
bool mayCarryTorchState(QualType T);
/// A declaration of LibTorch: in namespace torch, at or c10 (or one nested in them).
bool isLibTorchDecl(const Decl &D);

/// Strips the implicit nodes that LibTorch's conversions add around an argument.
const Expr *ignoreConversions(const Expr *E);

/// Calls Fn on S and every statement below it; Fn returns false to prune.
void visitDescendants(const Stmt *S, const std::function<bool(const Stmt *)> &Fn);

/// The first node of type Node in E, outside the calls E makes (their arguments are other
/// values).
template <typename Node> const Node *firstOutsideCalls(const Expr *E) {
  const Node *Found = nullptr;
  visitDescendants(E, [&](const Stmt *S) {
    if (Found)
      return false;
    Found = dyn_cast<Node>(S);
    return !Found && !isa<CallExpr>(S);
  });
  return Found;
}

} // namespace tidy::mpnanny
} // namespace clang

#endif
