// The seed study's MLP autoencoder: D -> h1 -> ... -> hk -> ... -> h1 -> D, ReLU between layers,
// sigmoid output (targets are pixels in [0, 1]). Default 784 -> 256 -> 64 -> 256 -> 784.
//
// Stable names (for probes and taps): encoder.fc1..fck, decoder.fc1..fck, in forward order. Op taps
// (probes/op_taps.h): each layer as a linear op under its name, its activation as <name>.relu (the last
// layer's: <name>.sigmoid).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include "saddlescope/probes/op_taps.h"
#include "saddlescope/probes/symmetry.h"

namespace saddlescope::trainer {

class AutoencoderImpl : public torch::nn::Module {
 public:
  // REQUIRES: features >= 1, hidden non-empty with every width >= 1.
  AutoencoderImpl(int64_t features, const std::vector<int64_t>& hidden);

  // (batch, features) -> (batch, features), each output in (0, 1).
  torch::Tensor forward(torch::Tensor x);

  // PyTorch's default Linear initialisation (weights and biases uniform in ±1/sqrt(fan_in)) drawn from
  // `gen`, so that the weights depend on the seed alone, whatever else used the global generator.
  // Call on the CPU, before moving the model to a device: then every device starts bit-identical.
  void reset_parameters(at::Generator& gen);

  // Makes every hidden unit of each layer an exact copy of the layer's first unit (incoming weights,
  // bias and outgoing weights): a permutation-symmetric saddle that deterministic arithmetic can never
  // leave. Call after reset_parameters, on the CPU.
  void duplicate_hidden_units();

  // The layers in forward order, with each one's outgoing weights, for the symmetry probe.
  std::vector<probes::LayerUnits> unit_layers() const;

  // The linear ops and activations forward() runs through op taps, for `batch` examples.
  std::vector<probes::TapOp> tap_ops(int64_t batch) const;
  // Routes forward()'s ops through `taps` (nullptr: none).
  void set_op_taps(std::shared_ptr<probes::OpTaps> taps) { taps_ = std::move(taps); }

 private:
  std::vector<torch::nn::Linear> layers() const;  // encoder then decoder, in forward order

  std::vector<torch::nn::Linear> encoder_, decoder_;  // in forward order
  std::vector<std::string> names_;                    // of layers(), in forward order
  std::shared_ptr<probes::OpTaps> taps_;
};
TORCH_MODULE(Autoencoder);

}  // namespace saddlescope::trainer
