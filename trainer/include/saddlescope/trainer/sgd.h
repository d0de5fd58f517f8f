// Stochastic gradient descent with optional momentum, whose whole state lives on the parameters'
// device (optimizer.h): the momentum buffers and the learning rate. Per step, for every parameter θ
// with gradient g, with momentum μ > 0:
//   b ← g on the first step, then b ← μ·b + g        θ ← θ − lr·b
// and with μ = 0: θ ← θ − lr·g. This is LibTorch's torch::optim::SGD without dampening, Nesterov or
// weight decay, bit for bit on the CPU (tested): θ − lr·b is one addcmul with the learning rate read
// from the device, which on the CPU rounds as LibTorch's add(b, −lr) does (a fused multiply-add where
// the CPU has one). On CUDA, ATen's addcmul rounds lr·b before adding it, where LibTorch's SGD fuses
// the two: the last bit may differ from torch::optim::SGD there (as DeviceAdam's does from Adam).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/optimizer.h"

namespace saddlescope::trainer {

class DeviceSgd : public DeviceOptimizer {
 public:
  // REQUIRES: params non-empty, all on one device; 0 <= momentum < 1.
  DeviceSgd(std::vector<torch::Tensor> params, double lr, double momentum);

  void step() override;
  void set_lr(double lr) override;
  double lr() const override { return lr_value_; }
  const char* name() const override { return "sgd"; }
  // "<prefix>lr", and with momentum "<prefix>buf.<i>" and "<prefix>started" (1 once b holds a step).
  void save(const std::string& prefix, std::map<std::string, torch::Tensor>* out) const override;
  Status load(const std::string& prefix, const std::map<std::string, torch::Tensor>& in) override;
  std::unique_ptr<DeviceOptimizer> fresh(std::vector<torch::Tensor> params) const override;

 private:
  std::vector<torch::Tensor> params_, buf_;  // buf_: empty without momentum
  double momentum_, lr_value_;
  torch::Tensor lr_;       // 0-dim float64 on the device
  torch::Tensor started_;  // 0-dim float64 on the CPU: 1 once the buffers hold a step (checkpoints)
};

}  // namespace saddlescope::trainer
