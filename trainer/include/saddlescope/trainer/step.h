// One optimiser step, in two halves, each run eagerly or — on CUDA — captured once as a CUDA graph
// after a warm-up and then replayed (graph.h):
//   compute(batch)  the loss and every .grad of the batch (forward and backward)
//   update()        the global gradient norm, then the optimiser step
// Between the halves the caller may read or change the gradients (perturbations, probes, snapshots).
// Gradients are zeroed in place rather than freed, the batch is copied into a fixed input and the
// outputs into fixed scalars, so eager steps and replays read and write the same tensors: the same
// bits either way. Nothing is read back to the host: loss() and grad_norm() are device scalars.
// The model's parameters and gradients become views into one buffer each (flatten_parameters), so
// zeroing, the norm and Adam are a few kernels for the whole model rather than a few per parameter.
#pragma once

#include <vector>

#include <torch/types.h>

#include "saddlescope/trainer/adam.h"
#include "saddlescope/gpu/graph.h"
#include "saddlescope/trainer/model.h"
#include "saddlescope/trainer/perturbation.h"

namespace saddlescope::trainer {

class TrainStep {
 public:
  // graphs: capture the halves (REQUIRES a CUDA model and a live SideStream). The update stays eager
  // when the perturbation's step cannot be captured (stochastic rounding draws on the CPU).
  // REQUIRES: the model is on its device for good (its parameters are rebound here).
  TrainStep(Model& model, Perturber& perturb, DeviceAdam::Options adam, bool graphs);

  // REQUIRES: batch has the same shape at every call. eager: run it without replaying, so that
  // hooks on the ops see it (op taps); the results are the same.
  void compute(const torch::Tensor& batch, bool eager = false);
  void update();

  // The learning rate from the next update on (enqueued; captured updates read it from the device).
  void set_lr(double lr) { adam_.set_lr(lr); }
  double lr() const { return adam_.lr(); }
  DeviceAdam& adam() { return adam_; }  // its state goes into checkpoints
  const torch::Tensor& loss() const { return loss_; }
  const torch::Tensor& grad_norm() const { return norm_; }

 private:
  Model& model_;
  Perturber& perturb_;
  std::vector<torch::Tensor> params_;  // views into flat_
  torch::Tensor flat_;                 // every parameter; its grad() holds every gradient
  DeviceAdam adam_;
  bool graphs_;
  gpu::GraphedWork compute_graph_, update_graph_;
  torch::Tensor input_, loss_, norm_;
};

// Sum of squared elements of every gradient, then the square root: the global gradient norm, on the
// device. REQUIRES: at least one gradient defined.
torch::Tensor global_grad_norm(const std::vector<torch::Tensor>& params);

// Rebinds every parameter of `module` as a view into one contiguous tensor, and its gradient as a view
// into that tensor's grad() (zeros), values unchanged. Returns the flat tensor (it does not require
// grad: backward accumulates into the parameters' views). REQUIRES: parameters on one device, of one
// dtype; the module is not moved afterwards (a move would copy the parameters out of the buffer).
torch::Tensor flatten_parameters(torch::nn::Module& module);

}  // namespace saddlescope::trainer
