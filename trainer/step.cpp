#include "saddlescope/trainer/step.h"

#include <torch/torch.h>

namespace saddlescope::trainer {

torch::Tensor global_grad_norm(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> sq;
  for (const auto& p : params)
    if (p.grad().defined()) sq.push_back(p.grad().pow(2).sum());
  return torch::stack(sq).sum().sqrt();
}

TrainStep::TrainStep(Model& model, Perturber& perturb, DeviceAdam& adam, bool graphs)
    : model_(model), perturb_(perturb), adam_(adam), params_(model.module().parameters()), graphs_(graphs),
      compute_graph_(graphs), update_graph_(graphs && perturb.step_capturable()) {
  auto scalar = params_.at(0).options().requires_grad(false);
  loss_ = torch::zeros({}, scalar);
  norm_ = torch::zeros({}, scalar);
}

void TrainStep::compute(const torch::Tensor& batch, bool eager) {
  if (!graphs_) input_ = batch;
  else if (!input_.defined()) input_ = batch.clone();  // the graph's input buffer
  else input_.copy_(batch);
  compute_graph_.run([&] {
    for (auto& p : params_)
      if (p.grad().defined()) p.mutable_grad().zero_();
    torch::Tensor loss = model_.loss(input_);
    loss.backward();
    loss_.copy_(loss.detach());
  }, eager);
}

void TrainStep::update() {
  update_graph_.run([&] {
    norm_.copy_(global_grad_norm(params_));
    perturb_.step(adam_, params_);
  });
}

}  // namespace saddlescope::trainer
