// One optimiser step, in two halves, each run eagerly or — on CUDA — captured once as a CUDA graph
// after a warm-up and then replayed (graph.h):
//   compute(batch)  the loss and every .grad of the batch (forward and backward)
//   update()        the global gradient norm, then the optimiser step (optimizer.h: Adam or SGD)
// Between the halves the caller may read or change the gradients (perturbations, probes, snapshots).
// Gradients are zeroed in place rather than freed, the batch is copied into a fixed input and the
// outputs into fixed scalars, so eager steps and replays read and write the same tensors: the same
// bits either way. Nothing is read back to the host: loss() and grad_norm() are device scalars.
// The model's parameters and gradients become views into one buffer each (flatten_parameters), so
// zeroing, the norm and the optimiser are a few kernels for the whole model rather than a few per
// parameter.
//
// The fault alias-target (config key `fault`) plants the bug that most likely made the retracted 2021
// study's CPU runs differ: the loss holds its target by reference in a buffer that the data pipeline
// overwrites with the next batch's target after the forward and before the backward. compute() then
// copies the batch's target (Model::loss_target) into a fixed buffer, runs the forward with the loss
// reading an alias of that buffer which autograd's version counter does not see (torch::from_blob on
// its storage: an in-place change of the tensor itself would be refused at backward), copies the next
// batch's target over the buffer (a device copy, inside the captured graph on CUDA), and runs the
// backward: the logged loss is the right one, the gradient is against the next batch's target. The
// network's input is never overwritten, and the op taps see the batch's own target.
#pragma once

#include <memory>
#include <vector>

#include <torch/types.h>

#include "saddlescope/trainer/optimizer.h"
#include "saddlescope/gpu/graph.h"
#include "saddlescope/trainer/model.h"
#include "saddlescope/trainer/perturbation.h"

namespace saddlescope::trainer {

class TrainStep {
 public:
  // graphs: capture the halves (REQUIRES a CUDA model and a live SideStream). The update stays eager
  // when the perturbation's step cannot be captured (stochastic rounding draws on the CPU).
  // alias_target: the fault (above). REQUIRES: the model is on its device for good (its parameters
  // are rebound here); with alias_target, model.loss_target() is defined.
  TrainStep(Model& model, Perturber& perturb, const OptimizerOptions& optimizer, bool graphs,
            bool alias_target = false);
  ~TrainStep();

  // REQUIRES: batch (and next) have the same shape at every call; with alias_target, `next` is the
  // batch the data pipeline produces after `batch` (its target overwrites the loss's). eager: run it
  // without replaying, so that hooks on the ops see it (op taps); the results are the same.
  void compute(const torch::Tensor& batch, bool eager = false, const torch::Tensor& next = {});
  // eager: as compute's (the ophash probe traces the optimiser's ops too; a trace that copied a tensor
  // to the host inside a capture would fail there).
  void update(bool eager = false);

  // The learning rate from the next update on (enqueued; captured updates read it from the device).
  void set_lr(double lr) { optimizer_->set_lr(lr); }
  double lr() const { return optimizer_->lr(); }
  DeviceOptimizer& optimizer() { return *optimizer_; }  // its state goes into checkpoints
  // alias_target: the loss's target buffer, holding the next batch's target after compute().
  const torch::Tensor& fault_target() const { return target_; }
  const torch::Tensor& loss() const { return loss_; }
  const torch::Tensor& grad_norm() const { return norm_; }
  // After compute(): "" when this step's loss, the parameters and their gradients are all finite, else
  // what is not ("the parameters and the gradients"). One read from the device.
  std::string non_finite() const;

 private:
  Model& model_;
  Perturber& perturb_;
  std::vector<torch::Tensor> params_;  // views into flat_
  torch::Tensor flat_;                 // every parameter; its grad() holds every gradient
  std::unique_ptr<DeviceOptimizer> optimizer_;
  bool graphs_, alias_target_;
  gpu::GraphedWork compute_graph_, update_graph_;
  torch::Tensor input_, loss_, norm_;
  // alias_target: the next batch, the target buffer, and the loss's alias of it (from_blob on its
  // storage: its own version counter, which the buffer's copies never bump).
  torch::Tensor next_, target_, target_alias_;
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
