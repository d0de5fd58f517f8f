#include "saddlescope/trainer/autoencoder.h"

#include <cmath>

#include <torch/torch.h>

namespace saddlescope::trainer {
namespace {

// A ModuleList whose children are named fc1, fc2, ... (ModuleList would name them 0, 1, ...).
class Stack : public torch::nn::Module {
 public:
  explicit Stack(const std::vector<int64_t>& widths) {
    for (size_t i = 0; i + 1 < widths.size(); ++i)
      layers.push_back(register_module("fc" + std::to_string(i + 1),
                                       torch::nn::Linear(widths[i], widths[i + 1])));
  }
  std::vector<torch::nn::Linear> layers;
};

}  // namespace

AutoencoderImpl::AutoencoderImpl(int64_t features, const std::vector<int64_t>& hidden, const std::string& fc1_kernel)
    : bag_(fc1_kernel == "index_add") {
  SADDLESCOPE_CHECK(fc1_kernel == "matmul" || fc1_kernel == "index_add");
  std::vector<int64_t> widths = {features};
  widths.insert(widths.end(), hidden.begin(), hidden.end());
  std::vector<int64_t> back(widths.rbegin(), widths.rend());
  auto enc = std::make_shared<Stack>(widths);
  auto dec = std::make_shared<Stack>(back);
  register_module("encoder", enc);
  register_module("decoder", dec);
  encoder_ = enc->layers;
  decoder_ = dec->layers;
  for (size_t i = 0; i < encoder_.size() + decoder_.size(); ++i)
    names_.push_back(i < encoder_.size() ? "encoder.fc" + std::to_string(i + 1)
                                         : "decoder.fc" + std::to_string(i - encoder_.size() + 1));
}

torch::Tensor AutoencoderImpl::forward(torch::Tensor x) {
  const bool tap = taps_ && taps_->armed();
  const size_t n = encoder_.size() + decoder_.size();
  for (size_t i = 0; i < n; ++i) {
    torch::nn::Linear& layer = i < encoder_.size() ? encoder_[i] : decoder_[i - encoder_.size()];
    torch::Tensor y = i == 0 && bag_ ? bag(x, layer) : layer->forward(x);
    torch::Tensor a = i + 1 < n ? torch::relu(y) : torch::sigmoid(y);
    if (tap) {
      taps_->linear(names_[i], x, layer->weight, layer->bias, y);
      taps_->elementwise(names_[i] + (i + 1 < n ? ".relu" : ".sigmoid"), y, a);
    }
    x = a;
  }
  return x;
}

torch::Tensor AutoencoderImpl::bag(const torch::Tensor& x, const torch::nn::Linear& layer) {
  const int64_t batch = x.size(0), in = x.size(1);
  // Built once per batch size (before any CUDA-graph capture: the first step runs eagerly).
  if (!example_.defined() || example_.size(0) != batch * in || example_.device() != x.device()) {
    auto longs = torch::TensorOptions().dtype(torch::kLong).device(x.device());
    example_ = torch::arange(batch, longs).repeat_interleave(in);
    column_ = torch::arange(in, longs).repeat({batch});
  }
  torch::Tensor terms = layer->weight.t().index_select(0, column_) * x.reshape({-1, 1});  // (batch·in, out)
  return torch::zeros({batch, layer->weight.size(0)}, x.options()).index_add(0, example_, terms) + layer->bias;
}

void AutoencoderImpl::reset_parameters(at::Generator& gen) {
  torch::NoGradGuard no_grad;
  for (auto* stack : {&encoder_, &decoder_})
    for (auto& linear : *stack) {
      double bound = 1.0 / std::sqrt(static_cast<double>(linear->weight.size(1)));
      linear->weight.uniform_(-bound, bound, gen);
      linear->bias.uniform_(-bound, bound, gen);
    }
}

std::vector<torch::nn::Linear> AutoencoderImpl::layers() const {
  std::vector<torch::nn::Linear> all = encoder_;
  all.insert(all.end(), decoder_.begin(), decoder_.end());
  return all;
}

std::vector<probes::TapOp> AutoencoderImpl::tap_ops(int64_t batch) const {
  std::vector<torch::nn::Linear> layers = this->layers();
  std::vector<probes::TapOp> ops;
  for (size_t i = 0; i < layers.size(); ++i) {
    const int64_t out = layers[i]->weight.size(0), in = layers[i]->weight.size(1);
    ops.push_back({names_[i], "linear", batch * out, out * in, 1});
    const bool last = i + 1 == layers.size();
    ops.push_back({names_[i] + (last ? ".sigmoid" : ".relu"), last ? "sigmoid" : "relu", batch * out, 0, 1});
  }
  return ops;
}

std::vector<probes::LayerUnits> AutoencoderImpl::unit_layers() const {
  std::vector<torch::nn::Linear> layers = this->layers();
  std::vector<probes::LayerUnits> units;
  for (size_t i = 0; i < layers.size(); ++i) {
    units.push_back({names_[i], layers[i]->weight.detach(), layers[i]->bias.detach(),
                     i + 1 < layers.size() ? layers[i + 1]->weight.detach() : at::Tensor()});
  }
  return units;
}

}  // namespace saddlescope::trainer
