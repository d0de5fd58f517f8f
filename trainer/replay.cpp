#include "saddlescope/trainer/replay.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/probes/op_taps.h"
#include "saddlescope/store/config_view.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/schema.h"
#include "saddlescope/trainer/batches.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/execution.h"
#include "saddlescope/trainer/initial.h"
#include "saddlescope/trainer/step.h"
#include "shape_text.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

// The snapshot at `step` of `run_dir` holds exactly the parameters of `model`, shape for shape.
// Returns its directory.
Result<std::string> matching_snapshot(const std::string& run_dir, int64_t step, Model& model) {
  auto run = store::RunDir::open(run_dir);
  if (!run) return run.status();
  auto dir = run->snapshot_path(step);
  if (!dir) return dir.status();
  auto snap = run->snapshot(step);
  if (!snap) return snap.status();
  std::string mismatch;
  auto named = model.module().named_parameters();
  for (const auto& item : named) {
    auto it = snap->find(item.key());
    std::vector<int64_t> mine(item.value().sizes().begin(), item.value().sizes().end());
    if (it == snap->end()) mismatch = "it has no parameter " + item.key();
    else if (it->second.shape != mine)
      mismatch = fmt::format("its {} is {}, the replayed model's {}", item.key(), shape_text(it->second.shape),
                             shape_text(mine));
    if (!mismatch.empty()) break;
  }
  for (const auto& [name, array] : *snap)
    if (mismatch.empty() && !named.contains(name)) mismatch = "the replayed model has no parameter " + name;
  if (!mismatch.empty()) {
    auto trained = store::config_view(run->manifest());
    const std::string model = trained && trained->model ? "\"" + *trained->model + "\"" : "null";
    return Status::Error(
        fmt::format("{}: another architecture than the replayed config ({}); its model is {}", *dir, mismatch, model));
  }
  return *dir;
}

}  // namespace

Result<ReplayResult> replay_step(const RunConfig& config, const std::string& params_run_dir, int64_t step,
                                 const std::string& ops_spec, const std::string& out_dir) {
  // Inputs first, nothing written.
  auto spec = probes::parse_probe_spec(ops_spec);
  if (!spec) return Status::Error("--ops: " + spec.status().message());
  if (spec->name != "ops") return Status::Error("--ops: '" + ops_spec + "' is not an ops probe (ops:at=STEP,k=K,...)");
  if (!spec->due(step))
    return Status::Error(fmt::format("--ops: '{}' is not due at step {} (give at={})", ops_spec, step, step));
  if (step < 0 || step >= config.steps)
    return Status::Error(fmt::format("--step: {} is not a step of the replayed run (0 .. {})", step, config.steps - 1));
  std::string out = fs::path(out_dir).lexically_normal().string();
  if (!out.empty() && out.back() == '/') out.pop_back();
  std::error_code ec;
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec)))
    return Status::Error("--out: " + out + " exists and is not an empty directory; the replay writes a new one");
  auto dir = store::AtomicDir::begin(out);  // removed again on any error below
  if (!dir) return Status::Error("--out: " + dir.status().message());

  auto applied = apply_execution(config.execution);
  if (!applied) return applied.status();
  auto data = load_dataset(config);
  if (!data) return data.status();
  RunConfig cfg = config;
  cfg.init_from.clear();
  Perturber none{Perturbation{}};  // the snapshot's parameters as they are: no bit flip again
  nlohmann::json unused;
  auto model = initial_model(cfg, *data, none, &unused);
  if (!model) return model.status();
  auto snapshot = matching_snapshot(params_run_dir, step, **model);
  if (!snapshot) return Status::Error("--params-from: " + snapshot.status().message());
  cfg.init_from = *snapshot;
  model = initial_model(cfg, *data, none, &unused);
  if (!model) return model.status();
  std::vector<probes::TapOp> tap_ops = (*model)->tap_ops(cfg.batch_size);
  const bool generic_taps = generic_op_taps(cfg, {*spec});
  if (!generic_taps) SADDLESCOPE_RETURN_IF_ERROR(probes::check_op_taps(*spec, tap_ops));

  // The batch of `step` (and the next one): the data order replayed as a resumed run does.
  torch::Device device(cfg.execution.device.name());
  Batches batches(*data, static_cast<uint64_t>(cfg.data_seed), device, dtype_of(cfg));
  batches.skip(step * cfg.batch_size);
  torch::Tensor batch = batches.next(cfg.batch_size);
  const bool alias_target = cfg.fault == "alias-target";
  torch::Tensor next = alias_target ? batches.next(cfg.batch_size) : torch::Tensor();
  Perturber perturb(cfg.perturbation);  // shuffle-reduction draws one order per step: replay the draws
  torch::Tensor rows = torch::empty({cfg.batch_size});
  for (int64_t s = 0; s < step; ++s) (void)perturb.batch(rows);
  batch = perturb.batch(batch);

  ReplayResult result;
  {
    auto taps = probes::OpTaps::create({*spec}, tap_ops, dir->path(), -1, generic_taps);
    if (!taps) return taps.status();
    attach_op_taps(**model, cfg, generic_taps, *taps);
    TrainStep train_step(**model, none, optimizer_options(cfg), /*graphs=*/false, alias_target);
    (*taps)->arm(step);
    train_step.compute(batch, /*eager=*/true, next);
    SADDLESCOPE_RETURN_IF_ERROR((*taps)->record(step));
    (*model)->set_op_taps(nullptr);
    result.loss = train_step.loss().item<double>();
  }  // ops.csv closed
  auto written = store::read_table<store::OpRow>(dir->path(), store::kOps);
  if (!written) return written.status();
  result.rows = static_cast<int64_t>(written->size());
  SADDLESCOPE_RETURN_IF_ERROR(dir->commit());
  result.ops_csv = out + "/" + store::kOps.file;
  result.params = *snapshot;
  return result;
}

}  // namespace saddlescope::trainer
