#include "saddlescope/trainer/linear.h"

#include <cmath>

#include <torch/torch.h>

namespace saddlescope::trainer {

LinearNetImpl::LinearNetImpl(int64_t inputs, int64_t hidden, int64_t outputs)
    : fc1(register_module("fc1", torch::nn::Linear(torch::nn::LinearOptions(inputs, hidden).bias(false)))),
      fc2(register_module("fc2", torch::nn::Linear(torch::nn::LinearOptions(hidden, outputs).bias(false)))) {}

torch::Tensor LinearNetImpl::forward(const torch::Tensor& x) { return fc2->forward(fc1->forward(x)); }

torch::Tensor LinearNetImpl::loss(const torch::Tensor& x, const torch::Tensor& y) {
  return 0.5 * (forward(x) - y).pow(2).sum() / static_cast<double>(x.size(0));
}

torch::Tensor LinearNetImpl::loss_reading_target(const torch::Tensor& x, const torch::Tensor& y) {
  return 0.5 * torch::mse_loss(forward(x), y, torch::Reduction::Sum) / static_cast<double>(x.size(0));
}

void LinearNetImpl::reset_parameters(at::Generator& gen) {
  torch::NoGradGuard no_grad;
  for (auto* layer : {&fc1, &fc2}) {
    torch::Tensor& w = (*layer)->weight;
    double bound = 1.0 / std::sqrt(static_cast<double>(w.size(1)));
    w.uniform_(-bound, bound, gen);
  }
}

std::vector<probes::LayerUnits> LinearNetImpl::unit_layers() const {
  return {{"fc1", fc1->weight.detach(), at::Tensor(), fc2->weight.detach()},
          {"fc2", fc2->weight.detach(), at::Tensor(), at::Tensor()}};
}

}  // namespace saddlescope::trainer
