//===--- UnscaledSumCheck.cpp - mpnanny ------------------------------------===//
#include "UnscaledSumCheck.h"

#include "utils/ValueFlow.h"
#include "utils/ValueUses.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

/// The first node of type Node in E, outside the calls E makes (their arguments are other
/// values).
template <typename Node> static const Node *firstOutsideCalls(const Expr *E) {
  const Node *Found = nullptr;
  visitDescendants(E, [&](const Stmt *S) {
    if (Found)
      return false;
    Found = dyn_cast<Node>(S);
    return !Found && !isa<CallExpr>(S);
  });
  return Found;
}

/// How many dimensions a written list names: `{1, 2, 3}` at the call, or held by a local or a
/// parameter whose every known value is such a list (its default argument and what the unit's
/// calls pass). std::nullopt when any of them is not a list written out.
static std::optional<unsigned> listedDimensions(const Expr *E, ASTContext &Ctx, int Depth = 0) {
  if (!E || Depth > 4)
    return std::nullopt;
  if (const auto *List = firstOutsideCalls<InitListExpr>(E))
    return List->getNumInits();
  const auto *Ref = firstOutsideCalls<DeclRefExpr>(E);
  if (!Ref)
    return std::nullopt;
  const ValueFlow &Flow = ValueFlow::get(Ctx);
  if (const auto *Param = dyn_cast<ParmVarDecl>(Ref->getDecl())) {
    std::vector<const Expr *> Values;
    if (Param->hasDefaultArg() && !Param->hasUninstantiatedDefaultArg())
      Values.push_back(Param->getDefaultArg());
    if (auto Passed = Flow.argumentsPassedFor(*Param))
      Values.insert(Values.end(), Passed->begin(), Passed->end());
    std::optional<unsigned> Fewest;
    for (const Expr *V : Values) {
      auto N = listedDimensions(V, Ctx, Depth + 1);
      if (!N)
        return std::nullopt;
      Fewest = Fewest ? std::min(*Fewest, *N) : *N;
    }
    return Fewest;
  }
  if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl()))
    return listedDimensions(Flow.stableInitializer(Var), Ctx, Depth + 1);
  return std::nullopt;
}

/// A sum over three or more named dimensions (`sum(x, {1, 2, 3})`, a KL or NLL over C, H and
/// W) adds what a whole sample holds, thousands of terms at least, like a sum with no
/// dimension; one or two named dimensions of unknown size may be small.
static bool reducesAWholeSample(const TorchCall &Call, ASTContext &Ctx) {
  for (unsigned I = 0; I < Call.Args.size(); ++I)
    if (const ParmVarDecl *P = parameterOf(Call, I))
      if (P->getName() == "dim" || P->getName() == "dims") {
        auto N = listedDimensions(Call.Args[I], Ctx);
        return N && *N >= 3;
      }
  return false;
}

void UnscaledSumCheck::registerCheckMatchers(MatchFinder *Finder) {
  if (knowledgeBase())
    Finder->addMatcher(knowledgeBaseCall().bind("call"), this);
}

// Owned through the knowledge base (`check: mpnanny-unscaled-sum`): sum, nansum,
// cumsum, cumsum_. Without shapes, "large" is decided by the spelling: a sum with no
// dimension adds every element of the tensor, and a running sum stores every prefix;
// a sum over one or two named dimensions of unknown size is left alone.
void UnscaledSumCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  auto Found = ownedRisk(*Call, *Result.Context);
  if (!Found)
    return;
  bool Running = llvm::StringRef(Found->Call.Name).starts_with("cum");
  if (!Running && namesDimensions(Found->Call) &&
      !reducesAWholeSample(Found->Call, *Result.Context))
    return;
  // `x.sum().item<float>() == 0`: only the total's sign is read, and half keeps it.
  if (!Running && onlyComparedWithZero(*Call, *Result.Context))
    return;
  reportOwned(*Found, *Result.Context);
}

} // namespace clang::tidy::mpnanny
