#include "saddlescope/trainer/step.h"

#include <torch/torch.h>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

torch::Tensor global_grad_norm(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> sq;
  for (const auto& p : params)
    if (p.grad().defined()) sq.push_back(p.grad().pow(2).sum());
  return torch::stack(sq).sum().sqrt();
}

torch::Tensor flatten_parameters(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> params = module.parameters();
  SADDLESCOPE_CHECK(!params.empty());
  int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  auto options = torch::TensorOptions().dtype(params[0].scalar_type()).device(params[0].device());
  torch::Tensor flat = torch::empty({n}, options), grads = torch::zeros({n}, options);
  int64_t at = 0;
  for (auto& p : params) {
    SADDLESCOPE_CHECK(p.scalar_type() == flat.scalar_type() && p.device() == flat.device());
    const int64_t k = p.numel();
    flat.narrow(0, at, k).copy_(p.reshape({-1}));
    p.set_(flat.narrow(0, at, k).view(p.sizes()));
    p.mutable_grad() = grads.narrow(0, at, k).view(p.sizes());
    at += k;
  }
  flat.mutable_grad() = grads;
  return flat;
}

TrainStep::TrainStep(Model& model, Perturber& perturb, const OptimizerOptions& optimizer, bool graphs,
                     bool alias_target)
    : model_(model), perturb_(perturb), params_(model.module().parameters()),
      flat_(flatten_parameters(model.module())), optimizer_(make_optimizer({flat_}, optimizer)), graphs_(graphs),
      alias_target_(alias_target), compute_graph_(graphs), update_graph_(graphs && perturb.step_capturable()) {
  auto scalar = torch::TensorOptions().dtype(flat_.scalar_type()).device(flat_.device());
  loss_ = torch::zeros({}, scalar);
  norm_ = torch::zeros({}, scalar);
}

TrainStep::~TrainStep() = default;

namespace {

// `buffer` as the graph's fixed input: `t` itself when nothing is captured, else a copy into one
// tensor that every replay reads.
void hold(torch::Tensor* buffer, const torch::Tensor& t, bool graphs) {
  if (!graphs) *buffer = t;
  else if (!buffer->defined()) *buffer = t.clone();
  else buffer->copy_(t);
}

}  // namespace

void TrainStep::compute(const torch::Tensor& batch, bool eager, const torch::Tensor& next) {
  hold(&input_, batch, graphs_);
  if (alias_target_) {
    SADDLESCOPE_CHECK(next.defined() && next.sizes() == batch.sizes());
    hold(&next_, next, graphs_);
    if (!target_.defined()) {  // both live as long as the step; made once, never inside a capture
      target_ = model_.loss_target(input_).detach().clone();
      target_alias_ = torch::from_blob(target_.data_ptr(), target_.sizes(), target_.strides(), target_.options());
    }
  }
  compute_graph_.run([&] {
    flat_.mutable_grad().zero_();
    torch::Tensor loss;
    if (!alias_target_) {
      loss = model_.loss(input_);
    } else {  // the fault (step.h): data copies, none of them requires grad
      target_.copy_(model_.loss_target(input_));
      loss = model_.loss_against(input_, target_alias_);
      target_.copy_(model_.loss_target(next_));  // the data pipeline overwrites the target buffer
    }
    loss.backward();
    loss_.copy_(loss.detach());
  }, eager);
}

std::string TrainStep::non_finite() const {
  torch::NoGradGuard no_grad;
  torch::Tensor ok = torch::stack({loss_.isfinite().all(), flat_.isfinite().all(), flat_.grad().isfinite().all()}).cpu();
  const char* names[] = {"the loss", "the parameters", "the gradients"};
  std::string what;
  for (int64_t i = 0; i < 3; ++i)
    if (!ok[i].item<bool>()) what += (what.empty() ? "" : i == 2 ? " and " : ", ") + std::string(names[i]);
  return what;
}

void TrainStep::update(bool eager) {
  update_graph_.run([&] {
    norm_.copy_(flat_.grad().norm());
    perturb_.step(*optimizer_, params_);
  }, eager);
}

}  // namespace saddlescope::trainer
