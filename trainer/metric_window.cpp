#include "saddlescope/trainer/metric_window.h"

#include <cmath>

#include <fmt/format.h>
#include <torch/torch.h>

#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/train.h"

namespace saddlescope::trainer {

MetricWindow::MetricWindow(const RunConfig& cfg, torch::Device device, int64_t start,
                           const std::vector<store::MetricsRow>& kept)
    : steps_(cfg.steps), log_every_(cfg.log_every), final_start_((cfg.steps - 1) / cfg.log_every * cfg.log_every) {
  auto on_device = torch::TensorOptions().dtype(torch::kFloat64).device(device);
  loss_ = torch::empty({log_every_}, on_device);
  norm_ = torch::empty({log_every_}, on_device);
  for (const auto& r : kept)
    if (r.step >= final_start_ && r.step < start) {
      final_sum_ += r.loss;
      ++final_count_;
    }
}

void MetricWindow::record(int64_t step, const torch::Tensor& loss, const torch::Tensor& batch_grad_norm, double lr,
                          double wall_s) {
  int64_t k = static_cast<int64_t>(pending_.size());
  SADDLESCOPE_CHECK(k < log_every_);
  loss_[k].copy_(loss);
  norm_[k].copy_(batch_grad_norm);
  store::MetricsRow r;
  r.step = step;
  r.lr = lr;
  r.wall_s = wall_s;
  pending_.push_back(r);
}

bool MetricWindow::full(int64_t step) const { return (step + 1) % log_every_ == 0 || step + 1 == steps_; }

Status MetricWindow::flush(store::TableWriter<store::MetricsRow>* out, TrainResult* result) {
  if (pending_.empty()) return Status::Ok();
  int64_t n = static_cast<int64_t>(pending_.size());
  auto losses = loss_.narrow(0, 0, n).cpu();
  auto norms = norm_.narrow(0, 0, n).cpu();
  const double* l = losses.data_ptr<double>();
  const double* g = norms.data_ptr<double>();
  for (int64_t i = 0; i < n; ++i) {
    store::MetricsRow r = pending_[i];
    r.loss = l[i];
    r.batch_grad_norm = g[i];
    out->append(r);
    result->steps_completed = r.step + 1;
    if (!std::isfinite(r.loss)) {
      result->diverged_at_step = r.step;
      break;
    }
    if (r.step >= final_start_) {
      final_sum_ += r.loss;
      ++final_count_;
    }
    last_loss_ = fmt::format("loss {:.6f}", r.loss);
  }
  pending_.clear();
  return out->flush();
}

}  // namespace saddlescope::trainer
