// The seed study's MLP autoencoder: D -> h1 -> ... -> hk -> ... -> h1 -> D, ReLU between layers,
// sigmoid output (targets are pixels in [0, 1]). Default 784 -> 256 -> 64 -> 256 -> 784.
//
// Stable names (for probes and taps): encoder.fc1..fck, decoder.fc1..fck, in forward order. Op taps
// (probes/op_taps.h): each layer as a linear op under its name, its activation as <name>.relu (the last
// layer's: <name>.sigmoid).
//
// fc1_kernel = index_add computes encoder.fc1 as an embedding bag instead of one GEMM (same parameters,
// same math): y[b] = bias + Σ_p x[b,p]·W[:,p], each term gathered (index_select of W's columns) and
// scatter-added into its example's row (index_add); its weight gradient is the transpose, an index_add
// into W's columns. On CUDA both index_adds are atomic adds whose order is the threads' (nondeterministic
// unless deterministic algorithms are on); on the CPU they run in index order.
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
  // REQUIRES: fc1_kernel is "matmul" or "index_add".
  AutoencoderImpl(int64_t features, const std::vector<int64_t>& hidden, const std::string& fc1_kernel = "matmul");

  // (batch, features) -> (batch, features), each output in (0, 1).
  torch::Tensor forward(torch::Tensor x);

  // PyTorch's default Linear initialisation (weights and biases uniform in ±1/sqrt(fan_in)) drawn from
  // `gen`, so that the weights depend on the seed alone, whatever else used the global generator.
  // Call on the CPU, before moving the model to a device: then every device starts bit-identical.
  void reset_parameters(at::Generator& gen);

  // The layers in forward order, with each one's outgoing weights (views of the parameters), for the
  // symmetry probe and init duplicate.
  std::vector<probes::LayerUnits> unit_layers() const;

  // The linear ops and activations forward() runs through op taps, for `batch` examples.
  std::vector<probes::TapOp> tap_ops(int64_t batch) const;
  // Routes forward()'s ops through `taps` (nullptr: none).
  void set_op_taps(std::shared_ptr<probes::OpTaps> taps) { taps_ = std::move(taps); }

 private:
  std::vector<torch::nn::Linear> layers() const;  // encoder then decoder, in forward order
  torch::Tensor bag(const torch::Tensor& x, const torch::nn::Linear& layer);  // fc1_kernel index_add

  bool bag_ = false;                 // fc1_kernel index_add
  torch::Tensor example_, column_;   // bag(): each term's example and input column, for the last batch size

  std::vector<torch::nn::Linear> encoder_, decoder_;  // in forward order
  std::vector<std::string> names_;                    // of layers(), in forward order
  std::shared_ptr<probes::OpTaps> taps_;
};
TORCH_MODULE(Autoencoder);

}  // namespace saddlescope::trainer
