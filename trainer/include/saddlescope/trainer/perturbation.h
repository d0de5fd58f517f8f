// Controlled perturbations (ablations) of a training run, each driven by its own seed:
//   shuffle-reduction    every step, the batch's examples in a fresh order: same examples, another
//                        summation order (the CPU analogue of nondeterministic GPU reductions)
//   gaussian:σ[:element|:absolute]
//                        zero-mean Gaussian noise added to the gradient, of norm ≈ σ‖g‖ (or of
//                        standard deviation σ|g_i| per element, or σ per element whatever g: the
//                        only one that moves a run sitting exactly at a critical point, where g = 0)
//   stochastic-rounding  the optimiser's update computed in float64 and stochastically rounded to float32
//   bitflip[:P[:I]]      the last mantissa bit of element I (default 0) of parameter P (default: the
//                        last, the output bias) flipped at step 0
// Random draws happen on the CPU and are copied to the device, so CPU and GPU runs get the same noise.
#pragma once

#include <map>

#include <memory>

#include <nlohmann/json_fwd.hpp>
#include <torch/types.h>

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/optimizer.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/snapshot.h"

namespace saddlescope::trainer {

// One draw of gaussian perturbation `p`'s noise for gradients `grads` (one per parameter), from `gen`:
// what Perturber::gradients adds to the gradients, and what the noise probe measures with a generator of
// its own. Empty unless p.kind is gaussian.
std::vector<torch::Tensor> gaussian_noise(const Perturbation& p, const std::vector<torch::Tensor>& grads,
                                          at::Generator& gen);

class Perturber {
 public:
  explicit Perturber(const Perturbation& p);
  ~Perturber();

  // Before training, on the CPU parameters: the bit flip. An unknown parameter or an index out of
  // range is an error. Returns what was done, for the manifest (null when nothing).
  Result<nlohmann::json> at_start(NamedTensors& params);
  // The batch to train on: `x` itself, or its rows in a fresh order.
  torch::Tensor batch(const torch::Tensor& x);
  // Adds gradient noise, when asked for. REQUIRES: after backward.
  void gradients(const std::vector<torch::Tensor>& params);
  // The optimiser step: opt.step(), or the float64 step rounded stochastically into the parameters.
  void step(DeviceOptimizer& opt, const std::vector<torch::Tensor>& params);
  // Whether step() only enqueues device work (it can be captured in a CUDA graph): not for
  // stochastic rounding, whose draws come from the CPU.
  bool step_capturable() const { return p_.kind != "stochastic-rounding"; }

  // The perturbation's state (its random stream; stochastic rounding's float64 shadows and their
  // optimiser, "perturbation.adam64.*" or "perturbation.sgd64.*") as named tensors for a checkpoint,
  // and back. Errors name the missing entry.
  void save(std::map<std::string, torch::Tensor>* out) const;
  Status load(const std::map<std::string, torch::Tensor>& in);

 private:
  Perturbation p_;
  at::Generator gen_;
  // stochastic-rounding: float64 shadows of the parameters and their own optimiser.
  std::vector<torch::Tensor> shadow_;
  std::unique_ptr<DeviceOptimizer> opt64_;
  std::map<std::string, torch::Tensor> resumed_opt64_;  // its checkpointed state, until it exists
};

// Rounds each element of the float64 tensor `x` to one of its two neighbouring float32 values, up with
// probability equal to its distance from the lower one over the gap (unbiased: E[result] = x).
// `u` holds uniform [0, 1) draws of x's shape. Exposed for tests.
torch::Tensor stochastic_round(const torch::Tensor& x, const torch::Tensor& u);

}  // namespace saddlescope::trainer
