#include "saddlescope/trainer/sgd.h"

#include <torch/torch.h>


namespace saddlescope::trainer {

DeviceSgd::DeviceSgd(std::vector<torch::Tensor> params, double lr, double momentum)
    : params_(std::move(params)), momentum_(momentum), lr_value_(lr) {
  SADDLESCOPE_CHECK(!params_.empty() && momentum >= 0 && momentum < 1);
  torch::NoGradGuard no_grad;
  if (momentum_ > 0)
    for (const auto& p : params_) buf_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
  lr_ = torch::full({}, lr, torch::TensorOptions().dtype(torch::kFloat64).device(params_[0].device()));
  started_ = torch::zeros({}, torch::kFloat64);
}

void DeviceSgd::set_lr(double lr) {
  lr_.fill_(lr);
  lr_value_ = lr;
}

void DeviceSgd::step() {
  torch::NoGradGuard no_grad;
  // The first step copies the gradient into the buffer (b ← g, as LibTorch: μ·0 + g would turn a −0
  // into +0). A host-side branch, yet capturable: a CUDA graph is captured after warm-up steps
  // (gpu/graph.h), when every later step takes the second branch.
  const bool first = started_.item<double>() == 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& g = params_[i].grad();
    SADDLESCOPE_CHECK(g.defined());
    torch::Tensor d = g;
    if (momentum_ > 0) {
      if (first) buf_[i].copy_(g);
      else buf_[i].mul_(momentum_).add_(g);
      d = buf_[i];
    }
    params_[i].addcmul_(d, lr_, -1);  // θ − lr·d with lr from the device (see sgd.h on its rounding)
  }
  if (momentum_ > 0) started_.fill_(1);
}

void DeviceSgd::save(const std::string& prefix, std::map<std::string, torch::Tensor>* out) const {
  (*out)[prefix + "lr"] = lr_;
  if (momentum_ == 0) return;
  for (size_t i = 0; i < buf_.size(); ++i) (*out)[prefix + "buf." + std::to_string(i)] = buf_[i];
  (*out)[prefix + "started"] = started_;
}

Status DeviceSgd::load(const std::string& prefix, const std::map<std::string, torch::Tensor>& in) {
  std::map<std::string, torch::Tensor> mine;
  save(prefix, &mine);
  SADDLESCOPE_RETURN_IF_ERROR(copy_state(mine, in));
  lr_value_ = lr_.item<double>();
  return Status::Ok();
}

std::unique_ptr<DeviceOptimizer> DeviceSgd::fresh(std::vector<torch::Tensor> params) const {
  return std::make_unique<DeviceSgd>(std::move(params), lr_value_, momentum_);
}

}  // namespace saddlescope::trainer
