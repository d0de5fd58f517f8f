#include "saddlescope/trainer/model.h"

#include <torch/torch.h>

#include "saddlescope/trainer/autoencoder.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/prednet.h"

namespace saddlescope::trainer {
namespace {

class AutoencoderModel : public Model {
 public:
  AutoencoderModel(int64_t features, std::vector<int64_t> hidden)
      : features_(features), hidden_(std::move(hidden)), net_(features_, hidden_) {}

  torch::nn::Module& module() override { return *net_; }
  torch::Tensor loss(const torch::Tensor& x) override {
    torch::Tensor out = net_->forward(x);
    torch::Tensor loss = torch::mse_loss(out, x);
    if (taps_ && taps_->armed()) taps_->mse_loss("loss", out, x, loss);
    return loss;
  }

  Scores evaluate(const torch::Tensor& x, const torch::Tensor& mean) override {
    torch::NoGradGuard no_grad;
    net_->eval();
    double model_se = 0, base_se = 0;
    for (int64_t i = 0; i < x.size(0); i += 1000) {
      auto batch = x.narrow(0, i, std::min<int64_t>(1000, x.size(0) - i));
      model_se += (net_->forward(batch) - batch).pow(2).sum(torch::kFloat64).item<double>();
      base_se += (batch - mean).pow(2).sum(torch::kFloat64).item<double>();
    }
    net_->train();
    double n = static_cast<double>(x.numel());
    return {model_se / n, base_se / n, "mean training image", {}, {}};
  }

  Status initialise(at::Generator& gen, const std::string& init) override {
    net_->reset_parameters(gen);
    if (init == "duplicate") net_->duplicate_hidden_units();
    if (init == "zero") net_->zero_parameters();
    return Status::Ok();
  }
  std::vector<probes::LayerUnits> unit_layers() const override { return net_->unit_layers(); }
  std::shared_ptr<Model> float64_copy(torch::Device device) const override {
    auto m = std::make_shared<AutoencoderModel>(features_, hidden_);
    m->net_->to(torch::kFloat64);
    m->net_->to(device);
    return m;
  }
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
  Autoencoder net_;
  std::shared_ptr<probes::OpTaps> taps_;
};

class PredNetModel : public Model {
 public:
  explicit PredNetModel(const PredNetOptions& o) : net_(o) {}

  torch::nn::Module& module() override { return *net_; }
  torch::Tensor loss(const torch::Tensor& x) override {
    PredNetOutput out = net_->forward(x);
    torch::Tensor loss = prednet_loss(out, x, net_->options().loss);
    if (taps_ && taps_->armed() && net_->options().loss == "pixel_mse") {
      const int64_t later = x.size(1) - 1;  // the frames the loss scores
      taps_->mse_loss("loss", out.prediction.narrow(1, 1, later), x.narrow(1, 1, later), loss);
    }
    return loss;
  }

  Scores evaluate(const torch::Tensor& x, const torch::Tensor&) override {
    torch::NoGradGuard no_grad;
    int64_t n = x.size(0), chunk = 16;
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

  Status initialise(at::Generator& gen, const std::string& init) override {
    if (init == "duplicate") return Status::Error("init duplicate is defined for the autoencoder only");
    net_->reset_parameters(gen);
    if (init == "zero") {
      torch::NoGradGuard no_grad;
      for (auto& p : net_->parameters()) p.zero_();
    }
    return Status::Ok();
  }
  std::shared_ptr<Model> float64_copy(torch::Device device) const override {
    auto m = std::make_shared<PredNetModel>(net_->options());
    m->net_->to(torch::kFloat64);
    m->net_->to(device);
    return m;
  }
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

 private:
  PredNet net_;
  std::shared_ptr<probes::OpTaps> taps_;
};

}  // namespace

Result<std::shared_ptr<Model>> make_model(const RunConfig& cfg, const std::vector<int64_t>& shape) {
  if (cfg.model == "autoencoder") {
    if (shape.size() != 1) return Status::Error("model autoencoder needs examples of features, not sequences (data " + cfg.data + ")");
    return std::shared_ptr<Model>(std::make_shared<AutoencoderModel>(shape[0], cfg.hidden));
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
  SADDLESCOPE_RETURN_IF_ERROR(validate(o));
  return std::shared_ptr<Model>(std::make_shared<PredNetModel>(o));
}

}  // namespace saddlescope::trainer
