// A model as the training loop, the probes and the evaluation see it: the autoencoder, PredNet or the
// two-layer linear network.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/nn/module.h>
#include <torch/types.h>

#include "saddlescope/base/status.h"
#include "saddlescope/probes/op_taps.h"
#include "saddlescope/probes/symmetry.h"
#include "saddlescope/trainer/config_choices.h"

namespace saddlescope::trainer {

struct RunConfig;
struct Dataset;

// Which units init duplicate makes copies of each other (RunConfig's duplicate_layers, duplicate_units).
struct Duplication {
  std::vector<std::string> layers;  // unit_layers() names; empty: every layer with outgoing weights
  std::vector<int64_t> units;       // the first is copied into the others; empty: unit 0 into every unit
};

class Model {
 public:
  explicit Model(double init_scale = 1) : init_scale_(init_scale) {}
  virtual ~Model() = default;

  // The module holding every parameter (named: encoder.fc1.weight, l0.lstm.i.weight, ...).
  virtual torch::nn::Module& module() = 0;
  // The training loss on a batch: (batch, features) for the autoencoder, (batch, T, 1, H, W) frames in
  // [0, 1] for PredNet, (batch, inputs + outputs) rows [x, y] for the linear network, in the model's
  // dtype and device.
  virtual torch::Tensor loss(const torch::Tensor& batch) = 0;
  // The prediction for a batch of the same rows, as evaluation makes it (a TorchScript module in eval
  // mode): the autoencoder's reconstruction, PredNet's predicted frames (batch, T, 1, H, W), the linear
  // network's ŷ, the module's forward(x). Row i of the batch is predicted in row i (dim 0).
  virtual torch::Tensor predict(const torch::Tensor& batch) = 0;
  // The part of `batch` the loss compares its prediction with and that its backward reads again: the
  // autoencoder's batch itself, the linear network's y, PredNet's frames 1..T-1 under pixel_mse.
  // Undefined when the loss's backward reads no target (PredNet's L0 and Lall). For the fault
  // alias-target (step.h).
  virtual torch::Tensor loss_target(const torch::Tensor& /*batch*/) const { return {}; }
  // loss(batch), but its MSE takes `target` (of loss_target(batch)'s shape) as the target and keeps it
  // for the backward (torch::mse_loss); the op taps still see the batch's own target.
  // REQUIRES: loss_target(batch) is defined.
  virtual torch::Tensor loss_against(const torch::Tensor& batch, const torch::Tensor& target);
  // Mean squared error per pixel (per target element) on `x` and the trivial baseline's ("mean training
  // image" or "mean training target" predicted for every example; "previous frame" copied forward),
  // accumulated in float64, with the baseline's name and any details (per-frame errors) for the
  // manifest. `train_mean` is the mean training row.
  struct Scores {
    double mse = 0, baseline_mse = 0;
    std::string baseline;
    std::vector<double> per_frame_mse, per_frame_baseline_mse;  // PredNet only
    // A classifier (model torchscript, loss cross_entropy; mse is then Brier's score per class):
    std::optional<double> cross_entropy, baseline_cross_entropy, accuracy;
  };
  // Runs in forward passes of at most eval_chunk(model) examples each.
  virtual Scores evaluate(const torch::Tensor& x, const torch::Tensor& train_mean) = 0;

  // Initial weights from `gen` (PyTorch's default initialisation), then `init`: "default", "duplicate"
  // (the units `duplication` names made exact copies: a permutation-symmetric saddle) or "zero"; seeded
  // weights are then multiplied by init_scale. Call on the CPU. Errors name duplicate_layers or
  // duplicate_units when a layer or unit does not exist.
  Status initialise(at::Generator& gen, const std::string& init, const Duplication& duplication = {});
  // The layers of units, for the symmetry probe and init duplicate. Their tensors are views of the
  // parameters (so that duplicate_units can write through them) unless the model overrides
  // duplicate_units.
  virtual std::vector<probes::LayerUnits> unit_layers() const = 0;
  // The units `d` names made copies of their first (initialise's duplicate step; twins.h uses it to find
  // the copies). Errors name duplicate_layers or duplicate_units. REQUIRES: no grad mode.
  Status duplicate(const Duplication& d);
  // The same architecture, float64, parameters uninitialised, on `device`.
  virtual std::shared_ptr<Model> float64_copy(torch::Device device) const = 0;

  // The ops loss() runs through op taps (probes/op_taps.h) at `batch` examples per step, in forward order;
  // none by default.
  virtual std::vector<probes::TapOp> tap_ops(int64_t /*batch*/) const { return {}; }
  // Routes loss()'s ops through `taps` from now on (nullptr: no taps). Costs one armed() test per op.
  virtual void set_op_taps(std::shared_ptr<probes::OpTaps> /*taps*/) {}

 protected:
  // PyTorch's default initialisation of every parameter, drawn from `gen` (initialise's first step).
  virtual void reset_parameters(at::Generator& gen) = 0;
  // Units units[1..] of `layer` (one of unit_layers()) made copies of units[0]: incoming weights, bias,
  // then outgoing weights. REQUIRES: units valid for the layer, no grad mode.
  virtual void duplicate_units(const probes::LayerUnits& layer, const std::vector<int64_t>& units);

 private:
  double init_scale_;
};

// The most examples (PredNet: sequences) one forward pass of Model::evaluate takes: the autoencoder's
// and PredNet's evaluations run in chunks so that their activations stay small; the linear model's
// rows in one pass. trainer/memory.cpp counts one chunk's activations.
int64_t eval_chunk(ModelKind model);

// The model `cfg` names for the examples of `data` (data.example_shape: (features) or (T, 1, H, W);
// data.target_columns for the linear network's input–target rows). Errors name the config key (e.g.
// prednet options that do not fit the frames) or the data a model cannot train on. On the CPU the run's
// large allocations are checked against the machine's memory first (trainer/memory.h): a config that
// cannot fit is an error naming the key that asked for the memory ("batch_size 100000: about 152.3 GiB
// for a training step ..."); so is a failure to allocate the parameters themselves.
Result<std::shared_ptr<Model>> make_model(const RunConfig& cfg, const Dataset& data);

}  // namespace saddlescope::trainer
