// Per-step metrics (metrics.csv) kept on the device and read back once per log window: no
// synchronisation inside a step. Windows end at multiples of log_every (and at the last step), so a
// resumed run writes the same rows and reports the same final loss as one that never stopped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "saddlescope/base/status.h"
#include "saddlescope/store/schema.h"

namespace saddlescope::trainer {

struct RunConfig;
struct TrainResult;

class MetricWindow {
 public:
  // A window for steps from `start` on; `kept` are the rows a resumed run wrote before `start` (the
  // final loss may average over some of them).
  MetricWindow(const RunConfig& cfg, torch::Device device, int64_t start, const std::vector<store::MetricsRow>& kept);

  // Records step `step`'s loss and gradient norm (device scalars, copied on the device).
  void record(int64_t step, const torch::Tensor& loss, const torch::Tensor& batch_grad_norm, double lr, double wall_s);
  // Whether the window ends with `step`.
  bool full(int64_t step) const;
  // Reads the recorded steps back, appends their rows to `out` and flushes it; sets
  // result->steps_completed, and result->diverged_at_step at the first non-finite loss (no rows after
  // it are written). Errors: the file's.
  Status flush(store::TableWriter<store::MetricsRow>* out, TrainResult* result);

  // "loss 0.012345" of the last row written, for the progress line.
  const std::string& last_loss() const { return last_loss_; }
  // Mean loss over the run's last log window (steps ⌊(steps−1)/log_every⌋·log_every .. steps−1),
  // summed in step order. REQUIRES: every step of it flushed.
  double final_loss() const { return final_sum_ / static_cast<double>(final_count_); }

 private:
  int64_t steps_, log_every_, final_start_;
  torch::Tensor loss_, norm_;  // (log_every) float64 on the device
  std::vector<store::MetricsRow> pending_;  // step, lr and wall_s of the recorded steps
  std::string last_loss_ = "loss ?";
  double final_sum_ = 0;
  int64_t final_count_ = 0;
};

}  // namespace saddlescope::trainer
