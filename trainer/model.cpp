#include "saddlescope/trainer/model.h"

#include <algorithm>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include <torch/torch.h>

#include "saddlescope/base/memory.h"
#include "saddlescope/trainer/autoencoder.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/linear.h"
#include "saddlescope/trainer/memory.h"
#include "saddlescope/trainer/prednet.h"
#include "saddlescope/trainer/torchscript.h"

namespace saddlescope::trainer {

Status Model::initialise(at::Generator& gen, const std::string& init, const Duplication& duplication) {
  reset_parameters(gen);
  torch::NoGradGuard no_grad;
  if (init == "duplicate") SADDLESCOPE_RETURN_IF_ERROR(duplicate(duplication));
  for (auto& p : module().parameters()) {
    if (init == "zero") p.zero_();
    else if (init_scale_ != 1) p.mul_(init_scale_);
  }
  return Status::Ok();
}

Status Model::duplicate(const Duplication& d) {
  const std::vector<probes::LayerUnits> layers = unit_layers();
  std::string names;
  for (const auto& l : layers) names += (names.empty() ? "" : ", ") + l.name;
  for (const auto& name : d.layers)
    if (std::none_of(layers.begin(), layers.end(), [&](const probes::LayerUnits& l) { return l.name == name; }))
      return Status::Error("duplicate_layers: this model has no layer '" + name + "' (its layers: " + names + ")");
  for (const auto& layer : layers) {
    const bool chosen = d.layers.empty() ? layer.outgoing.defined()
                                         : std::find(d.layers.begin(), d.layers.end(), layer.name) != d.layers.end();
    if (!chosen) continue;
    const int64_t n = layer.incoming.size(0);
    std::vector<int64_t> units = d.units;
    if (units.empty())
      for (int64_t u = 0; u < n; ++u) units.push_back(u);
    for (int64_t u : units)
      if (u >= n)
        return Status::Error(fmt::format("duplicate_units: unit {} does not exist in layer {} of {} units", u,
                                         layer.name, n));
    if (units.size() >= 2) duplicate_units(layer, units);
  }
  return Status::Ok();
}

void Model::duplicate_units(const probes::LayerUnits& layer, const std::vector<int64_t>& units) {
  const int64_t first = units[0];
  for (const at::Tensor* part : {&layer.incoming, &layer.bias})
    if (part->defined())
      for (size_t k = 1; k < units.size(); ++k) part->select(0, units[k]).copy_(part->select(0, first));
  if (layer.outgoing.defined())  // unit j's outgoing weights: index j of dim 1
    for (size_t k = 1; k < units.size(); ++k) layer.outgoing.select(1, units[k]).copy_(layer.outgoing.select(1, first));
}

torch::Tensor Model::loss_against(const torch::Tensor&, const torch::Tensor&) {
  SADDLESCOPE_CHECK(false && "loss_against: this model's loss reads no target in its backward");
  return {};
}

namespace {

// A fresh model of the same architecture, made float64 on `device`: what every float64_copy returns.
std::shared_ptr<Model> as_float64(std::shared_ptr<Model> m, torch::Device device) {
  m->module().to(device, torch::kFloat64);
  return m;
}

class AutoencoderModel : public Model {
 public:
  AutoencoderModel(int64_t features, std::vector<int64_t> hidden, std::string fc1_kernel, double init_scale = 1)
      : Model(init_scale), features_(features), hidden_(std::move(hidden)), fc1_kernel_(std::move(fc1_kernel)),
        net_(features_, hidden_, fc1_kernel_) {}

  torch::nn::Module& module() override { return *net_; }
  torch::Tensor loss(const torch::Tensor& x) override { return loss_against(x, x); }
  torch::Tensor predict(const torch::Tensor& x) override { return net_->forward(x); }
  torch::Tensor loss_target(const torch::Tensor& x) const override { return x; }
  torch::Tensor loss_against(const torch::Tensor& x, const torch::Tensor& target) override {
    torch::Tensor out = net_->forward(x);
    torch::Tensor loss = torch::mse_loss(out, target);
    if (taps_ && taps_->armed()) taps_->mse_loss("loss", out, x, loss);  // the target as the forward saw it
    return loss;
  }

  Scores evaluate(const torch::Tensor& x, const torch::Tensor& mean) override {
    torch::NoGradGuard no_grad;
    net_->eval();
    double model_se = 0, base_se = 0;
    const int64_t chunk = eval_chunk(ModelKind::kAutoencoder);
    for (int64_t i = 0; i < x.size(0); i += chunk) {
      auto batch = x.narrow(0, i, std::min(chunk, x.size(0) - i));
      model_se += (net_->forward(batch) - batch).pow(2).sum(torch::kFloat64).item<double>();
      base_se += (batch - mean).pow(2).sum(torch::kFloat64).item<double>();
    }
    net_->train();
    double n = static_cast<double>(x.numel());
    return {model_se / n, base_se / n, "mean training image", {}, {}};
  }

  std::vector<probes::LayerUnits> unit_layers() const override { return net_->unit_layers(); }
  std::shared_ptr<Model> float64_copy(torch::Device device) const override {
    return as_float64(std::make_shared<AutoencoderModel>(features_, hidden_, fc1_kernel_), device);
  }

 protected:
  void reset_parameters(at::Generator& gen) override { net_->reset_parameters(gen); }
  std::vector<probes::TapOp> tap_ops(int64_t batch) const override {
    std::vector<probes::TapOp> ops = net_->tap_ops(batch);
    ops.push_back({"loss", "mse_loss", 1, 0, 1});
    return ops;
  }
  void set_op_taps(std::shared_ptr<probes::OpTaps> taps) override {
    net_->set_op_taps(taps);
    taps_ = std::move(taps);
  }

 private:
  int64_t features_;
  std::vector<int64_t> hidden_;
  std::string fc1_kernel_;
  Autoencoder net_;
  std::shared_ptr<probes::OpTaps> taps_;
};

class PredNetModel : public Model {
 public:
  explicit PredNetModel(const PredNetOptions& o, double init_scale = 1) : Model(init_scale), net_(o) {}

  torch::nn::Module& module() override { return *net_; }
  torch::Tensor loss(const torch::Tensor& x) override {
    PredNetOutput out = net_->forward(x);
    if (net_->options().loss != "pixel_mse") return prednet_loss(out, x, net_->options().loss);
    // pixel_mse's backward node is what the taps hook for the loss's gradient (dgrad).
    const int64_t later = x.size(1) - 1;  // the frames the loss scores
    torch::Tensor prediction = out.prediction.narrow(1, 1, later), frames = x.narrow(1, 1, later);
    torch::Tensor loss = pixel_mse(prediction, frames);
    if (taps_ && taps_->armed()) taps_->mse_loss("loss", prediction, frames, loss);
    return loss;
  }
  torch::Tensor predict(const torch::Tensor& x) override { return net_->forward(x).prediction; }
  torch::Tensor loss_target(const torch::Tensor& x) const override {
    return net_->options().loss == "pixel_mse" ? x.narrow(1, 1, x.size(1) - 1) : torch::Tensor();
  }
  // pixel_mse (one torch::mse_loss, whose backward reads `target` again) against `target`.
  torch::Tensor loss_against(const torch::Tensor& x, const torch::Tensor& target) override {
    SADDLESCOPE_CHECK(net_->options().loss == "pixel_mse");
    const int64_t later = x.size(1) - 1;
    torch::Tensor prediction = net_->forward(x).prediction.narrow(1, 1, later);
    torch::Tensor loss = pixel_mse(prediction, target);
    if (taps_ && taps_->armed()) taps_->mse_loss("loss", prediction, x.narrow(1, 1, later), loss);
    return loss;
  }

  Scores evaluate(const torch::Tensor& x, const torch::Tensor&) override {
    torch::NoGradGuard no_grad;
    const int64_t n = x.size(0), chunk = eval_chunk(ModelKind::kPredNet);
    auto frames = static_cast<size_t>(x.size(1) - 1);  // scored frames t = 1 .. T-1
    Scores s{0, 0, "previous frame", std::vector<double>(frames, 0.0), std::vector<double>(frames, 0.0)};
    for (int64_t i = 0; i < n; i += chunk) {
      auto batch = x.narrow(0, i, std::min(chunk, n - i));
      FrameScores f = score_predictions(net_->forward(batch).prediction, batch);
      double w = static_cast<double>(batch.size(0)) / static_cast<double>(n);
      for (size_t t = 0; t < frames; ++t) {
        s.per_frame_mse[t] += w * f.model_mse[t];
        s.per_frame_baseline_mse[t] += w * f.previous_mse[t];
      }
      s.mse += w * f.model_mean;
      s.baseline_mse += w * f.previous_mean;
    }
    return s;
  }

  std::shared_ptr<Model> float64_copy(torch::Device device) const override {
    return as_float64(std::make_shared<PredNetModel>(net_->options()), device);
  }
  std::vector<probes::LayerUnits> unit_layers() const override { return net_->unit_layers(); }
  // The L0 and Lall losses are weighted means of error units, not an op of reference/: only pixel_mse is
  // tapped as "loss".
  std::vector<probes::TapOp> tap_ops(int64_t batch) const override {
    std::vector<probes::TapOp> ops = net_->tap_ops(batch, net_->options().nt);
    if (net_->options().loss == "pixel_mse") ops.push_back({"loss", "mse_loss", 1, 0, 1});
    return ops;
  }
  void set_op_taps(std::shared_ptr<probes::OpTaps> taps) override {
    net_->set_op_taps(taps);
    taps_ = std::move(taps);
  }

 protected:
  void reset_parameters(at::Generator& gen) override { net_->reset_parameters(gen); }
  // unit_layers() are copies: the channels are copied in the gates and their readers themselves.
  void duplicate_units(const probes::LayerUnits& layer, const std::vector<int64_t>& units) override {
    net_->duplicate_channels(std::stoll(layer.name.substr(1)), units);  // "l<l>.r"
  }

 private:
  PredNet net_;
  std::shared_ptr<probes::OpTaps> taps_;
};

// y = W2·W1·x on rows [x, y]: the first `inputs` columns are x, the rest the target.
class LinearModel : public Model {
 public:
  LinearModel(int64_t inputs, int64_t hidden, int64_t outputs, double init_scale = 1)
      : Model(init_scale), net_(inputs, hidden, outputs) {}

  torch::nn::Module& module() override { return *net_; }
  torch::Tensor loss(const torch::Tensor& rows) override { return net_->loss(input(rows), target(rows)); }
  torch::Tensor predict(const torch::Tensor& rows) override { return net_->forward(input(rows)); }
  torch::Tensor loss_target(const torch::Tensor& rows) const override { return target(rows); }
  torch::Tensor loss_against(const torch::Tensor& rows, const torch::Tensor& y) override {
    return net_->loss_reading_target(input(rows), y);
  }

  Scores evaluate(const torch::Tensor& rows, const torch::Tensor& train_mean) override {
    torch::NoGradGuard no_grad;
    torch::Tensor y = target(rows);
    double model_se = (net_->forward(input(rows)) - y).pow(2).sum(torch::kFloat64).item<double>();
    double base_se = (y - train_mean.narrow(0, net_->inputs(), net_->outputs())).pow(2).sum(torch::kFloat64).item<double>();
    double n = static_cast<double>(y.numel());
    return {model_se / n, base_se / n, "mean training target", {}, {}};
  }

  std::vector<probes::LayerUnits> unit_layers() const override { return net_->unit_layers(); }
  std::shared_ptr<Model> float64_copy(torch::Device device) const override {
    return as_float64(std::make_shared<LinearModel>(net_->inputs(), net_->hidden(), net_->outputs()), device);
  }

 protected:
  void reset_parameters(at::Generator& gen) override { net_->reset_parameters(gen); }

 private:
  torch::Tensor input(const torch::Tensor& rows) const { return rows.narrow(1, 0, net_->inputs()); }
  torch::Tensor target(const torch::Tensor& rows) const { return rows.narrow(1, net_->inputs(), net_->outputs()); }

  LinearNet net_;
};

Result<std::shared_ptr<Model>> build_model(const RunConfig& cfg, const Dataset& data) {
  const std::vector<int64_t>& shape = data.example_shape;
  // load_dataset gives the linear network input-target pairs, and only it.
  SADDLESCOPE_CHECK(cfg.model == ModelKind::kTorchScript || (cfg.model == ModelKind::kLinear) == (data.target_columns > 0));
  if (cfg.model == ModelKind::kTorchScript) return load_torchscript(cfg, data);
  if (cfg.model == ModelKind::kLinear) {
    return std::shared_ptr<Model>(std::make_shared<LinearModel>(shape[0] - data.target_columns, cfg.linear_hidden,
                                                                data.target_columns, cfg.init_scale));
  }
  if (cfg.model == ModelKind::kAutoencoder) {
    if (shape.size() != 1) return Status::Error("model autoencoder needs examples of features, not sequences (data " + cfg.data + ")");
    return std::shared_ptr<Model>(std::make_shared<AutoencoderModel>(shape[0], cfg.hidden, cfg.fc1_kernel, cfg.init_scale));
  }
  if (shape.size() != 4) return Status::Error("model prednet needs frame sequences (data moving-mnist), not " + cfg.data);
  PredNetOptions o;
  if (cfg.prednet.stack_sizes[0] != shape[1])
    return Status::Error("prednet_stacks[0] must be the frames' channels, " + std::to_string(shape[1]) +
                         ", got " + std::to_string(cfg.prednet.stack_sizes[0]));
  int64_t layers = static_cast<int64_t>(cfg.prednet.stack_sizes.size()), factor = int64_t{1} << (layers - 1);
  if (shape[2] % factor != 0 || shape[3] % factor != 0)
    return Status::Error("canvas must be a multiple of 2^(layers-1) = " + std::to_string(factor) + " for " +
                         std::to_string(layers) + " PredNet layers (prednet_stacks), got " + std::to_string(shape[2]));
  o.stack_sizes = cfg.prednet.stack_sizes;
  o.r_stack_sizes = cfg.prednet.stack_sizes;  // R stack sizes as the A stack sizes (Lotter et al.)
  o.height = shape[2];
  o.width = shape[3];
  o.nt = shape[0];
  o.loss = cfg.prednet.loss;
  o.zero_bias = cfg.prednet.zero_bias;
  o.fused = cfg.execution.kernels == "fused";
  SADDLESCOPE_RETURN_IF_ERROR(validate(o));
  return std::shared_ptr<Model>(std::make_shared<PredNetModel>(o, cfg.init_scale));
}

}  // namespace

int64_t eval_chunk(ModelKind model) {
  if (model == ModelKind::kPredNet) return 16;
  if (model == ModelKind::kAutoencoder) return 1000;
  if (model == ModelKind::kTorchScript) return 256;  // a ResNet's activations at 256 images: tens of MB
  return std::numeric_limits<int64_t>::max();
}

Result<std::shared_ptr<Model>> make_model(const RunConfig& cfg, const Dataset& data) {
  std::optional<Result<std::shared_ptr<Model>>> model;
  SADDLESCOPE_RETURN_IF_ERROR(
      allocating(model_size_key(cfg), "the model's parameters", [&] { model.emplace(build_model(cfg, data)); }));
  if (!*model) return std::move(*model);
  // On a CUDA device the large tensors live in the GPU's memory, which LibTorch checks itself.
  if (!cfg.execution.device.is_cuda())
    SADDLESCOPE_RETURN_IF_ERROR(check_memory(run_memory(cfg, data, ***model), memory_limit_bytes()));
  return std::move(*model);
}

}  // namespace saddlescope::trainer
