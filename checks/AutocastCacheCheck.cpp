//===--- AutocastCacheCheck.cpp - mpnanny ----------------------------------===//
#include "AutocastCacheCheck.h"

#include "utils/TorchCalls.h"
#include "utils/TrainingStep.h"
#include "utils/ValueFlow.h"
#include "clang/AST/ParentMapContext.h"

using namespace clang::ast_matchers;

namespace clang::tidy::mpnanny {

void AutocastCacheCheck::registerCheckMatchers(MatchFinder *Finder) {
  Finder->addMatcher(callExpr(unless(isExpansionInSystemHeader())).bind("call"), this);
}

static bool isAutocastSwitch(const CallExpr &Call) {
  const FunctionDecl *Callee = Call.getDirectCallee();
  return Callee &&
         llvm::StringRef(Callee->getQualifiedNameAsString()).starts_with("at::autocast::");
}

/// The first call under autocast in S, other than the autocast switches themselves:
/// a forward that fills the cache.
static const CallExpr *autocastForward(const Stmt *S, const PrecisionContext &Context,
                                       const SourceManager &SM, unsigned From, unsigned To) {
  const CallExpr *Found = nullptr;
  visitDescendants(S, [&](const Stmt *X) {
    if (Found)
      return false;
    if (const auto *Call = dyn_cast<CallExpr>(X)) {
      unsigned At = orderOf(*X, SM);
      if (At >= From && At < To && !isAutocastSwitch(*Call) && kb::isAutocast(Context.at(*X).Value))
        Found = Call;
    }
    return !Found;
  });
  return Found;
}

/// Autocast caches casts of fp32 leaves only (autocast_mode.cpp, can_try_cache): an
/// optimizer over half or bf16 parameters updates weights that were never cached.
static bool updatesUncachedWeights(const CallExpr &Update, const PrecisionContext &Context,
                                   ASTContext &Ctx) {
  const auto *Member = dyn_cast<CXXMemberCallExpr>(&Update);
  if (!isOptimizerStep(Update) || !Member)
    return false;
  const Expr *Optimizer = scalerMethod(Update) && Update.getNumArgs() >= 1
                              ? Update.getArg(0)
                              : Member->getImplicitObjectArgument();
  return optimizerParameterFormat(Optimizer, Context, Ctx).has_value();
}

/// "torch::optim::Adam::step", "Tensor::sub_": what a weight update calls, for messages.
static std::string updateName(const CallExpr &Update) {
  const auto *Member = dyn_cast<CXXMemberCallExpr>(&Update);
  if (!Member)
    return "the optimizer's step";
  QualType T = Member->getImplicitObjectArgument()->IgnoreParenImpCasts()->getType();
  if (T->isPointerType())
    T = T->getPointeeType();
  if (auto TC = classifyTorchCall(Update); TC && !isOptimizerStep(Update))
    return TC->spelled();
  if (const auto *RD = T->getAsCXXRecordDecl())
    return RD->getQualifiedNameAsString() + "::step";
  return "the optimizer's step";
}

void AutocastCacheCheck::onStartOfTranslationUnit() {
  MpnannyCheck::onStartOfTranslationUnit();
  CacheDisabled.reset();
  WeightUpdate.reset();
  Reported.clear();
}

bool AutocastCacheCheck::calledInUnclearedLoop(const FunctionDecl &F, ASTContext &Ctx) {
  for (const Expr *Site : ValueFlow::get(Ctx).callsOf(F))
    if (const Stmt *Loop = trainingLoopAround(*Site, Ctx); Loop && !clearsAutocastCache(*Loop))
      return true;
  return false;
}

bool AutocastCacheCheck::cacheDisabled(ASTContext &Ctx) {
  // With the cache switched off, nothing is stale.
  if (!CacheDisabled)
    CacheDisabled = autocastCacheDisabled(Ctx);
  return *CacheDisabled;
}

// A scope guard or a binding's "autocast off" command that only flips the switch: the cache
// outlives it, and the weights the unit updates afterwards are reused stale by the next
// forward under autocast. Claimed only where nothing in sight ever clears the cache.
void AutocastCacheCheck::checkSwitchOff(const CallExpr &Off, ASTContext &Ctx) {
  const PrecisionContext &Context = precisionContext(Ctx);
  const FunctionDecl *F = Context.enclosingFunction(Off);
  if (!F || !F->getBody() || clearsAutocastCache(*F->getBody()) || cacheDisabled(Ctx) ||
      Context.projectClearsAutocastCache())
    return;
  if (!WeightUpdate)
    WeightUpdate = firstWeightUpdate(Ctx);
  const CallExpr *Update = *WeightUpdate;
  if (!Update || updatesUncachedWeights(*Update, Context, Ctx))
    return;
  std::optional<PrecisionReason> Why = Context.autocastBefore(Off);
  if (!Why)
    return;
  std::string Switch = Off.getDirectCallee()->getQualifiedNameAsString();
  unsigned UpdateLine = Ctx.getSourceManager().getExpansionLineNumber(Update->getExprLoc());
  Subject About{&Off, nullptr, kb::RiskKind::PrecisionLoss, kb::Severity::Warning,
                kb::toString(Why->Value)};
  report(Ctx, About, Off.getExprLoc(),
         Switch + " turns autocast off but keeps its " + kb::toString(Why->Value) +
             " weight cache, and nothing in " +
             (Context.seesWholeProject() ? "the project" : "this unit") + " clears it: after " +
             updateName(*Update) + " (line " + std::to_string(UpdateLine) +
             ") changes the weights, the next forward under autocast reuses the half copies "
             "cast before it (the cache is keyed by the weight's TensorImpl with no version "
             "check); Python's autocast exit clears the cache, this switch does not",
         "call at::autocast::clear_cache() when switching autocast off, as PyTorch's autocast "
         "exit does",
         *Why);
}

void AutocastCacheCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call");
  ASTContext &Ctx = *Result.Context;
  // A switch that turns autocast off, not a restore of a state saved before.
  if (auto Toggle = precisionContext(Ctx).toggleAt(*Call);
      Toggle && !Toggle->On && !Toggle->Restore)
    return checkSwitchOff(*Call, Ctx);
  bool Step = isOptimizerStep(*Call);
  if (!Step && !isInPlaceWeightUpdate(*Call, Ctx))
    return;
  const PrecisionContext &Context = precisionContext(Ctx);
  const FunctionDecl *F = Context.enclosingFunction(*Call);
  if (!F || !F->getBody())
    return;
  const SourceManager &SM = Ctx.getSourceManager();
  if (cacheDisabled(Ctx) || updatesUncachedWeights(*Call, Context, Ctx))
    return;

  // A step that runs under autocast in a project of which every unit was read, and nothing in
  // it ever clears the cache: whichever forward comes next reuses the casts made before this
  // step, even when that forward lives in another function or file than the step.
  bool StaleForTheWholeProject = Step && Context.seesWholeProject() &&
                                 kb::isAutocast(Context.at(*Call).Value) &&
                                 !Context.projectClearsAutocastCache();
  unsigned StepAt = orderOf(*Call, SM);
  const Stmt *Loop = trainingLoopAround(*Call, Ctx);
  const CallExpr *Forward = nullptr;
  if (Loop) {
    if (Reported.count(Loop))
      return;
    Forward = autocastForward(Loop, Context, SM, 0, ~0u);
    if ((!Forward && !StaleForTheWholeProject) || clearsAutocastCache(*Loop))
      return;
    Reported.insert(Loop);
  } else if (const CallExpr *Before = autocastForward(F->getBody(), Context, SM, 0, StepAt);
             !Before) {
    if (!StaleForTheWholeProject)
      return;
  } else {
    // Straight-line code: a forward under autocast before the update and another
    // after it, with no clear in between.
    Forward = autocastForward(F->getBody(), Context, SM, StepAt + 1, ~0u);
    if (!Forward) {
      // A step function called from a training loop: each call runs the forward,
      // then the step, and the next call's forward reuses the cache.
      if (clearsAutocastCache(*F->getBody()) ||
          (!StaleForTheWholeProject && !calledInUnclearedLoop(*F, Ctx)))
        return;
      Forward = Before;
    } else {
      unsigned ForwardAt = orderOf(*Forward, SM);
      bool Cleared = false;
      visitDescendants(F->getBody(), [&](const Stmt *S) {
        unsigned At = orderOf(*S, SM);
        unsigned End = SM.getFileOffset(SM.getExpansionLoc(S->getEndLoc()));
        if (Cleared || End < StepAt)
          return false;
        if (At > StepAt && End < ForwardAt && clearsAutocastCache(*S))
          Cleared = true;
        return !Cleared;
      });
      if (Cleared)
        return;
    }
  }

  PrecisionReason Why = Context.at(Forward ? static_cast<const Stmt &>(*Forward) : *Call);
  // Autocast switched on in another file (or declared for the project): the loop that drives
  // it is not seen here, so "nothing clears the cache" holds only if nothing in the project
  // does.
  if ((Why.Elsewhere.valid() || Why.Where.isInvalid()) && Context.projectClearsAutocastCache())
    return;
  std::string What = updateName(*Call);
  Subject About{Call, nullptr, kb::RiskKind::PrecisionLoss, kb::Severity::Warning,
                kb::toString(Why.Value)};
  report(Ctx, About, Call->getExprLoc(),
         What + " updates the weights while the " + kb::toString(Why.Value) +
             " weight cache survives: the cache is keyed by the weight's TensorImpl with no "
             "version check and nothing clears it before the next forward (set_enabled(false) "
             "does not clear it in C++), so the forward reuses stale half weights and the loss "
             "stays flat",
         "call at::autocast::clear_cache() after the step in every iteration (or leave autocast "
         "with set_enabled(false) followed by clear_cache(), as PyTorch's autocast exit does)",
         Why);
}

} // namespace clang::tidy::mpnanny
