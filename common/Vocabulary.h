//===--- Vocabulary.h - mpnanny ----------------------------------*- C++ -*-===//
//
// The words every layer shares: precisions, alert types, verdicts, severities and check
// names. Each is an enum here and its names are spelled once, in Vocabulary.cpp; the runtime
// stores them, the tools sort, colour and validate by them, and test/vocabulary fails the build
// when a name is spelled anywhere else. No LLVM, no LibTorch: every target links it.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_COMMON_VOCABULARY_H
#define MPNANNY_COMMON_VOCABULARY_H

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpnanny::vocab {

/// The precision a piece of code computes in, as the checks infer it or a user forces it.
enum class Precision { FP32, FP16, BF16, AutocastFP16, AutocastBF16 };

/// The storage format an op computes in once autocast has been applied.
enum class Format { FP32, FP16, BF16 };

/// The half format a run is judged against: fp32 tensors on the CPU are checked for what would
/// go wrong if the same values lived in it. Its names are the formats' (fp16, bf16).
enum class HalfFormat { FP16, BF16 };

/// What the runtime raises; one knowledge page each (knowledge/alert-<NAME>.md).
enum class AlertType {
  Nan,
  Inf,
  Overflow,
  OverflowRisk,
  Underflow,
  GradExplosion,
  GradVanish,
  Swamping,
  LossScaleDrop,
  LossScaleCollapse,
  LossScaleDiverged,
};

/// How bad a runtime alert is (stored in metrics.db as INFO, WARNING, ERROR).
enum class AlertSeverity { Info, Warning, Error };

/// How bad a static finding is: clang's diagnostic levels (note, warning, error), which SARIF's
/// result levels share.
enum class Severity { Note, Warning, Error };

/// What a MPNANNY_VERIFY=1 run concluded about a static finding. Declared most urgent first:
/// that is the order the tools list verdicts in.
enum class Verdict { Confirmed, AtRisk, NotObserved, NotReached };

/// What a static finding risks: the knowledge base's `kind:` of a risk, and the "risk" of a site
/// that MPNANNY_VERIFY=1 confirms or clears.
enum class RiskKind { Overflow, Underflow, PrecisionLoss, Domain, Banned };

/// The worst value a gradient held, mildest first: each rank of a process group reports its worst
/// before the all-reduce, and the tools name the rank where it started.
enum class BadValue { Overflow, Inf, Nan };

/// The checks, in the order clang-tidy lists them (by name).
enum class Check {
  AutocastCache,
  ClipBeforeUnscale,
  Fp16ConstantRange,
  GradScalerConfig,
  KernelConstantRange,
  KernelHalfAccumulator,
  KernelHalfAtomic,
  KernelHalfOverflow,
  LogSoftmax,
  LossInHalf,
  MasterWeights,
  MissingGradScaler,
  NaiveSoftmax,
  NormInHalf,
  RiskyOp,
  SoftmaxDtype,
  UnsafeMath,
  UnscaledSum,
};

/// Every value of a vocabulary enum, in its declared order.
template <typename Enum> const std::vector<Enum> &all();

/// The name a value is stored, printed and matched by ("fp16", "OVERFLOW_RISK", "CONFIRMED",
/// "warning", "mpnanny-log-softmax", "precision-loss", "nan").
const char *name(Precision P);
const char *name(Format F);
const char *name(HalfFormat F);
const char *name(AlertType T);
const char *name(AlertSeverity S);
const char *name(Severity S);
const char *name(Verdict V);
const char *name(Check C);
const char *name(RiskKind K);
const char *name(BadValue B);

/// The value a name spells exactly, if any.
template <typename Enum> std::optional<Enum> parse(std::string_view Name);
/// The same, in any letter case: the CLI and the MCP server take "overflow" for OVERFLOW.
template <typename Enum> std::optional<Enum> parseAnyCase(std::string_view Name);
/// Every name of an enum, in its order, joined: "NAN, INF, ..." for messages that list them.
template <typename Enum> std::string joinedNames(std::string_view Separator = ", ");
/// Every name of an enum, in its order: JSON schema enums and command-line choices.
template <typename Enum> std::vector<std::string> names();
/// Names as a message lists choices: "a, b or c".
std::string choices(const std::vector<std::string> &Names);

/// A name upper-cased, as the CLI shows precisions ("FP16").
std::string upperCase(std::string_view Name);

/// A check's name without the module prefix ("log-softmax"), and the prefix itself.
std::string_view checkPrefix();

/// The knowledge page a check or an alert type is explained on (knowledge/<page>.md).
std::string pageName(Check C);
std::string pageName(AlertType T);
/// The prefix of the alert pages' names ("alert-").
std::string_view alertPagePrefix();

} // namespace mpnanny::vocab

#endif
