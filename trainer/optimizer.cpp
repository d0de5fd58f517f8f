#include "saddlescope/trainer/optimizer.h"

#include <torch/torch.h>

#include "saddlescope/trainer/adam.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/sgd.h"

namespace saddlescope::trainer {

OptimizerOptions optimizer_options(const RunConfig& cfg) {
  return {cfg.optimizer, cfg.lr, cfg.momentum, cfg.execution.kernels == "fused"};
}

Status copy_state(const std::map<std::string, torch::Tensor>& mine, const std::map<std::string, torch::Tensor>& in) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, t] : mine) {
    auto it = in.find(name);
    if (it == in.end()) return Status::Error("checkpoint lacks optimiser state " + name);
    if (!it->second.sizes().equals(t.sizes()) || it->second.scalar_type() != t.scalar_type())
      return Status::Error("checkpoint: optimiser state " + name + " has another shape or type than the model's");
    torch::Tensor(t).copy_(it->second);
  }
  return Status::Ok();
}

std::unique_ptr<DeviceOptimizer> make_optimizer(std::vector<torch::Tensor> params, const OptimizerOptions& o) {
  if (o.kind == "sgd") return std::make_unique<DeviceSgd>(std::move(params), o.lr, o.momentum);
  SADDLESCOPE_CHECK(o.kind == "adam" && o.momentum == 0);
  DeviceAdam::Options a;
  a.lr = o.lr;
  a.fused = o.fused;
  return std::make_unique<DeviceAdam>(std::move(params), a);
}

}  // namespace saddlescope::trainer
