#include "saddlescope/trainer/initial.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/trainer/snapshot.h"

namespace saddlescope::trainer {

torch::Dtype dtype_of(const RunConfig& cfg) {
  return cfg.execution.dtype == Dtype::kFloat64 ? torch::kFloat64 : torch::kFloat32;
}

int64_t parameter_count(Model& model) {
  int64_t n = 0;
  for (const auto& p : model.module().parameters()) n += p.numel();
  return n;
}

std::vector<std::pair<std::string, at::Tensor>> named_parameters(Model& model) {
  std::vector<std::pair<std::string, at::Tensor>> named;
  for (const auto& p : model.module().named_parameters()) named.emplace_back(p.key(), p.value());
  return named;
}

bool generic_op_taps(const RunConfig& cfg, const std::vector<probes::ProbeSpec>& specs) {
  if (cfg.model == ModelKind::kTorchScript) return true;
  for (const auto& s : specs)
    if (s.name == "ops" && s.get_bool("aten")) return true;
  return false;
}

void attach_op_taps(Model& model, const RunConfig& cfg, bool generic, const std::shared_ptr<probes::OpTaps>& taps) {
  model.set_op_taps(taps);
  if (taps && generic && cfg.model != ModelKind::kTorchScript) taps->name_parameters(named_parameters(model));
}

Result<std::shared_ptr<Model>> initial_model(const RunConfig& cfg, const Dataset& data, Perturber& perturb,
                                             nlohmann::json* applied) {
  auto model = make_model(cfg, data);
  if (!model) return model.status();
  torch::nn::Module& m = (*model)->module();
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(cfg.seed));
  SADDLESCOPE_RETURN_IF_ERROR((*model)->initialise(gen, cfg.init, {cfg.duplicate_layers, cfg.duplicate_units}));
  // Drawn in float32 and widened exactly, so a float64 run starts from the float32 run's values: the
  // trajectory-level high-precision reference differs only in the arithmetic that follows.
  m.to(dtype_of(cfg));
  NamedTensors named = m.named_parameters();
  if (!cfg.init_from.empty()) SADDLESCOPE_RETURN_IF_ERROR(load_parameters(cfg.init_from, named));
  auto flipped = perturb.at_start(named);
  if (!flipped) return flipped.status();
  *applied = *flipped;
  m.to(torch::Device(cfg.execution.device.name()));
  return *model;
}

}  // namespace saddlescope::trainer
