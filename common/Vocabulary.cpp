//===--- Vocabulary.cpp - mpnanny ------------------------------------------===//
//
// The one file that spells the shared names (test/vocabulary checks that no other source
// does). Each table lists an enum's values in their declared order.
//
//===----------------------------------------------------------------------===//
#include "Vocabulary.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <utility>

namespace mpnanny::vocab {

namespace {

template <typename Enum> using Table = std::vector<std::pair<Enum, const char *>>;

// Built once and never destroyed. The runtime's exit handlers (watch()'s nanny, the verification
// session) name risks and verdicts after exit() has begun destroying statics, and a table first
// built after a handler was registered is destroyed before that handler runs (LibTorch 2.6's
// examples crashed there, in parse<RiskKind>, when the verification session closed).
template <typename Enum>
const Table<Enum> &kept(std::initializer_list<typename Table<Enum>::value_type> Entries) {
  return *new Table<Enum>(Entries);
}

template <typename Enum> const Table<Enum> &table();

template <> const Table<Precision> &table() {
  static const Table<Precision> &Names =
      kept<Precision>({{Precision::FP32, "fp32"},
                       {Precision::FP16, "fp16"},
                       {Precision::BF16, "bf16"},
                       {Precision::AutocastFP16, "autocast-fp16"},
                       {Precision::AutocastBF16, "autocast-bf16"}});
  return Names;
}

// A format is named as the precision that computes in it, and a half format as its format.
template <> const Table<Format> &table() {
  static const Table<Format> &Names = kept<Format>({{Format::FP32, name(Precision::FP32)},
                                                    {Format::FP16, name(Precision::FP16)},
                                                    {Format::BF16, name(Precision::BF16)}});
  return Names;
}

template <> const Table<HalfFormat> &table() {
  static const Table<HalfFormat> &Names = kept<HalfFormat>(
      {{HalfFormat::FP16, name(Format::FP16)}, {HalfFormat::BF16, name(Format::BF16)}});
  return Names;
}

template <> const Table<AlertType> &table() {
  static const Table<AlertType> &Names =
      kept<AlertType>({{AlertType::Nan, "NAN"},
                       {AlertType::Inf, "INF"},
                       {AlertType::Overflow, "OVERFLOW"},
                       {AlertType::OverflowRisk, "OVERFLOW_RISK"},
                       {AlertType::Underflow, "UNDERFLOW"},
                       {AlertType::GradExplosion, "GRAD_EXPLOSION"},
                       {AlertType::GradVanish, "GRAD_VANISH"},
                       {AlertType::Swamping, "SWAMPING"},
                       {AlertType::LossScaleDrop, "LOSS_SCALE_DROP"},
                       {AlertType::LossScaleCollapse, "LOSS_SCALE_COLLAPSE"},
                       {AlertType::LossScaleDiverged, "LOSS_SCALE_DIVERGED"}});
  return Names;
}

template <> const Table<AlertSeverity> &table() {
  static const Table<AlertSeverity> &Names =
      kept<AlertSeverity>({{AlertSeverity::Info, "INFO"},
                           {AlertSeverity::Warning, "WARNING"},
                           {AlertSeverity::Error, "ERROR"}});
  return Names;
}

template <> const Table<Severity> &table() {
  static const Table<Severity> &Names = kept<Severity>(
      {{Severity::Note, "note"}, {Severity::Warning, "warning"}, {Severity::Error, "error"}});
  return Names;
}

template <> const Table<Verdict> &table() {
  static const Table<Verdict> &Names = kept<Verdict>({{Verdict::Confirmed, "CONFIRMED"},
                                                      {Verdict::AtRisk, "AT_RISK"},
                                                      {Verdict::NotObserved, "NOT_OBSERVED"},
                                                      {Verdict::NotReached, "NOT_REACHED"}});
  return Names;
}

template <> const Table<Check> &table() {
  static const Table<Check> &Names =
      kept<Check>({{Check::AutocastCache, "mpnanny-autocast-cache"},
                   {Check::ClipBeforeUnscale, "mpnanny-clip-before-unscale"},
                   {Check::Fp16ConstantRange, "mpnanny-fp16-constant-range"},
                   {Check::GradScalerConfig, "mpnanny-grad-scaler-config"},
                   {Check::KernelConstantRange, "mpnanny-kernel-constant-range"},
                   {Check::KernelHalfAccumulator, "mpnanny-kernel-half-accumulator"},
                   {Check::KernelHalfAtomic, "mpnanny-kernel-half-atomic"},
                   {Check::KernelHalfOverflow, "mpnanny-kernel-half-overflow"},
                   {Check::LogSoftmax, "mpnanny-log-softmax"},
                   {Check::LossInHalf, "mpnanny-loss-in-half"},
                   {Check::MasterWeights, "mpnanny-master-weights"},
                   {Check::MissingGradScaler, "mpnanny-missing-grad-scaler"},
                   {Check::NaiveSoftmax, "mpnanny-naive-softmax"},
                   {Check::NormInHalf, "mpnanny-norm-in-half"},
                   {Check::RiskyOp, "mpnanny-risky-op"},
                   {Check::SoftmaxDtype, "mpnanny-softmax-dtype"},
                   {Check::UnsafeMath, "mpnanny-unsafe-math"},
                   {Check::UnscaledSum, "mpnanny-unscaled-sum"}});
  return Names;
}

template <> const Table<RiskKind> &table() {
  static const Table<RiskKind> &Names = kept<RiskKind>({{RiskKind::Overflow, "overflow"},
                                                        {RiskKind::Underflow, "underflow"},
                                                        {RiskKind::PrecisionLoss, "precision-loss"},
                                                        {RiskKind::Domain, "domain"},
                                                        {RiskKind::Banned, "banned"}});
  return Names;
}

// A gradient past its format's range is the overflow a risk names.
template <> const Table<BadValue> &table() {
  static const Table<BadValue> &Names =
      kept<BadValue>({{BadValue::Overflow, name(RiskKind::Overflow)},
                      {BadValue::Inf, "inf"},
                      {BadValue::Nan, "nan"}});
  return Names;
}

template <typename Enum> const char *nameIn(Enum Value) {
  for (const auto &[Each, Name] : table<Enum>())
    if (Each == Value)
      return Name;
  return "?";
}

bool equalIgnoringCase(std::string_view A, std::string_view B) {
  return A.size() == B.size() && std::equal(A.begin(), A.end(), B.begin(), [](char X, char Y) {
           return std::tolower(static_cast<unsigned char>(X)) ==
                  std::tolower(static_cast<unsigned char>(Y));
         });
}

} // namespace

template <typename Enum> const std::vector<Enum> &all() {
  static const std::vector<Enum> &Values = *[] {
    auto *Out = new std::vector<Enum>; // kept for the exit handlers, as the tables are
    for (const auto &Entry : table<Enum>())
      Out->push_back(Entry.first);
    return Out;
  }();
  return Values;
}

const char *name(Precision P) { return nameIn(P); }
const char *name(Format F) { return nameIn(F); }
const char *name(HalfFormat F) { return nameIn(F); }
const char *name(AlertType T) { return nameIn(T); }
const char *name(AlertSeverity S) { return nameIn(S); }
const char *name(Severity S) { return nameIn(S); }
const char *name(Verdict V) { return nameIn(V); }
const char *name(Check C) { return nameIn(C); }
const char *name(RiskKind K) { return nameIn(K); }
const char *name(BadValue B) { return nameIn(B); }

template <typename Enum> std::optional<Enum> parse(std::string_view Name) {
  for (const auto &[Value, Spelled] : table<Enum>())
    if (Name == Spelled)
      return Value;
  return std::nullopt;
}

template <typename Enum> std::optional<Enum> parseAnyCase(std::string_view Name) {
  for (const auto &[Value, Spelled] : table<Enum>())
    if (equalIgnoringCase(Name, Spelled))
      return Value;
  return std::nullopt;
}

template <typename Enum> std::string joinedNames(std::string_view Separator) {
  std::string Out;
  for (const auto &Entry : table<Enum>())
    Out += (Out.empty() ? "" : std::string(Separator)) + Entry.second;
  return Out;
}

template <typename Enum> std::vector<std::string> names() {
  std::vector<std::string> Out;
  for (const auto &Entry : table<Enum>())
    Out.push_back(Entry.second);
  return Out;
}

std::string choices(const std::vector<std::string> &Names) {
  std::string Out;
  for (size_t I = 0; I < Names.size(); ++I)
    Out += (I == 0 ? "" : I + 1 == Names.size() ? " or " : ", ") + Names[I];
  return Out;
}

std::string upperCase(std::string_view Name) {
  std::string Out(Name);
  for (char &C : Out)
    C = static_cast<char>(std::toupper(static_cast<unsigned char>(C)));
  return Out;
}

std::string_view checkPrefix() { return "mpnanny-"; }

std::string pageName(Check C) { return name(C); }
std::string pageName(AlertType T) { return std::string(alertPagePrefix()) + name(T); }
std::string_view alertPagePrefix() { return "alert-"; }

// Every enum of the vocabulary gets the whole generic interface.
#define MPNANNY_VOCABULARY_ENUM(Enum)                                                              \
  template const std::vector<Enum> &all<Enum>();                                                   \
  template std::optional<Enum> parse<Enum>(std::string_view);                                      \
  template std::optional<Enum> parseAnyCase<Enum>(std::string_view);                               \
  template std::string joinedNames<Enum>(std::string_view);                                        \
  template std::vector<std::string> names<Enum>();
MPNANNY_VOCABULARY_ENUM(Precision)
MPNANNY_VOCABULARY_ENUM(Format)
MPNANNY_VOCABULARY_ENUM(HalfFormat)
MPNANNY_VOCABULARY_ENUM(AlertType)
MPNANNY_VOCABULARY_ENUM(AlertSeverity)
MPNANNY_VOCABULARY_ENUM(Severity)
MPNANNY_VOCABULARY_ENUM(Verdict)
MPNANNY_VOCABULARY_ENUM(Check)
MPNANNY_VOCABULARY_ENUM(RiskKind)
MPNANNY_VOCABULARY_ENUM(BadValue)
#undef MPNANNY_VOCABULARY_ENUM

} // namespace mpnanny::vocab
