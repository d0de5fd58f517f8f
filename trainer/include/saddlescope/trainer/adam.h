// Adam (Kingma & Ba 2015) whose whole state lives on the parameters' device: the moments, the β
// powers that count the steps, and the learning rate. A step only enqueues kernels and reads nothing
// back, so it can be captured in a CUDA graph and replayed, and a schedule can change the learning
// rate without a new capture. Per step t (from 1), for every parameter θ with gradient g:
//   m ← β1·m + (1−β1)·g        v ← β2·v + (1−β2)·g²
//   θ ← θ − (lr / (1−β1ᵗ)) · m / (√v / √(1−β2ᵗ) + ε)
// β1ᵗ and β2ᵗ are running products (float64, one multiplication per step), not pow(): products are
// correctly rounded, so CPU and GPU get the same bias corrections bit for bit. The arithmetic is
// LibTorch's torch::optim::Adam (without weight decay or AMSGrad), up to the rounding of the scalars.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/optimizer.h"

namespace saddlescope::trainer {

class DeviceAdam : public DeviceOptimizer {
 public:
  struct Options {
    double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    bool fused = false;  // one kernel per parameter tensor (trainer/fused.h) instead of ~9 LibTorch ops:
                         // the same formula with products feeding sums as fma
  };

  // REQUIRES: params non-empty, all on one device.
  DeviceAdam(std::vector<torch::Tensor> params, Options options);

  // One update from every parameter's .grad. REQUIRES: all grads defined.
  void step() override;
  // The learning rate from the next step on (an enqueued fill: no synchronisation).
  void set_lr(double lr) override;
  double lr() const override { return lr_value_; }
  const char* name() const override { return "adam"; }

  // The whole state (moments, β powers, learning rate) as named tensors "<prefix>m.<i>", ... for a
  // checkpoint; load() copies such a map back in place (exact). Errors name the missing or
  // mis-shaped entry.
  void save(const std::string& prefix, std::map<std::string, torch::Tensor>* out) const override;
  Status load(const std::string& prefix, const std::map<std::string, torch::Tensor>& in) override;
  std::unique_ptr<DeviceOptimizer> fresh(std::vector<torch::Tensor> params) const override;

 private:
  std::vector<torch::Tensor> params_, m_, v_;
  Options options_;
  double lr_value_;
  torch::Tensor lr_, beta1_power_, beta2_power_;  // 0-dim float64 on the device
};

}  // namespace saddlescope::trainer
