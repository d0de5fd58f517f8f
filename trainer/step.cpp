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

TrainStep::TrainStep(Model& model, Perturber& perturb, DeviceAdam::Options adam, bool graphs)
    : model_(model), perturb_(perturb), params_(model.module().parameters()),
      flat_(flatten_parameters(model.module())), adam_({flat_}, adam), graphs_(graphs),
      compute_graph_(graphs), update_graph_(graphs && perturb.step_capturable()) {
  auto scalar = torch::TensorOptions().dtype(flat_.scalar_type()).device(flat_.device());
  loss_ = torch::zeros({}, scalar);
  norm_ = torch::zeros({}, scalar);
}

void TrainStep::compute(const torch::Tensor& batch, bool eager) {
  if (!graphs_) input_ = batch;
  else if (!input_.defined()) input_ = batch.clone();  // the graph's input buffer
  else input_.copy_(batch);
  compute_graph_.run([&] {
    flat_.mutable_grad().zero_();
    torch::Tensor loss = model_.loss(input_);
    loss.backward();
    loss_.copy_(loss.detach());
  }, eager);
}

void TrainStep::update() {
  update_graph_.run([&] {
    norm_.copy_(flat_.grad().norm());
    perturb_.step(adam_, params_);
  });
}

}  // namespace saddlescope::trainer
