#include "Recorder.h"

#include <ATen/core/Tensor.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <sstream>
#include <system_error>

#include "Environment.h"
#include "mpnanny/Nanny.h"

namespace mpnanny {

std::string shape_of(const at::Tensor& tensor) {
  std::string text = "[";
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    if (d) text += ',';
    text += std::to_string(tensor.size(d));
  }
  return text + "]";
}

std::string options_json(const Options& options, const std::vector<std::string>& watched_ops, bool verifying) {
  const AlertThresholds& t = options.thresholds;
  nlohmann::json json = {
      {"trace_interval", options.trace_interval},
      {"output_dir", options.output_dir},
      {"precision", to_string(options.precision)},
      {"dense_steps", options.dense_steps},
      {"watched_ops", watched_ops},
      {"observe_backward", options.observe_backward},
      {"exclude_parameter_prefixes", options.exclude_parameter_prefixes},
      {"max_parameter_depth", options.max_parameter_depth},
      {"track_update_ratio", options.track_update_ratio},
      {"verbosity", options.verbosity},
      {"verify", verifying},
      {"verify_requested", options.verify},  // asked for, whether or not the sites file loaded
      {"sites_file", options.sites_file},
      {"verify_steps", options.verify_steps},
      {"loss_scale_source", static_cast<bool>(options.loss_scale)},
      {"process_group", options.process_group ? nlohmann::json{{"rank", options.process_group->getRank()},
                                                               {"size", options.process_group->getSize()},
                                                               {"backend", options.process_group->getBackendName()}}
                                              : nlohmann::json()},
      {"thresholds",
       {{"overflow_risk_factor", t.overflow_risk_factor},
        {"underflow_share", t.underflow_share},
        {"underflow_min_count", t.underflow_min_count},
        {"grad_explosion_norm", t.grad_explosion_norm},
        {"grad_vanish_norm", t.grad_vanish_norm},
        {"swamping_share", t.swamping_share},
        {"swamping_min_inputs", t.swamping_min_inputs},
        {"loss_scale_min", t.loss_scale_min},
        {"loss_scale_collapse_backoffs", t.loss_scale_collapse_backoffs},
        {"loss_scale_collapse_window", t.loss_scale_collapse_window},
        {"adaptive_enabled", t.adaptive_enabled},
        {"adaptive_warmup", t.adaptive_warmup},
        {"adaptive_k", t.adaptive_k},
        {"adaptive_window", t.adaptive_window}}}};
  return json.dump();
}

Recorder::Recorder(const Options& options, std::function<void()> on_failure)
    : options_(options), on_failure_(std::move(on_failure)) {}

void Recorder::describe_run(std::string options_json) {
  const LaunchRanks ranks = LaunchRanks::read();
  RunInfo& run = run_info_;
  run.rank = static_cast<int>(ranks.rank ? *ranks.rank : ranks.local_rank.value_or(0));
  run.local_rank = static_cast<int>(ranks.local_rank.value_or(0));
  if (ranks.world_size) run.world_size = static_cast<int>(*ranks.world_size);
  // A process group knows its ranks better than the launcher's variables (which may be absent).
  const bool in_group = static_cast<bool>(options_.process_group);
  if (in_group) {
    run.rank = options_.process_group->getRank();
    run.world_size = options_.process_group->getSize();
  }
  run.precision = to_string(options_.precision);
  run.options_json = std::move(options_json);
  run.torch_version = TORCH_VERSION;
  const std::string file_name = (in_group || ranks.rank || ranks.local_rank)
                                    ? "metrics-rank" + std::to_string(run.rank) + ".db"
                                    : std::string("metrics.db");
  database_path_ = (std::filesystem::path(options_.output_dir) / file_name).string();
}

bool Recorder::open() {
  std::error_code error;
  std::filesystem::create_directories(options_.output_dir, error);
  if (error) {
    std::cerr << "mpnanny: warning: cannot create " << options_.output_dir << ": " << error.message()
              << "; monitoring is switched off, training continues\n";
    return false;
  }
  WriterOptions writer_options;
  writer_options.queue_capacity = options_.queue_capacity;
  writer_ = std::make_unique<MetricsWriter>(database_path_, run_info_, writer_options);
  return writer_->ok();  // otherwise the writer has warned
}

bool Recorder::enqueue(Record record) {
  if (deferred_) {
    std::call_once(opened_, [this] {
      if (!open()) on_failure_();
    });
  }
  if (!writer_) return false;
  const bool queued = writer_->enqueue(std::move(record));
  if (!writer_->ok()) on_failure_();
  return queued;
}

void Recorder::flush() {
  if (!writer_) return;
  writer_->flush();
  // A write that failed inside this flush must show in active() at once: a caller that flushes
  // and then checks active() takes "still active" to mean "committed".
  if (!writer_->ok()) on_failure_();
}

void Recorder::close() {
  if (writer_) writer_->close();
}

int64_t Recorder::location_id_for(const SourceLocation* frame) {
  if (!frame) return 0;
  const auto by_frame = location_ids_by_frame_.find(frame);
  if (by_frame != location_ids_by_frame_.end()) return by_frame->second;
  // Frames at different addresses may name one line: they share its id.
  const auto key = std::make_tuple(frame->file, frame->line, frame->function);
  auto by_line = location_ids_.find(key);
  if (by_line == location_ids_.end()) {
    const auto id = static_cast<int64_t>(locations_.size());
    locations_.push_back(*frame);
    by_line = location_ids_.emplace(key, id).first;
    enqueue(LocationRecord{id, *frame});
  }
  location_ids_by_frame_.emplace(frame, by_line->second);
  return by_line->second;
}

const SourceLocation* Recorder::location(int64_t location_id) const {
  return location_id > 0 && location_id < static_cast<int64_t>(locations_.size()) ? &locations_[location_id] : nullptr;
}

void Recorder::record_alert(const Alert& alert, int64_t seq, int64_t location_id) {
  if (alerts_.size() < options_.alerts_in_memory) alerts_.push_back(alert);
  enqueue(AlertRecord{alert, seq, location_id});

  const bool first_time = announced_.emplace(alert.type, location_id, alert.name).second;
  if (options_.verbosity >= 2 || (options_.verbosity == 1 && first_time)) {
    std::ostringstream line;
    line << "mpnanny: step " << alert.step << ": " << to_string(alert.severity) << " " << to_string(alert.type);
    if (alert.location.known()) {
      line << " at " << std::filesystem::path(alert.location.file).filename().string() << ":" << alert.location.line;
    }
    if (!alert.op.empty()) line << " (" << alert.op << ", " << to_string(alert.phase) << ")";
    if (!alert.name.empty()) line << " (" << alert.name << ", " << to_string(alert.phase) << ")";
    line << ": " << alert.message << " [knowledge/alert-" << to_string(alert.type) << ".md]";
    std::cerr << line.str() << "\n";
  }
}

}  // namespace mpnanny
