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
#include "Vocabulary.h"
#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"
#include "kernel/KernelConstantRangeCheck.h"
#include "kernel/KernelHalfAccumulatorCheck.h"
#include "kernel/KernelHalfAtomicCheck.h"
#include "kernel/KernelHalfOverflowCheck.h"

namespace clang::tidy::mpnanny {

namespace vocab = ::mpnanny::vocab;

class MpnannyModule : public ClangTidyModule {
public:
  // Each check under its name in the vocabulary (common/), which the tools share.
  void addCheckFactories(ClangTidyCheckFactories &Factories) override {
    using vocab::Check;
    Factories.registerCheck<AutocastCacheCheck>(vocab::name(Check::AutocastCache));
    Factories.registerCheck<ClipBeforeUnscaleCheck>(vocab::name(Check::ClipBeforeUnscale));
    Factories.registerCheck<Fp16ConstantRangeCheck>(vocab::name(Check::Fp16ConstantRange));
    Factories.registerCheck<GradScalerConfigCheck>(vocab::name(Check::GradScalerConfig));
    Factories.registerCheck<KernelConstantRangeCheck>(vocab::name(Check::KernelConstantRange));
    Factories.registerCheck<KernelHalfAccumulatorCheck>(vocab::name(Check::KernelHalfAccumulator));
    Factories.registerCheck<KernelHalfAtomicCheck>(vocab::name(Check::KernelHalfAtomic));
    Factories.registerCheck<KernelHalfOverflowCheck>(vocab::name(Check::KernelHalfOverflow));
    Factories.registerCheck<LogSoftmaxCheck>(vocab::name(Check::LogSoftmax));
    Factories.registerCheck<LossInHalfCheck>(vocab::name(Check::LossInHalf));
    Factories.registerCheck<MasterWeightsCheck>(vocab::name(Check::MasterWeights));
    Factories.registerCheck<MissingGradScalerCheck>(vocab::name(Check::MissingGradScaler));
    Factories.registerCheck<NaiveSoftmaxCheck>(vocab::name(Check::NaiveSoftmax));
    Factories.registerCheck<NormInHalfCheck>(vocab::name(Check::NormInHalf));
    Factories.registerCheck<RiskyOpCheck>(vocab::name(Check::RiskyOp));
    Factories.registerCheck<SoftmaxDtypeCheck>(vocab::name(Check::SoftmaxDtype));
    Factories.registerCheck<UnsafeMathCheck>(vocab::name(Check::UnsafeMath));
    Factories.registerCheck<UnscaledSumCheck>(vocab::name(Check::UnscaledSum));
  }
};

static ClangTidyModuleRegistry::Add<MpnannyModule>
    X("mpnanny-module", "Mixed-precision (fp16/bf16) hazards in LibTorch code.");

} // namespace clang::tidy::mpnanny

// Referenced by mpnanny-check so that the static registration above is linked in.
volatile int MpnannyModuleAnchorSource = 0;
