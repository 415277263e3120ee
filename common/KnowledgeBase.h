//===--- KnowledgeBase.h - mpnanny -------------------------------*- C++ -*-===//
//
// The YAML knowledge base in rules/: which ops are risky in which precision, how a
// user spells them, which ATen ops realize them at run time, and what to write instead.
// Shared by the checks (both doors) and the runtime, so it depends on yaml-cpp only.
// The schema is documented in rules/README.md.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_KNOWLEDGEBASE_H
#define MPNANNY_CHECKS_KNOWLEDGEBASE_H

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "Vocabulary.h"

namespace mpnanny::kb {

/// The precision a piece of code computes in, as the checks infer it.
using Precision = vocab::Precision;
/// The storage format an op actually computes in once autocast has been applied.
using Format = vocab::Format;
/// How bad a finding is.
using Severity = vocab::Severity;

/// Autocast's treatment of an op (aten/src/ATen/autocast_mode.cpp): per device and version.
enum class AutocastPolicy { Lower, FP32, FP32UnlessDtype, Promote, Banned, None };
using RiskKind = vocab::RiskKind;

/// The vocabulary's names (common/Vocabulary.cpp), under the name the checks call them by.
inline const char *toString(Precision P) { return vocab::name(P); }
inline const char *toString(Format F) { return vocab::name(F); }
inline const char *toString(Severity S) { return vocab::name(S); }
const char *toString(AutocastPolicy P);
inline const char *toString(RiskKind K) { return vocab::name(K); }
inline std::optional<Precision> parsePrecision(const std::string &Name) {
  return vocab::parse<Precision>(Name);
}

/// Where an entry was written, for messages that point back into the YAML.
struct Mark {
  std::string File;
  int Line = 0;
  int Column = 0;
};

struct Risk {
  std::vector<Format> Formats; ///< the computing formats in which the risk applies
  RiskKind Kind = RiskKind::Overflow;
  Severity Level = Severity::Warning;
  std::string Message; ///< may use {op} and {precision}
  std::string Fix;
  /// When not empty, the risk is real only where the op's result reaches one of these uses
  /// in its function (prefix-sum, log, divisor, threshold): fp16 probabilities are fine as
  /// attention weights and fatal in a top-p cumsum.
  std::vector<std::string> Uses;

  /// Whether the risk is a finding for a call computed in Computed (none: autocast bans the
  /// op there). A note-level risk is documentation, not a finding (a linter that warns about
  /// every bf16 sum gets switched off); a banned op's risk applies only where autocast bans it;
  /// any other risk where Computed is one of its formats.
  bool appliesIn(std::optional<Format> Computed) const;
};

/// An argument of an op that takes a literal the target format must hold.
struct ValueArg {
  unsigned Index = 0; ///< position after `self` (the method form's position)
  std::string Role;   ///< fill, bound, eps, scale
};

/// Output interval of an op whatever its input, and the name of a transfer
/// function the range analysis knows (exp, log, sqrt, ...).
struct RangeSpec {
  double Min = 0, Max = 0;
  bool MinOpen = false, MaxOpen = false;
};

struct Op {
  std::string Id;
  std::string Summary;
  std::vector<std::string> Functions;  ///< torch::X and at::X free functions
  std::vector<std::string> Methods;    ///< at::Tensor::X
  std::vector<std::string> Functional; ///< torch::nn::functional::X
  std::vector<std::string> Modules;    ///< torch::nn::X module classes
  bool HasSelf = true;                 ///< free-function form takes the tensor first
  std::vector<std::string> Aten;
  AutocastPolicy Autocast = AutocastPolicy::None;
  /// CPU autocast's treatment (LibTorch 2.x's AutocastCPU kernels): a shorter list, where
  /// softmax, exp, log, layer_norm and sum are not upcast (`autocast_cpu`, default none).
  AutocastPolicy AutocastCpu = AutocastPolicy::None;
  /// CUDA autocast's treatment in LibTorch 1.13, where it differs from `Autocast` (2.x).
  std::optional<AutocastPolicy> AutocastLegacy;
  std::vector<Risk> Risks;
  std::vector<ValueArg> ValueArgs;
  std::optional<RangeSpec> Range;
  std::string Transfer;
  std::string Check; ///< the check whose page explains it
  std::vector<std::string> References;
  Mark Where;
};

/// A numeric setting of an options class (`AdamOptions::eps`) whose value the
/// target format must hold.
struct OptionValue {
  std::string Id;
  std::string Class;  ///< unqualified class name, e.g. AdamOptions
  std::string Setter; ///< e.g. eps
  std::optional<double> Default;
  std::string Role;
  std::vector<std::string> References;
  Mark Where;
};

/// A name that kernel code uses (a type, an intrinsic, a library call, an enumerator) and the
/// role it plays there: which types compute in half, which intrinsics accumulate, exponentiate
/// or add atomically. The kernel checks look names up by role (rules/kernel-*.yaml).
struct KernelName {
  std::string Id;
  /// half-type, accumulate, subtract, multiply, exp, rsqrt, atomic-add, to-half, half-gemm,
  /// gemm-compute-type, half-compute-type
  std::string Role;
  std::vector<std::string> Names; ///< as written, or qualified (c10::Half)
  std::optional<Format> In;       ///< the format a half-type, to-half or compute type names
  std::optional<unsigned> Arg;    ///< gemm-compute-type: the compute type's argument position
  std::string Summary;
  std::vector<std::string> References;
  Mark Where;
};

/// A rule file that cannot be used: `what()` is `file:line:col: error: message`.
class LoadError : public std::runtime_error {
public:
  LoadError(Mark Where, const std::string &Message);
  const Mark &where() const { return Where; }

private:
  Mark Where;
};

/// `share/mpnanny/<Name>` of the installation the calling executable or library was loaded
/// from, found from that file's own path: an installation made with `cmake --install --prefix`,
/// or moved, finds its data where a build-time path would miss it. Empty where that folder does
/// not exist (in a build tree).
std::string installedDataDirectory(const std::string &Name);

class KnowledgeBase {
public:
  /// Reads every *.yaml / *.yml file of a directory, in name order. Throws LoadError.
  static std::shared_ptr<const KnowledgeBase> loadDirectory(const std::string &Dir);
  /// The same, but each directory is read once per process.
  static std::shared_ptr<const KnowledgeBase> cached(const std::string &Dir);
  /// The rules directory to use when none is given: $MPNANNY_RULES, then the share/mpnanny/rules
  /// of the installation this code runs from, then the source tree's rules/, then the configured
  /// install prefix's.
  static std::string defaultDirectory();

  const std::vector<Op> &ops() const { return Ops; }
  const std::vector<OptionValue> &optionValues() const { return Options; }
  const std::vector<KernelName> &kernelNames() const { return Kernel; }
  /// The kernel entry of Role that lists Name, if any.
  const KernelName *findKernelName(const std::string &Role, const std::string &Name) const;

  const Op *findFunction(const std::string &Name) const;
  const Op *findMethod(const std::string &Name) const;
  const Op *findFunctional(const std::string &Name) const;
  const Op *findModule(const std::string &Name) const;
  const Op *findById(const std::string &Id) const;
  const OptionValue *findOption(const std::string &Class, const std::string &Setter) const;
  /// Every ATen op name the knowledge base lists, for the runtime's observer.
  std::vector<std::string> atenOps() const;

private:
  void index();
  std::vector<Op> Ops;
  std::vector<OptionValue> Options;
  std::vector<KernelName> Kernel;
  std::map<std::string, size_t> ByFunction, ByMethod, ByFunctional, ByModule, ById;
};

bool isHalfFormat(Format F);
/// Autocast-fp16 or autocast-bf16: the op's own autocast policy decides its format.
bool isAutocast(Precision P);

} // namespace mpnanny::kb

#endif
