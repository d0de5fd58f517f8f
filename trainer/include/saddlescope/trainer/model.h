// A model as the training loop, the probes and the evaluation see it: the autoencoder or PredNet.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/nn/module.h>
#include <torch/types.h>

#include "saddlescope/base/status.h"
#include "saddlescope/probes/op_taps.h"
#include "saddlescope/probes/symmetry.h"

namespace saddlescope::trainer {

struct RunConfig;

class Model {
 public:
  virtual ~Model() = default;

  // The module holding every parameter (named: encoder.fc1.weight, l0.lstm.i.weight, ...).
  virtual torch::nn::Module& module() = 0;
  // The training loss on a batch: (batch, features) for the autoencoder, (batch, T, 1, H, W) frames in
  // [0, 1] for PredNet, in the model's dtype and device.
  virtual torch::Tensor loss(const torch::Tensor& batch) = 0;
  // Mean squared error per pixel on `x` and the trivial baseline's ("mean training image" predicted for
  // every example; "previous frame" copied forward), accumulated in float64, with the baseline's name
  // and any details (per-frame errors) for the manifest.
  struct Scores {
    double mse = 0, baseline_mse = 0;
    std::string baseline;
    std::vector<double> per_frame_mse, per_frame_baseline_mse;  // PredNet only
  };
  virtual Scores evaluate(const torch::Tensor& x, const torch::Tensor& train_mean) = 0;

  // Initial weights from `gen` (PyTorch's default initialisation), then `init`: "default", "duplicate"
  // (every hidden unit a copy of the first; autoencoder only) or "zero". Call on the CPU.
  virtual Status initialise(at::Generator& gen, const std::string& init) = 0;
  // The layers for the symmetry probe; empty when the model has none to compare.
  virtual std::vector<probes::LayerUnits> unit_layers() const { return {}; }
  // The same architecture, float64, parameters uninitialised, on `device`.
  virtual std::shared_ptr<Model> float64_copy(torch::Device device) const = 0;

  // The ops loss() runs through op taps (probes/op_taps.h) at `batch` examples per step, in forward order.
  virtual std::vector<probes::TapOp> tap_ops(int64_t batch) const = 0;
  // Routes loss()'s ops through `taps` from now on (nullptr: no taps). Costs one armed() test per op.
  virtual void set_op_taps(std::shared_ptr<probes::OpTaps> taps) = 0;
};

// The model `cfg` names for inputs of shape `example_shape` (one example: (features) or (T, 1, H, W)).
// Errors name the config key (e.g. prednet options that do not fit the frames).
Result<std::shared_ptr<Model>> make_model(const RunConfig& cfg, const std::vector<int64_t>& example_shape);

}  // namespace saddlescope::trainer
