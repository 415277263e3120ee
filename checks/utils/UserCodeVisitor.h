//===--- UserCodeVisitor.h - mpnanny -----------------------------*- C++ -*-===//
//
// A RecursiveASTVisitor over the user's code only. LibTorch and the standard library come in
// with -isystem and are most of a LibTorch translation unit; walking them would cost more than
// the checks and find nothing of the user's.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_UTILS_USERCODEVISITOR_H
#define MPNANNY_CHECKS_UTILS_USERCODEVISITOR_H

#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"

namespace clang::tidy::mpnanny {

template <typename Derived> class UserCodeVisitor : public RecursiveASTVisitor<Derived> {
public:
  explicit UserCodeVisitor(const SourceManager &SM) : SM(SM) {}
  bool TraverseDecl(Decl *D) {
    if (D && !isa<TranslationUnitDecl>(D) && D->getLocation().isValid() &&
        SM.isInSystemHeader(D->getLocation()))
      return true;
    return RecursiveASTVisitor<Derived>::TraverseDecl(D);
  }

protected:
  const SourceManager &SM;
};

} // namespace clang::tidy::mpnanny

#endif
