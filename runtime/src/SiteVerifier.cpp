#include "SiteVerifier.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <sstream>

namespace mpnanny {

namespace {

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string collapse_spaces(const std::string& text) {
  std::string out;
  for (char c : text)
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') out += c;
  return out;
}

// The site's expression starts at (line, column); a multi-line expression is compared on its
// first line only. Whitespace is ignored, so reformatting inside the line does not make it stale.
bool source_still_matches(const Site& site) {
  // Only a regular file is read: a sites file naming /dev/zero or a FIFO would otherwise stall
  // the training at its start or fill its memory (found by fuzz_sites).
  std::error_code error;
  if (!std::filesystem::is_regular_file(site.file, error)) return true;
  std::ifstream in(site.file);
  if (!in) return true;  // sources not shipped with the binary: nothing to compare against
  std::string text;
  int64_t read = 0;
  while (read < site.line && std::getline(in, text)) ++read;
  if (read < site.line) return false;
  const std::string expression = collapse_spaces(site.expression.substr(0, site.expression.find('\n')));
  const std::string line = collapse_spaces(text);
  const std::string head = expression.substr(0, std::min<size_t>(expression.size(), 24));
  return head.empty() || line.find(head) != std::string::npos;
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

}  // namespace

SitesFile load_sites(const std::string& given_path, bool check_sources) {
  SitesFile result;
  // Named absolute in the warnings: the default is relative to wherever training was started.
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(given_path, error);
  const std::string path = error ? given_path : absolute.lexically_normal().string();
  std::ifstream in(path);
  if (!in) {
    result.warning = "mpnanny: cannot read the sites file " + path + "; site verification is off";
    return result;
  }
  try {
    const nlohmann::json json = nlohmann::json::parse(in);
    if (json.value("schema_version", 0) != 1) {
      result.warning = "mpnanny: " + path + " has schema_version " +
                       json.value("schema_version", nlohmann::json()).dump() +
                       ", this runtime reads 1; site verification is off";
      return result;
    }
    std::vector<std::string> stale;
    for (const auto& entry : json.at("sites")) {
      Site site;
      site.id = entry.at("id").get<std::string>();
      site.check = entry.value("check", "");
      site.file = entry.at("file").get<std::string>();
      site.line = entry.at("line").get<int64_t>();
      site.column = entry.value("column", int64_t{0});
      site.function = entry.value("function", "");
      site.expression = entry.value("expression", "");
      site.aten_ops = entry.value("aten_ops", std::vector<std::string>{});
      site.risk = entry.value("risk", "");
      site.precision = entry.value("precision", "");
      if (check_sources && !source_still_matches(site)) {
        stale.push_back(base_name(site.file) + ":" + std::to_string(site.line));
        continue;
      }
      result.sites.push_back(std::move(site));
    }
    if (!stale.empty()) {
      std::string list;
      for (const auto& s : stale) list += (list.empty() ? "" : ", ") + s;
      result.warning = "mpnanny: " + std::to_string(stale.size()) + " site(s) of " + path +
                       " no longer match their source line and are not verified (" + list +
                       "); rerun mpnanny-check --export-sites";
    }
  } catch (const std::exception& error) {
    result.sites.clear();
    result.warning = "mpnanny: malformed sites file " + path + " (" + error.what() + "); site verification is off";
  }
  return result;
}

const SitesFile& load_sites_once(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, SitesFile> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(path);
  if (found == loaded.end()) {
    found = loaded.emplace(path, load_sites(path)).first;
    if (!found->second.warning.empty()) std::cerr << found->second.warning << "\n";
  }
  return found->second;
}

SiteVerifier::SiteVerifier(std::vector<Site> sites, Precision target)
    : sites_(std::move(sites)), target_(target), evidence_(sites_.size()), line_mates_(sites_.size()) {
  const auto ops_overlap = [](const Site& a, const Site& b) {
    if (a.aten_ops.empty() || b.aten_ops.empty()) return true;
    return std::any_of(a.aten_ops.begin(), a.aten_ops.end(), [&](const std::string& op) {
      return std::find(b.aten_ops.begin(), b.aten_ops.end(), op) != b.aten_ops.end();
    });
  };
  for (size_t i = 0; i < sites_.size(); ++i) {
    for (size_t j = 0; j < sites_.size(); ++j) {
      if (sites_[i].file == sites_[j].file && sites_[i].line == sites_[j].line && ops_overlap(sites_[i], sites_[j])) {
        line_mates_[i].push_back(j);
      }
    }
  }
}

bool SiteVerifier::same_source(const std::string& site_file, const std::string& observed_file) const {
  if (site_file == observed_file) return true;
  if (base_name(site_file) != base_name(observed_file)) return false;
  const auto key = std::make_pair(site_file, observed_file);
  if (const auto cached = same_file_cache_.find(key); cached != same_file_cache_.end()) return cached->second;
  const std::filesystem::path site_path(site_file), observed_path(observed_file);
  bool same = false;
  if (site_path.is_absolute() && observed_path.is_absolute()) {
    std::error_code error;
    same = site_path.lexically_normal() == observed_path.lexically_normal() ||
           std::filesystem::equivalent(site_path, observed_path, error);
  } else {
    // The relative one's components, from its name up, are the other's last components.
    const std::filesystem::path& relative = site_path.is_absolute() ? observed_path : site_path;
    const std::filesystem::path& other = site_path.is_absolute() ? site_path : observed_path;
    std::vector<std::string> tail, whole;
    for (const auto& part : relative.lexically_normal()) tail.push_back(part.string());
    for (const auto& part : other.lexically_normal()) whole.push_back(part.string());
    while (!tail.empty() && (tail.front() == "." || tail.front() == "..")) tail.erase(tail.begin());
    same = tail.size() <= whole.size() && std::equal(tail.rbegin(), tail.rend(), whole.rbegin());
  }
  same_file_cache_.emplace(key, same);
  return same;
}

std::optional<size_t> SiteVerifier::match(const std::string& file, int64_t line, const std::string& op) const {
  for (size_t i = 0; i < sites_.size(); ++i) {
    const Site& site = sites_[i];
    if (site.line != line) continue;
    if (!same_source(site.file, file)) continue;
    if (site.aten_ops.empty() || std::find(site.aten_ops.begin(), site.aten_ops.end(), op) != site.aten_ops.end())
      return i;
  }
  return std::nullopt;
}

const FormatLimits& SiteVerifier::limits_for(const Site& site) const {
  if (site.precision == to_string(Precision::BF16)) return kBf16Limits;
  if (site.precision == to_string(Precision::FP16)) return kFp16Limits;
  return target_ == Precision::BF16 ? kBf16Limits : kFp16Limits;
}

void SiteVerifier::observe(size_t index, int64_t step, const TensorStats& stats, c10::ScalarType dtype) {
  if (index >= sites_.size()) return;
  for (const size_t mate : line_mates_[index]) observe_one(mate, step, stats, dtype);
}

void SiteVerifier::observe_failure(size_t index, int64_t step, const std::string& op, c10::ScalarType input_dtype,
                                   double scalar) {
  if (index >= sites_.size()) return;
  for (const size_t mate : line_mates_[index]) {
    const Site& site = sites_[mate];
    const FormatLimits& limits = limits_for(site);
    const bool fp16 = &limits == &kFp16Limits;
    const bool in_format = input_dtype == (fp16 ? c10::ScalarType::Half : c10::ScalarType::BFloat16);
    if (risk_of(site) != RiskKind::Overflow || !in_format || !(std::fabs(scalar) > limits.max_finite)) continue;
    Evidence& e = evidence_[mate];
    ++e.executions;
    if (step != e.last_step) {
      ++e.steps_observed;
      e.last_step = step;
    }
    const std::string format = to_string(fp16 ? Precision::FP16 : Precision::BF16);
    record_first(e.confirmed, site, Verdict::Confirmed, step, std::fabs(scalar),
                 "observed in " + format + ": " + op + " raised on a tensor in " + format + ", its value " +
                     number(scalar) + " being beyond " + number(limits.max_finite) + " (" + format + " max)");
    e.nonfinite = true;  // no headroom to state: the op could not run
  }
}

void SiteVerifier::record_first(std::optional<SiteVerdict>& slot, const Site& site, Verdict verdict, int64_t step,
                                double value, const std::string& evidence) {
  if (slot) return;
  SiteVerdict v;
  v.site = &site;
  v.verdict = verdict;
  v.step = step;
  v.value = value;
  v.evidence = evidence + " at step " + std::to_string(step);
  slot = v;
}

void SiteVerifier::note_smallest(Evidence& e, double min_abs_nonzero, int64_t step) {
  if (min_abs_nonzero > 0 && std::isfinite(min_abs_nonzero) &&
      (e.smallest_step < 0 || min_abs_nonzero < e.smallest_nonzero)) {
    e.smallest_nonzero = min_abs_nonzero;
    e.smallest_step = step;
  }
}

void SiteVerifier::observe_one(size_t index, int64_t step, const TensorStats& stats, c10::ScalarType dtype) {
  const Site& site = sites_[index];
  Evidence& e = evidence_[index];
  ++e.executions;
  const FormatLimits& limits = limits_for(site);
  const bool fp16 = &limits == &kFp16Limits;
  const std::string format = to_string(fp16 ? Precision::FP16 : Precision::BF16);
  // Values computed in the site's own format: what they show happened, in that format.
  const bool computed_in_format = dtype == (fp16 ? c10::ScalarType::Half : c10::ScalarType::BFloat16);
  const std::string observed = computed_in_format ? "observed in " + format + ": " : "";
  const int64_t overflow = fp16 ? stats.fp16_overflow : stats.bf16_overflow;
  const int64_t flushed = fp16 ? stats.fp16_flush : stats.bf16_flush;
  const int64_t subnormal = fp16 ? stats.fp16_subnormal : stats.bf16_subnormal;

  if (step != e.last_step) {
    ++e.steps_observed;
    e.last_step = step;
  }

  const auto record = [&](std::optional<SiteVerdict>& slot, Verdict verdict, double value,
                          const std::string& evidence) { record_first(slot, site, verdict, step, value, evidence); };
  const std::optional<RiskKind> risk = risk_of(site);
  // Non-finite values confirm every risk but underflow: they are what overflow, a domain error
  // and lost precision end in.
  if (risk != RiskKind::Underflow && (stats.nan_count > 0 || stats.inf_count > 0)) {
    record(e.confirmed, Verdict::Confirmed, static_cast<double>(stats.nan_count + stats.inf_count),
           observed + std::to_string(stats.nan_count) + " NaN, " + std::to_string(stats.inf_count) + " Inf");
  }
  if (risk == RiskKind::PrecisionLoss && makes_integer_sequence(site)) {
    // arange's risk is its positions: a format holds integers exactly only up to
    // 2^(mantissa bits + 1), 2048 in fp16 and 256 in bf16, far below its largest value.
    const double last_exact = std::ldexp(1.0, limits.mantissa_bits + 1);
    if (stats.max_abs > last_exact) {
      record(e.confirmed, Verdict::Confirmed, stats.max_abs,
             observed + "positions up to " + number(stats.max_abs) + " > " + number(last_exact) + " (" + format +
                 "'s last exact integer)");
    }
  } else if (risk == RiskKind::Overflow || risk == RiskKind::PrecisionLoss) {
    if (overflow > 0) {
      record(e.confirmed, Verdict::Confirmed, stats.max_abs,
             "max |x| = " + number(stats.max_abs) + " > " + number(limits.max_finite) + " (" + format + " max)");
    } else if (stats.max_abs * 2.0 > limits.max_finite) {
      record(e.at_risk, Verdict::AtRisk, stats.max_abs,
             observed + "max |x| = " + number(stats.max_abs) + ", headroom " +
                 number(limits.max_finite / stats.max_abs) + "x < 2x");
    }
  } else if (risk == RiskKind::Underflow) {
    if (flushed > 0) {
      record(e.confirmed, Verdict::Confirmed, stats.min_abs_nonzero,
             std::to_string(flushed) + " non-zero values flush to 0 in " + format +
                 " (min |x| = " + number(stats.min_abs_nonzero) + ")");
    } else if (subnormal > 0) {
      record(e.at_risk, Verdict::AtRisk, stats.min_abs_nonzero,
             observed + std::to_string(subnormal) + " values subnormal in " + format);
    }
  } else if (risk == RiskKind::Banned) {
    record(e.confirmed, Verdict::Confirmed, static_cast<double>(e.executions), "executed");
  }
  if (stats.nan_count > 0 || stats.inf_count > 0) e.nonfinite = true;
  const double ratio = stats.max_abs / limits.max_finite;
  if (e.worst_step < 0 || ratio > e.worst_ratio) {
    e.worst_ratio = ratio;
    e.worst_step = step;
  }
  note_smallest(e, stats.min_abs_nonzero, step);
}

bool SiteVerifier::makes_integer_sequence(const Site& site) {
  return std::find(site.aten_ops.begin(), site.aten_ops.end(), "aten::arange") != site.aten_ops.end();
}

bool SiteVerifier::judges_argument(const std::string& op) {
  static const char* const kArgumentOps[] = {"aten::log",   "aten::log_",   "aten::log2",       "aten::log2_",
                                             "aten::log10", "aten::log10_", "aten::reciprocal", "aten::rsqrt"};
  return std::find(std::begin(kArgumentOps), std::end(kArgumentOps), op) != std::end(kArgumentOps);
}

void SiteVerifier::observe_argument(size_t index, int64_t step, const TensorStats& argument) {
  if (index >= sites_.size()) return;
  for (const size_t mate : line_mates_[index]) {
    const Site& site = sites_[mate];
    if (risk_of(site) != RiskKind::Underflow) continue;
    Evidence& e = evidence_[mate];
    const FormatLimits& limits = limits_for(site);
    const bool fp16 = &limits == &kFp16Limits;
    const int64_t flushed = fp16 ? argument.fp16_flush : argument.bf16_flush;
    const int64_t subnormal = fp16 ? argument.fp16_subnormal : argument.bf16_subnormal;
    const std::string format = to_string(fp16 ? Precision::FP16 : Precision::BF16);
    if (flushed > 0) {
      record_first(e.confirmed, site, Verdict::Confirmed, step, argument.min_abs_nonzero,
                   std::to_string(flushed) + " values of its argument flush to 0 in " + format +
                       " (min |x| = " + number(argument.min_abs_nonzero) + ")");
    } else if (subnormal > 0) {
      record_first(e.at_risk, site, Verdict::AtRisk, step, argument.min_abs_nonzero,
                   std::to_string(subnormal) + " values of its argument subnormal in " + format);
    }
    note_smallest(e, argument.min_abs_nonzero, step);
  }
}

std::vector<std::string> SiteVerifier::watched_ops() const {
  std::vector<std::string> ops;
  for (const Site& site : sites_) {
    for (const std::string& op : site.aten_ops) {
      if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
    }
  }
  return ops;
}

bool SiteVerifier::any_site_watches(const std::string& op) const {
  return std::any_of(sites_.begin(), sites_.end(), [&](const Site& site) {
    return site.aten_ops.empty() || std::find(site.aten_ops.begin(), site.aten_ops.end(), op) != site.aten_ops.end();
  });
}

std::vector<SiteVerdict> SiteVerifier::verdicts() const {
  std::vector<SiteVerdict> out;
  for (size_t i = 0; i < sites_.size(); ++i) {
    const Evidence& e = evidence_[i];
    SiteVerdict v;
    if (e.confirmed) {
      v = *e.confirmed;
    } else if (e.at_risk) {
      v = *e.at_risk;
    } else if (e.executions > 0 && risk_of(sites_[i]) == RiskKind::Underflow) {
      // The headroom below the format's max says nothing of values too small for it.
      v.verdict = Verdict::NotObserved;
      const FormatLimits& limits = limits_for(sites_[i]);
      v.step = e.smallest_step;
      v.evidence =
          "executed " + std::to_string(e.executions) + " times, " +
          (e.smallest_step < 0 ? std::string("no non-zero value")
                               : "smallest non-zero |x| = " + number(e.smallest_nonzero) + " (normal from " +
                                     number(limits.min_normal) + ") at step " + std::to_string(e.smallest_step));
    } else if (e.executions > 0) {
      v.verdict = Verdict::NotObserved;
      v.step = e.worst_step;
      v.evidence = "executed " + std::to_string(e.executions) + " times, worst headroom " +
                   (e.worst_ratio > 0 ? number(1.0 / e.worst_ratio) + "x" : std::string("unbounded")) + " at step " +
                   std::to_string(e.worst_step);
    } else {
      v.verdict = Verdict::NotReached;
      // A site without ops is matched by any op called from its line; none was. Only observed
      // steps count: code under NoGradGuard (evaluation) may have run, and "never executed"
      // said more than the run knows.
      v.evidence = sites_[i].aten_ops.empty() ? "never ran on an observed step (no op called from this line)"
                                              : "never ran on an observed step";
    }
    v.site = &sites_[i];
    v.executions = e.executions;
    v.steps_observed = e.steps_observed;
    if (e.executions > 0) {
      if (e.nonfinite) {
        v.worst_headroom = 0.0;
      } else if (e.worst_ratio > 0) {
        v.worst_headroom = 1.0 / e.worst_ratio;
      }  // all zeros: no bound to state
    }
    out.push_back(v);
  }
  return out;
}

std::string SiteVerifier::format_table(const std::vector<SiteVerdict>& verdicts) {
  std::ostringstream out;
  out << "mpnanny site verification:\n";
  for (const SiteVerdict& v : verdicts) {
    char row[512];
    std::snprintf(row, sizeof row, "  %-12s %-28s %-26s %s\n", to_string(v.verdict),
                  (base_name(v.site->file) + ":" + std::to_string(v.site->line)).c_str(), v.site->check.c_str(),
                  v.evidence.c_str());
    out << row;
  }
  return out.str();
}

}  // namespace mpnanny
