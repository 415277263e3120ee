//===--- MpnannyTidyModule.cpp - mpnanny -----------------------------------===//
#include "AutocastCacheCheck.h"
#include "ClipBeforeUnscaleCheck.h"
#include "Fp16ConstantRangeCheck.h"
#include "GradScalerConfigCheck.h"
#include "LogSoftmaxCheck.h"
#include "LossInHalfCheck.h"
#include "MasterWeightsCheck.h"
#include "MissingGradScalerCheck.h"
#include "NaiveSoftmaxCheck.h"
#include "NormInHalfCheck.h"
#include "RiskyOpCheck.h"
#include "SoftmaxDtypeCheck.h"
#include "UnsafeMathCheck.h"
#include "UnscaledSumCheck.h"
#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"

namespace clang::tidy::mpnanny {

class MpnannyModule : public ClangTidyModule {
public:
  void addCheckFactories(ClangTidyCheckFactories &Factories) override {
    Factories.registerCheck<AutocastCacheCheck>("mpnanny-autocast-cache");
    Factories.registerCheck<ClipBeforeUnscaleCheck>("mpnanny-clip-before-unscale");
    Factories.registerCheck<Fp16ConstantRangeCheck>("mpnanny-fp16-constant-range");
    Factories.registerCheck<GradScalerConfigCheck>("mpnanny-grad-scaler-config");
    Factories.registerCheck<LogSoftmaxCheck>("mpnanny-log-softmax");
    Factories.registerCheck<LossInHalfCheck>("mpnanny-loss-in-half");
    Factories.registerCheck<MasterWeightsCheck>("mpnanny-master-weights");
    Factories.registerCheck<MissingGradScalerCheck>("mpnanny-missing-grad-scaler");
    Factories.registerCheck<NaiveSoftmaxCheck>("mpnanny-naive-softmax");
    Factories.registerCheck<NormInHalfCheck>("mpnanny-norm-in-half");
    Factories.registerCheck<RiskyOpCheck>("mpnanny-risky-op");
    Factories.registerCheck<SoftmaxDtypeCheck>("mpnanny-softmax-dtype");
    Factories.registerCheck<UnsafeMathCheck>("mpnanny-unsafe-math");
    Factories.registerCheck<UnscaledSumCheck>("mpnanny-unscaled-sum");
  }
};

static ClangTidyModuleRegistry::Add<MpnannyModule>
    X("mpnanny-module", "Mixed-precision (fp16/bf16) hazards in LibTorch code.");

} // namespace clang::tidy::mpnanny

// Referenced by mpnanny-check so that the static registration above is linked in.
volatile int MpnannyModuleAnchorSource = 0;
