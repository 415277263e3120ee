//===--- KernelCheck.cpp - mpnanny -----------------------------------------===//
#include "KernelCheck.h"

#include "clang/Basic/SourceManager.h"

namespace clang::tidy::mpnanny::kernel {

void KernelCheck::onStartOfTranslationUnit() {
  MpnannyCheck::onStartOfTranslationUnit();
  Reported.clear();
}

std::optional<kb::Format> KernelCheck::halfFormat(QualType T) const {
  return knowledgeBase() ? halfFormatOf(T, *knowledgeBase()) : std::nullopt;
}

const kb::KernelName *KernelCheck::rule(const CallExpr &Call, const std::string &Role) const {
  return knowledgeBase() ? calleeRule(Call, Role, *knowledgeBase()) : nullptr;
}

void KernelCheck::reportOnce(ASTContext &Ctx, const Stmt &Node, SourceLocation Loc,
                             kb::Format Format, kb::RiskKind Risk, QualType HalfType,
                             llvm::StringRef Message, llvm::StringRef Fix,
                             std::optional<FixItHint> Exact) {
  reportOnce(Ctx, Node, Loc, Format, Risk, halfReason(Node, HalfType, Format, Ctx), Message, Fix,
             std::move(Exact));
}

void KernelCheck::reportOnce(ASTContext &Ctx, const Stmt &Node, SourceLocation Loc,
                             kb::Format Format, kb::RiskKind Risk, const PrecisionReason &Why,
                             llvm::StringRef Message, llvm::StringRef Fix,
                             std::optional<FixItHint> Exact) {
  const SourceManager &SM = Ctx.getSourceManager();
  // Code in a dispatch macro's lambda argument is expanded once per case: its place is where
  // it is written.
  SourceLocation Written = SM.getFileLoc(Loc);
  if (!Reported.insert(SM.getDecomposedLoc(Written)).second)
    return;
  Subject About{&Node, nullptr, Risk, kb::Severity::Warning, kb::toString(Format)};
  report(Ctx, About, Written, Message, Fix, Why, std::move(Exact));
}

unsigned lastExactInteger(kb::Format Format) { return Format == kb::Format::BF16 ? 256 : 2048; }

} // namespace clang::tidy::mpnanny::kernel
