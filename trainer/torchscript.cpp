#include "saddlescope/trainer/torchscript.h"

#include <algorithm>

#include <fmt/format.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/initial.h"
#include "shape_text.h"

namespace saddlescope::trainer {
namespace {

// A LibTorch error in one line: a c10::Error's first line without its C++ backtrace; the last line of
// the TorchScript interpreter's (its traceback comes first, "RuntimeError: ..." last).
std::string one_line(const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  std::string what = c10 ? c10->what_without_backtrace() : e.what();
  if (c10) return what.substr(0, what.find('\n'));
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
  return what.substr(what.rfind('\n') + 1);
}

// The parameters and buffers of a TorchScript module registered in a tree of nn::Modules that mirrors
// its submodules: the trainer's nn::Module interface (parameters(), named_parameters() with the
// module's own names, to(), train()) then reaches the very tensors the script runs on.
class ScriptTree : public torch::nn::Module {
 public:
  explicit ScriptTree(const torch::jit::Module& m) { mirror(*this, m); }

  // Floating tensors take `dtype`; integer buffers (BatchNorm's num_batches_tracked) keep theirs, as
  // PyTorch's Module.to does.
  void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false) override { move(device, dtype, non_blocking); }
  void to(torch::Dtype dtype, bool non_blocking = false) override { move({}, dtype, non_blocking); }
  void to(torch::Device device, bool non_blocking = false) override { move(device, {}, non_blocking); }

 private:
  static void mirror(torch::nn::Module& into, const torch::jit::Module& from) {
    for (const auto& p : from.named_parameters(/*recurse=*/false)) into.register_parameter(p.name, p.value);
    for (const auto& b : from.named_buffers(/*recurse=*/false)) into.register_buffer(b.name, b.value);
    for (const auto& child : from.named_children()) {
      auto sub = std::make_shared<torch::nn::Module>(child.name);
      mirror(*sub, child.value);
      into.register_module(child.name, sub);
    }
  }
  void move(c10::optional<torch::Device> device, c10::optional<torch::Dtype> dtype, bool non_blocking) {
    auto to = [&](at::Tensor t) {
      const torch::Dtype d = dtype && t.is_floating_point() ? *dtype : t.scalar_type();
      t.set_data(t.to(device.value_or(t.device()), d, non_blocking));
    };
    for (auto& p : parameters()) to(p);
    for (auto& b : buffers()) to(b);
  }
};

class TorchScriptModel : public Model {
 public:
  TorchScriptModel(torch::jit::Module script, const RunConfig& cfg, const Dataset& data)
      : Model(cfg.init_scale), script_(std::move(script)), tree_(std::make_shared<ScriptTree>(script_)),
        file_(cfg.model_file), loss_(cfg.loss), input_shape_(data.input_shape),
        target_columns_(data.target_columns) {}

  torch::nn::Module& module() override { return *tree_; }

  torch::Tensor loss(const torch::Tensor& rows) override { return loss_against(rows, target(rows)); }
  torch::Tensor predict(const torch::Tensor& rows) override {
    script_.eval();  // the module's own flag, which its forward reads (the mirror tree's is unused)
    torch::Tensor pred = forward(input(rows));
    script_.train();
    return pred;
  }
  torch::Tensor loss_target(const torch::Tensor& rows) const override {
    return loss_ == "mse" ? target(rows) : torch::Tensor();
  }
  torch::Tensor loss_against(const torch::Tensor& rows, const torch::Tensor& target) override {
    return loss_of(forward(input(rows)), target);
  }

  Scores evaluate(const torch::Tensor& rows, const torch::Tensor& train_mean) override {
    torch::NoGradGuard no_grad;
    script_.eval();  // the module's own flag, which its forward reads (the mirror tree's is unused)
    const int64_t n = rows.size(0), chunk = eval_chunk(ModelKind::kTorchScript);
    double model_se = 0, base_se = 0, elements = 0, ce = 0, base_ce = 0, correct = 0, labels = 0;
    for (int64_t i = 0; i < n; i += chunk) {
      torch::Tensor batch = rows.narrow(0, i, std::min(chunk, n - i));
      torch::Tensor pred = forward(input(batch)), y = target(batch);
      if (loss_ == "cross_entropy") {
        // Brier's score as the MSE (softmax probabilities against one-hot labels, per class), beside
        // the cross entropy and the accuracy; the baseline predicts the training classes' frequencies.
        torch::Tensor logits = pred.reshape({-1, pred.size(-1)}).to(torch::kFloat64);
        torch::Tensor label = y.reshape({-1}).to(torch::kLong);
        torch::Tensor one_hot = torch::one_hot(label, logits.size(1)).to(torch::kFloat64);
        torch::Tensor prior = prior_.to(logits.device());
        model_se += (logits.softmax(1) - one_hot).pow(2).sum().item<double>();
        base_se += (prior.unsqueeze(0) - one_hot).pow(2).sum().item<double>();
        elements += static_cast<double>(one_hot.numel());
        ce += torch::nn::functional::cross_entropy(logits, label, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)).item<double>();
        base_ce -= prior.log().index_select(0, label).sum().item<double>();
        correct += (logits.argmax(1) == label).sum().item<double>();
        labels += static_cast<double>(label.numel());
      } else {
        // The mean training target (or input) predicted for every example.
        // Squares in the model's dtype, summed in float64: the built-in models' formula.
        torch::Tensor t = y.reshape(pred.sizes());
        torch::Tensor mean = target(train_mean.unsqueeze(0)).reshape({1, -1});
        model_se += (pred - t).pow(2).sum(torch::kFloat64).item<double>();
        base_se += (t.reshape({t.size(0), -1}) - mean).pow(2).sum(torch::kFloat64).item<double>();
        elements += static_cast<double>(t.numel());
      }
    }
    script_.train();
    Scores s{model_se / elements, base_se / elements,
             loss_ == "cross_entropy" ? "training class frequencies" : "mean training target", {}, {}};
    if (loss_ == "cross_entropy") {
      s.cross_entropy = ce / labels;
      s.baseline_cross_entropy = base_ce / labels;
      s.accuracy = correct / labels;
    }
    return s;
  }

  std::vector<probes::LayerUnits> unit_layers() const override {
    // Every weight of two or more dimensions, its units along dim 0 (a Linear's rows, a conv's output
    // channels), with the bias beside it. A module's next layer is not known, so no outgoing weights.
    std::vector<probes::LayerUnits> layers;
    std::map<std::string, at::Tensor> named;
    for (const auto& p : script_.named_parameters()) named[p.name] = p.value;
    for (const auto& p : script_.named_parameters()) {
      if (p.value.dim() < 2) continue;
      probes::LayerUnits l{p.name, p.value, {}, {}};
      const std::string stem = p.name.substr(0, p.name.rfind('.') + 1);
      if (auto it = named.find(stem + "bias");
          p.name.size() > 7 && p.name.compare(p.name.size() - 7, 7, ".weight") == 0 && it != named.end() &&
          it->second.dim() == 1 && it->second.size(0) == p.value.size(0))
        l.bias = it->second;
      layers.push_back(l);
    }
    return layers;
  }

  void set_op_taps(std::shared_ptr<probes::OpTaps> taps) override {
    if (!taps) return;
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (const auto& p : script_.named_parameters()) named.emplace_back(p.name, p.value);
    taps->name_parameters(named);
  }

  std::shared_ptr<Model> float64_copy(torch::Device device) const override {
    auto copy = std::make_shared<TorchScriptModel>(*this, script_.clone());
    copy->module().to(device, torch::kFloat64);
    return copy;
  }

  // The shared checks of load_torchscript (torchscript.h) on the first examples of `data`.
  Status check(const Dataset& data, torch::Dtype dtype) {
    if (script_.parameters().size() == 0)
      return Status::Error("model_file " + file_ + ": the module has no parameters to train");
    if (loss_ == "module" && !script_.find_method("loss"))
      return Status::Error("loss module: model_file " + file_ + " has no scripted method loss(prediction, target)");
    torch::Tensor rows = data.train.narrow(0, 0, std::min<int64_t>(2, data.train.size(0))).to(dtype);
    torch::NoGradGuard no_grad;
    std::shared_ptr<TorchScriptModel> probe = dtype == torch::kFloat32 ? nullptr
        : std::static_pointer_cast<TorchScriptModel>(float64_copy(torch::kCPU));
    TorchScriptModel& m = probe ? *probe : *this;
    torch::Tensor x = input(rows), pred;
    try {
      torch::jit::IValue out = m.script_.forward({x});
      if (!out.isTensor())
        return Status::Error(fmt::format("model_file {}: forward(x) must return the prediction as one tensor, got {}",
                                         file_, out.tagKind()));
      pred = out.toTensor();
    } catch (const std::exception& e) {
      return Status::Error(fmt::format("model_file {}: forward fails on input of shape {} {} from data {}: {}", file_,
                                       shape_text(x.sizes()), c10::toString(x.scalar_type()), data.source,
                                       one_line(e)));
    }
    if (!pred.is_floating_point())
      return Status::Error(fmt::format("model_file {}: forward returned {} values; the prediction must be floating",
                                       file_, c10::toString(pred.scalar_type())));
    if (loss_ == "cross_entropy") {
      SADDLESCOPE_RETURN_IF_ERROR(check_classes(data, pred));
    } else if (loss_ == "mse") {
      const int64_t want = target(rows).numel(), got = pred.numel();
      if (want != got)
        return Status::Error(fmt::format("loss mse: model_file {} predicts {} values for {} examples (shape {}), the "
                                         "target of data {} has {}", file_, got, rows.size(0), shape_text(pred.sizes()),
                                         data.source, want));
    }
    try {
      torch::Tensor l = m.loss_of(pred, target(rows));
      if (l.numel() != 1 || !l.is_floating_point())
        return Status::Error(fmt::format("loss {}: must give one floating value, got shape {}", loss_, shape_text(l.sizes())));
    } catch (const std::exception& e) {
      return Status::Error(fmt::format("loss {}: fails on model_file {}'s prediction of shape {}: {}", loss_, file_,
                                       shape_text(pred.sizes()), one_line(e)));
    }
    return Status::Ok();
  }

  // float64_copy's: `other`'s settings over `script`, a copy of its module.
  TorchScriptModel(const TorchScriptModel& other, torch::jit::Module script)
      : Model(1), script_(std::move(script)), tree_(std::make_shared<ScriptTree>(script_)), file_(other.file_),
        loss_(other.loss_), input_shape_(other.input_shape_), target_columns_(other.target_columns_),
        prior_(other.prior_) {}

 protected:
  // The file's weights, as loaded: load_torchscript makes every model afresh from the file, and the seed
  // draws nothing.
  void reset_parameters(at::Generator&) override {}

 private:
  // Labels are integers in [0, C) for a prediction of C classes in its last dimension, one label per
  // prediction row; the training frequencies of the classes become the evaluation's baseline.
  Status check_classes(const Dataset& data, const torch::Tensor& pred) {
    if (target_columns_ < 1)
      return Status::Error("loss cross_entropy: data " + data.source + " holds no class labels");
    const int64_t n = pred.size(0), classes = pred.dim() >= 2 ? pred.size(-1) : 0;
    if (pred.dim() < 2 || pred.numel() / (n * classes) != target_columns_)
      return Status::Error(fmt::format("loss cross_entropy: model_file {} predicts shape {} for {} examples; it must "
                                       "end in the classes, one row per label ({} per example)",
                                       file_, shape_text(pred.sizes()), n, target_columns_));
    torch::Tensor labels = data.train.narrow(1, data.train.size(1) - target_columns_, target_columns_).reshape({-1});
    const double top = labels.max().item<double>();
    if (top >= static_cast<double>(classes))
      return Status::Error(fmt::format("loss cross_entropy: data {} has label {}, but model_file {} predicts {} classes",
                                       data.source, top, file_, classes));
    prior_ = torch::bincount(labels.to(torch::kLong), {}, classes).to(torch::kFloat64);
    prior_ = (prior_ / prior_.sum()).clamp_min(1e-300);  // a class never seen: no log(0)
    return Status::Ok();
  }

  torch::Tensor forward(const torch::Tensor& x) { return script_.forward({x}).toTensor(); }
  torch::Tensor input(const torch::Tensor& rows) const {
    std::vector<int64_t> shape = {rows.size(0)};
    shape.insert(shape.end(), input_shape_.begin(), input_shape_.end());
    return rows.narrow(1, 0, rows.size(1) - target_columns_).reshape(shape);
  }
  // The target part of the rows; the inputs themselves when the data has none.
  torch::Tensor target(const torch::Tensor& rows) const {
    return target_columns_ == 0 ? rows : rows.narrow(1, rows.size(1) - target_columns_, target_columns_);
  }
  torch::Tensor loss_of(const torch::Tensor& pred, const torch::Tensor& target) {
    if (loss_ == "mse") return torch::mse_loss(pred, target.reshape(pred.sizes()));
    if (loss_ == "cross_entropy")
      return torch::nn::functional::cross_entropy(pred.reshape({-1, pred.size(-1)}), target.reshape({-1}).to(torch::kLong));
    return script_.get_method("loss")({pred, target}).toTensor();
  }

  torch::jit::Module script_;
  std::shared_ptr<ScriptTree> tree_;
  std::string file_, loss_;
  std::vector<int64_t> input_shape_;
  int64_t target_columns_;
  torch::Tensor prior_;  // cross_entropy: the training classes' frequencies, float64
};

}  // namespace

Result<std::shared_ptr<Model>> load_torchscript(const RunConfig& cfg, const Dataset& data) {
  // The ops as written: no fusion, no profiling-driven rewrites of the graph between steps.
  torch::jit::setGraphExecutorOptimize(false);
  torch::jit::Module script;
  try {
    script = torch::jit::load(cfg.model_file, torch::kCPU);
  } catch (const std::exception& e) {
    return Status::Error(fmt::format("model_file {}: not a TorchScript module saved with torch.jit.save ({})",
                                     cfg.model_file, one_line(e)));
  }
  script.train();
  auto model = std::make_shared<TorchScriptModel>(std::move(script), cfg, data);
  SADDLESCOPE_RETURN_IF_ERROR(model->check(data, dtype_of(cfg)));
  return std::shared_ptr<Model>(model);
}

}  // namespace saddlescope::trainer
