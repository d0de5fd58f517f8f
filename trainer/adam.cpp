#include "saddlescope/trainer/adam.h"

#include <torch/torch.h>

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/fused.h"

namespace saddlescope::trainer {

DeviceAdam::DeviceAdam(std::vector<torch::Tensor> params, Options options)
    : params_(std::move(params)), options_(options), lr_value_(options.lr) {
  SADDLESCOPE_CHECK(!params_.empty());
  torch::NoGradGuard no_grad;
  for (const auto& p : params_) {
    m_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    v_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
  }
  auto scalar = torch::TensorOptions().dtype(torch::kFloat64).device(params_[0].device());
  lr_ = torch::full({}, options.lr, scalar);
  beta1_power_ = torch::ones({}, scalar);
  beta2_power_ = torch::ones({}, scalar);
}

void DeviceAdam::set_lr(double lr) {
  lr_.fill_(lr);
  lr_value_ = lr;
}

std::unique_ptr<DeviceOptimizer> DeviceAdam::fresh(std::vector<torch::Tensor> params) const {
  Options o = options_;
  o.lr = lr_value_;
  return std::make_unique<DeviceAdam>(std::move(params), o);
}

void DeviceAdam::save(const std::string& prefix, std::map<std::string, torch::Tensor>* out) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    (*out)[prefix + "m." + std::to_string(i)] = m_[i];
    (*out)[prefix + "v." + std::to_string(i)] = v_[i];
  }
  (*out)[prefix + "lr"] = lr_;
  (*out)[prefix + "beta1_power"] = beta1_power_;
  (*out)[prefix + "beta2_power"] = beta2_power_;
}

Status DeviceAdam::load(const std::string& prefix, const std::map<std::string, torch::Tensor>& in) {
  std::map<std::string, torch::Tensor> mine;
  save(prefix, &mine);
  SADDLESCOPE_RETURN_IF_ERROR(copy_state(mine, in));
  lr_value_ = lr_.item<double>();
  return Status::Ok();
}

void DeviceAdam::step() {
  torch::NoGradGuard no_grad;
  const double b1 = options_.beta1, b2 = options_.beta2;
  beta1_power_.mul_(b1);
  beta2_power_.mul_(b2);
  if (options_.fused) {
    for (size_t i = 0; i < params_.size(); ++i)
      fused_adam(params_[i], m_[i], v_[i], lr_, beta1_power_, beta2_power_, b1, b2, options_.eps);
    return;
  }
  // Both scalars stay float64 tensors on the device; against a float32 tensor they act as float32
  // scalars (type promotion), as LibTorch's host-side doubles do.
  torch::Tensor step_size = lr_ / (1 - beta1_power_);
  torch::Tensor root_correction2 = (1 - beta2_power_).sqrt();
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& g = params_[i].grad();
    SADDLESCOPE_CHECK(g.defined());
    m_[i].mul_(b1).add_(g, 1 - b1);
    v_[i].mul_(b2).addcmul_(g, g, 1 - b2);
    torch::Tensor denom = (v_[i].sqrt() / root_correction2).add_(options_.eps);
    params_[i].addcdiv_(m_[i] * step_size, denom, -1);
  }
}

}  // namespace saddlescope::trainer
