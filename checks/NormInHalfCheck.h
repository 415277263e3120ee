//===--- NormInHalfCheck.h - mpnanny -----------------------------*- C++ -*-===//
#ifndef MPNANNY_CHECKS_NORMINHALFCHECK_H
#define MPNANNY_CHECKS_NORMINHALFCHECK_H

#include "utils/OwnedOpCheck.h"
#include "llvm/ADT/DenseMap.h"
#include <vector>

namespace clang::tidy::mpnanny {

/// Flags normalization statistics computed in fp16: hand-written variances and RMS
/// (x.pow(2).mean(), x.square().mean(), (x*x).mean()), Tensor::var, and BatchNorm
/// modules of a model converted to half (running statistics in half).
///
/// For the user-facing documentation see: knowledge/mpnanny-norm-in-half.md
class NormInHalfCheck : public OwnedOpCheck {
public:
  using OwnedOpCheck::OwnedOpCheck;
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
  void onStartOfTranslationUnit() override;
  void onEndOfTranslationUnit() override;

private:
  void checkStatistic(const CallExpr &Mean, ASTContext &Ctx);
  void checkConversion(const CXXMemberCallExpr &To, ASTContext &Ctx);
  bool isMemberOfConvertedModel(const TorchCall &Call, ASTContext &Ctx) const;

  // Norm-module members and model conversions, matched in any order and paired up at
  // the end of the translation unit.
  ASTContext *Context = nullptr;
  std::vector<std::pair<const FieldDecl *, const kb::Op *>> NormMembers;
};

} // namespace clang::tidy::mpnanny

#endif
