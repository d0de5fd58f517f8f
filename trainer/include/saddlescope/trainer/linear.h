// The two-layer linear network y = W2·W1·x (no biases): a saddle benchmark known in closed form
// (Baldi & Hornik 1989; Saxe, McClelland & Ganguli 2014). Its training loss is
//   L(W1, W2) = (1/2N) Σ_n ‖W2 W1 x_n − y_n‖²,
// so that at W1 = W2 = 0 — a critical point on every hardware, since every product there is an exact
// zero — the Hessian's nonzero eigenvalues are exactly ±σ_i of the input–output cross-moment
// Σ_yx = (1/N) Σ_n y_n x_nᵀ (each once per hidden unit). Every local minimum is global, and the global
// minimum is the best rank-h approximation: with Σ_xx = (1/N) Σ x xᵀ invertible and s_i the singular
// values of Σ_yx Σ_xx^(−1/2), L* = ½ (tr Σ_yy − Σ_{i≤h} s_i²).
//
// Stable names: fc1.weight (hidden, inputs) = W1, fc2.weight (outputs, hidden) = W2.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Generator.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include "saddlescope/probes/symmetry.h"

namespace saddlescope::trainer {

class LinearNetImpl : public torch::nn::Module {
 public:
  // REQUIRES: inputs, hidden, outputs >= 1.
  LinearNetImpl(int64_t inputs, int64_t hidden, int64_t outputs);

  // (batch, inputs) -> (batch, outputs): x W1ᵀ W2ᵀ.
  torch::Tensor forward(const torch::Tensor& x);
  // (1/2N) Σ_n ‖y_hat_n − y_n‖² over the N rows of `x` (batch, inputs) and `y` (batch, outputs).
  torch::Tensor loss(const torch::Tensor& x, const torch::Tensor& y);
  // The same loss as (1/2N)·torch::mse_loss(sum), whose backward reads `y` again (loss()'s does not):
  // the fault alias-target's (step.h).
  torch::Tensor loss_reading_target(const torch::Tensor& x, const torch::Tensor& y);

  // PyTorch's default Linear initialisation (uniform in ±1/sqrt(fan_in)) drawn from `gen`. Call on
  // the CPU, before moving the model to a device.
  void reset_parameters(at::Generator& gen);

  // fc1 (its units: rows of W1, outgoing weights the columns of W2) and fc2, for the symmetry probe.
  std::vector<probes::LayerUnits> unit_layers() const;

  int64_t inputs() const { return fc1->weight.size(1); }
  int64_t hidden() const { return fc1->weight.size(0); }
  int64_t outputs() const { return fc2->weight.size(0); }

 private:
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(LinearNet);

}  // namespace saddlescope::trainer
