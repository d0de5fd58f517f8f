// curvature_at: one curvature evaluation of a run's model at a snapshot, or at its initial weights.
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/gpu/graph.h"
#include "saddlescope/probes/probe.h"
#include "saddlescope/store/config_view.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/batches.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/execution.h"
#include "saddlescope/trainer/initial.h"
#include "saddlescope/trainer/model_view.h"
#include "saddlescope/trainer/train.h"

namespace saddlescope::trainer {

Result<probes::CurvatureEvaluation> curvature_at(const RunConfig& config, int64_t at_step, const std::string& probe_spec) {
  auto spec = probes::parse_probe_spec(probe_spec, probe_defaults(config.model));
  if (!spec) return spec.status();
  if (spec->name != "curvature") return Status::Error("probe '" + probe_spec + "': expected a curvature probe");
  RunConfig cfg = config;
  if (at_step >= 0) {
    if (cfg.init_from.empty()) return Status::Error("--at-step needs --init-from RUN_DIR");
    auto run = store::RunDir::open(cfg.init_from);
    if (!run) return Status::Error("--init-from: " + run.status().message());
    auto trained = store::config_view(run->manifest());
    if (!trained) return Status::Error("--init-from: " + cfg.init_from + "/manifest.json: " + trained.status().message());
    if (trained->model && *trained->model != model_name(cfg.model))
      return Status::Error("--init-from: " + cfg.init_from + " trained model " + *trained->model +
                           ", this evaluation builds " + model_name(cfg.model) + " (pass --model " + *trained->model +
                           " and that run's other model keys)");
    auto dir = run->snapshot_path(at_step);
    if (!dir) return Status::Error("--at-step: " + dir.status().message() + " (train with --snapshot-every)");
    cfg.init_from = *dir;
  }
  auto applied = apply_execution(cfg.execution);
  if (!applied) return applied.status();
  auto data = load_dataset(cfg);
  if (!data) return data.status();
  Perturber none{Perturbation{}};
  nlohmann::json unused;
  auto model = initial_model(cfg, *data, none, &unused);
  if (!model) return model.status();
  int64_t n_params = parameter_count(**model);
  SADDLESCOPE_RETURN_IF_ERROR(probes::check_probes({*spec}, n_params));
  torch::Device device(cfg.execution.device.name());
  Batches batches(*data, static_cast<uint64_t>(cfg.data_seed), device, dtype_of(cfg));
  probes::ModelView view = model_view(*model, batches.probe_set(probe_examples_needed({*spec})));
  gpu::SideStream stream(device);  // as in training: the probe's HVP graphs are captured off the default stream
  auto e = probes::evaluate_curvature(*spec, view);
  if (!e) return e.status();
  e->detail["parameters"] = cfg.init_from.empty() ? "initial (seed " + std::to_string(cfg.seed) + ")" : cfg.init_from;
  e->detail["parameter_count"] = n_params;
  return e;
}

}  // namespace saddlescope::trainer
