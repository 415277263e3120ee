//===--- OwnedOpCheck.h - mpnanny --------------------------------*- C++ -*-===//
//
// A check that reports the knowledge-base ops whose `check:` names it (softmax for
// mpnanny-softmax-dtype, sum for mpnanny-unscaled-sum, ...), so that every such call
// is reported by exactly one check. mpnanny-risky-op reports only the ops left to it.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_OWNEDOPCHECK_H
#define MPNANNY_CHECKS_OWNEDOPCHECK_H

#include "MpnannyCheck.h"
#include "TorchCalls.h"
#include "ValueUses.h"

namespace clang::tidy::mpnanny {

class OwnedOpCheck : public MpnannyCheck {
public:
  OwnedOpCheck(StringRef Name, ClangTidyContext *Context)
      : MpnannyCheck(Name, Context), Owner(Name.str()) {}

protected:
  /// A call of an op this check owns, whose knowledge-base risk applies where it runs.
  struct OwnedCall {
    TorchCall Call;
    const kb::Op *Op = nullptr;
    const kb::Risk *Risk = nullptr;
    std::optional<kb::Format> Format; ///< std::nullopt: autocast refuses the op
    PrecisionReason Why;
    /// The use that makes the risk real, for a risk that names its `uses:`.
    std::optional<ValueUse> Use;
  };
  /// std::nullopt unless the call's data is half (precision context, known format, no
  /// fp32 dtype or upcast), the op is owned here, and a warning-level risk applies.
  /// Note-level risks are documentation, as in mpnanny-risky-op.
  std::optional<OwnedCall> ownedRisk(const CallExpr &Call, ASTContext &Ctx) const;
  /// The warning with the rule's message and the fix in a note.
  void reportOwned(const OwnedCall &Found, ASTContext &Ctx);

  std::string Owner;
};

} // namespace clang::tidy::mpnanny

#endif
