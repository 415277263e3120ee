//===--- ValueFlow.h - mpnanny -----------------------------------*- C++ -*-===//
//
// Where a value comes from, within a translation unit. Real code rarely writes the constant
// at the op: `float eps = 1e-8;` two lines up, `void norm(Tensor x, double eps = 1e-12)`,
// `eps_(1e-8)` in a constructor, `attend(q, k, /*fill=*/-1e9)` at a call site. ValueFlow
// follows a scalar through
//   - a local that is never changed after its initializer,
//   - a parameter, to every call of its function in the unit and its default argument,
//   - a member, to its in-class initializer and every constructor's initializer (themselves
//     followed to the constructor's parameters), when nothing else assigns it,
// and says, for each constant found, the way it came.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_UTILS_VALUEFLOW_H
#define MPNANNY_CHECKS_UTILS_VALUEFLOW_H

#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::mpnanny {

/// A constant a scalar may hold, with the way it came ("" when written where it is used).
struct FlowValue {
  double Value = 0;
  std::string Via;
};

/// The constants a scalar may hold. Complete when every way in was followed to a constant;
/// otherwise other values are possible too.
struct FlowValues {
  std::vector<FlowValue> Values;
  bool Complete = false;
};

/// Calls Written with every declaration the statement may write: the left side of an
/// assignment, an increment, an address taken, the object of an in-place op (LibTorch's
/// in-place ops end in '_' and are const methods in TensorBody.h; left out when InPlaceOps
/// is false, for questions about a tensor's dtype, which they keep) or of a non-const
/// method, an argument bound to a non-const reference, and a variable a lambda captures by
/// reference.
void forEachWrite(const Stmt *Root, const std::function<void(const ValueDecl *)> &Written,
                  bool InPlaceOps = true);

class ValueFlow {
public:
  /// The analysis of the translation unit that Ctx holds; built on first use.
  static const ValueFlow &get(ASTContext &Ctx);
  /// Forgets the cached analyses; called when a new translation unit starts.
  static void reset();

  explicit ValueFlow(ASTContext &Ctx);
  ~ValueFlow();

  /// The constants E may hold (see the file comment).
  FlowValues valuesOf(const Expr *E) const;
  /// The one constant every way gives E, when there is one.
  std::optional<FlowValue> constantOf(const Expr *E) const;

  /// The unit's calls and member writes, built on first use (ValueFlow.cpp).
  struct Index;

  /// A local's initializer when the local is never reassigned or changed in place in its
  /// function: the expression its uses stand for.
  const Expr *stableInitializer(const VarDecl *Var) const;
  bool isMutated(const VarDecl *Var) const;
  /// The value a local, a parameter or a member of `this` holds where Use reads it, when its
  /// function gives it that value in straight-line code: the last `x = value;` (or the
  /// declaration's initializer) in a block around Use, with nothing between that may write it and
  /// no loop around Use that writes it. `logvar_ = torch::clamp(logvar_, -30, 20);` followed by
  /// `torch::exp(logvar_)` reads the clamped value. InPlaceOps false leaves in-place ops
  /// (`x.masked_fill_(...)`) out of "may write", for questions about the dtype, which they
  /// keep. Null when not known.
  const Expr *reachingValue(const Expr *Use, bool InPlaceOps = true) const;
  /// Every value a local is given in its function, wherever the function gives it: its
  /// initializer (not a default construction) and each `Var = value;`, for questions whose
  /// answer holds when it holds for each (a tensor's dtype under if/else branches that assign
  /// it). Compound assignments and, when InPlaceOps is false, in-place ops are left out;
  /// nullopt when the function may change it another way (a non-const reference, its address,
  /// a by-reference capture).
  std::optional<std::vector<const Expr *>> valuesGivenTo(const VarDecl &Var, bool InPlaceOps) const;
  /// The calls (and constructions) of F in this unit's user code.
  const std::vector<const Expr *> &callsOf(const FunctionDecl &F) const;
  /// What every call of Param's function in this unit passes for it; nullopt when the unit
  /// has no call or a call leaves it to the default (the callers elsewhere are not seen). With
  /// DefaultsToo, a call that leaves it out passes the default.
  std::optional<std::vector<const Expr *>> argumentsPassedFor(const ParmVarDecl &Param,
                                                              bool DefaultsToo = false) const;
  /// Whether the unit assigns the member outside constructor initializers.
  bool isAssigned(const FieldDecl &Field) const;
  /// Every value this unit gives a member: its in-class initializer, constructors'
  /// initializers and assignments.
  std::vector<const Expr *> valuesAssignedTo(const FieldDecl &Field) const;

private:
  void valuesInto(const Expr *E, FlowValues &Out, const std::string &Via, int Depth) const;
  void parameterValues(const ParmVarDecl &Param, FlowValues &Out, const std::string &Via,
                       int Depth) const;
  void memberValues(const FieldDecl &Field, FlowValues &Out, const std::string &Via,
                    int Depth) const;
  void index() const;

  ASTContext &Ctx;
  std::unique_ptr<Index> Indexed;
};

} // namespace clang::tidy::mpnanny

#endif
