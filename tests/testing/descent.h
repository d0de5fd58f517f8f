// A small descent problem for the optimiser tests: two parameters on a fixed quadratic-plus-quartic
// loss, stepped by our optimisers and by LibTorch's.
#pragma once

#include <vector>

#include <torch/torch.h>

namespace saddlescope::testing {

// `steps` updates by `step` (called with the step's index after backward), returning the parameters
// flattened into one float64 vector.
template <class Step>
torch::Tensor descend(torch::Dtype dtype, int steps, Step step, std::vector<torch::Tensor>* params) {
  auto gen = at::detail::createCPUGenerator(11);
  torch::Tensor target = torch::randn({7, 5}, gen, torch::kFloat64).to(dtype);
  for (int t = 0; t < steps; ++t) {
    for (auto& p : *params)
      if (p.grad().defined()) p.mutable_grad().zero_();
    torch::Tensor loss = ((*params)[0] - target).pow(2).sum() + (*params)[1].pow(4).sum();
    loss.backward();
    step(t);
  }
  return torch::cat({(*params)[0].detach().flatten(), (*params)[1].detach().flatten()}).to(torch::kFloat64);
}

// The starting parameters, (7, 5) and (3), requiring grad.
inline std::vector<torch::Tensor> descent_start(torch::Dtype dtype) {
  auto gen = at::detail::createCPUGenerator(5);
  return {torch::randn({7, 5}, gen, torch::kFloat64).to(dtype).requires_grad_(true),
          torch::randn({3}, gen, torch::kFloat64).to(dtype).requires_grad_(true)};
}

}  // namespace saddlescope::testing
