#include "saddlescope/trainer/train.h"

#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/base/progress.h"
#include "saddlescope/gpu/graph.h"
#include "saddlescope/probes/op_hashes.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/schema.h"
#include "saddlescope/trainer/batches.h"
#include "saddlescope/trainer/checkpoint.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/execution.h"
#include "saddlescope/trainer/fingerprint.h"
#include "saddlescope/trainer/initial.h"
#include "saddlescope/trainer/metric_window.h"
#include "saddlescope/trainer/model_view.h"
#include "saddlescope/trainer/perturbation.h"
#include "saddlescope/trainer/run_record.h"
#include "saddlescope/trainer/snapshot.h"
#include "saddlescope/trainer/step.h"
#include "saddlescope/trainer/stop_signals.h"

namespace saddlescope::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A heartbeat at most this often (each one rewrites and syncs the manifest).
constexpr double kHeartbeatSeconds = 10;
// checkpoint_every = 0: a checkpoint after this much training time.
constexpr double kCheckpointSeconds = 60;

// Everything one training loop works with.
struct Loop {
  const RunConfig& cfg;
  const Dataset& data;
  std::shared_ptr<Model> model;
  Perturber& perturb;
  probes::ProbeSet& probe_set;
  probes::OpTaps& taps;
  probes::OpHashes& hashes;
  RunRecord& record;
  const TrainOptions& options;
  std::optional<Checkpoint> resume;  // the checkpoint to continue from
  std::vector<store::MetricsRow> kept_metrics;  // rows of a resumed run before its checkpoint
  int64_t probe_examples;                      // the probe set's size asked for
};

Status save_snapshot_at(const std::string& run_dir, int64_t step, const NamedTensors& named, bool grads) {
  return save_snapshot(store::snapshot_dir(run_dir, step), named, grads);
}

Checkpoint checkpoint_of(int64_t step, double train_s, const NamedTensors& named, TrainStep& train_step,
                         const Perturber& perturb) {
  Checkpoint c;
  c.step = step;
  c.train_s = train_s;
  for (const auto& item : named) c.tensors["param." + item.key()] = item.value();
  DeviceOptimizer& opt = train_step.optimizer();
  opt.save(std::string(opt.name()) + ".", &c.tensors);  // "adam.*" or "sgd.*"
  perturb.save(&c.tensors);
  return c;
}

Status restore(const Checkpoint& c, NamedTensors& named, TrainStep& train_step, Perturber& perturb) {
  torch::NoGradGuard no_grad;
  for (auto& item : named) {
    auto it = c.tensors.find("param." + item.key());
    if (it == c.tensors.end()) return Status::Error("checkpoint lacks parameter " + item.key());
    if (!it->second.sizes().equals(item.value().sizes()))
      return Status::Error("checkpoint: parameter " + item.key() + " has another shape than the model's");
    item.value().copy_(it->second);
  }
  DeviceOptimizer& opt = train_step.optimizer();
  SADDLESCOPE_RETURN_IF_ERROR(opt.load(std::string(opt.name()) + ".", c.tensors));
  return perturb.load(c.tensors);
}

Status train_loop(Loop& L, TrainResult* result) {
  const RunConfig& cfg = L.cfg;
  torch::Device device(cfg.execution.device.name());
  torch::Dtype dtype = dtype_of(cfg);
  auto params = L.model->module().parameters();
  NamedTensors named = L.model->module().named_parameters();

  Batches batches(L.data, static_cast<uint64_t>(cfg.data_seed), device, dtype);
  probes::ModelView view =
      model_view(L.model, batches.probe_set(L.probe_examples),
                 {cfg.batch_size, L.data.sequences ? 0 : L.data.train.size(0), cfg.perturbation});
  auto snapshot_due = [&](int64_t step) {
    return step == 0 || (cfg.snapshot_every > 0 && step % cfg.snapshot_every == 0);
  };

  gpu::SideStream stream(device);  // CUDA graphs are captured and replayed off the default stream
  const bool alias_target = cfg.fault == "alias-target";  // the planted bug (step.h) needs the next batch
  TrainStep train_step(*L.model, L.perturb, optimizer_options(cfg), device.is_cuda() && cfg.execution.cuda_graph,
                       alias_target);
  int64_t start = 0;
  double train_s0 = 0;
  if (L.resume) {
    SADDLESCOPE_RETURN_IF_ERROR(restore(*L.resume, named, train_step, L.perturb));
    start = L.resume->step;
    train_s0 = L.resume->train_s;
    batches.skip(start * cfg.batch_size);
    L.resume.reset();  // its tensors are in the model now
  }
  auto metrics = store::TableWriter<store::MetricsRow>::open(L.record.dir(), store::kMetrics, start > 0 ? start : -1);
  if (!metrics) return metrics.status();
  MetricWindow window(cfg, device, start, L.kept_metrics);

  std::optional<Progress> progress;
  if (L.options.progress) progress.emplace("train", cfg.steps, "steps", L.options.progress, 5.0);
  if (progress && start > 0) progress->update(start, "resumed");

  Clock::time_point t0 = Clock::now();
  double last_checkpoint = 0;
  auto train_s = [&] { return train_s0 + seconds_since(t0); };
  // A checkpoint before `step`: the metric window written first, and no probe holding a measurement.
  auto checkpoint = [&](int64_t step) -> Status {
    SADDLESCOPE_RETURN_IF_ERROR(window.flush(&*metrics, result));  // waits for queued device work
    Clock::time_point c0 = Clock::now();
    SADDLESCOPE_RETURN_IF_ERROR(save_checkpoint(L.record.dir(), checkpoint_of(step, train_s(), named, train_step, L.perturb)));
    SADDLESCOPE_RETURN_IF_ERROR(L.record.checkpointed(step, seconds_since(c0)));
    remove_other_checkpoints(L.record.dir(), step);
    last_checkpoint = train_s();
    return Status::Ok();
  };
  auto checkpoint_due = [&](int64_t step) {
    if (step == start || !L.probe_set.idle()) return false;
    return cfg.checkpoint_every > 0 ? step % cfg.checkpoint_every == 0 : train_s() - last_checkpoint >= kCheckpointSeconds;
  };

  torch::Tensor ahead;  // alias-target: the next step's batch, drawn one step early
  int64_t step = start;
  for (; step < cfg.steps; ++step) {
    // A signal stops the loop at the first step boundary where no probe holds a measurement (a
    // curvature probe completes its row one step later), so that the checkpoint there is complete.
    if (StopSignals::requested() && L.probe_set.idle()) break;
    if (checkpoint_due(step)) SADDLESCOPE_RETURN_IF_ERROR(checkpoint(step));
    const bool tap = L.taps.due(step);  // op taps: armed for this step's forward and backward, run eagerly
    if (tap) L.taps.arm(step);
    const bool hash = L.hashes.due(step);  // ophash: every op of the step's forward, backward and update
    const bool hash_eager = hash && !L.hashes.replayable();
    torch::Tensor batch = ahead.defined() ? ahead : batches.next(cfg.batch_size);
    if (alias_target) ahead = batches.next(cfg.batch_size);
    const torch::Tensor input = L.perturb.batch(batch);  // before the trace: outside a replayed graph
    if (hash) {
      L.hashes.input(input);
      L.hashes.begin();
    }
    train_step.compute(input, /*eager=*/tap || hash_eager, ahead);
    if (hash) L.hashes.end();
    if (tap) SADDLESCOPE_RETURN_IF_ERROR(L.taps.record(step));
    L.perturb.gradients(params);
    if (L.probe_set.due(step)) {
      // Divergence is a result whichever part of the step meets it first: probes on parameters that
      // are no longer finite would fail, so the run ends here as diverged (the loss check's outcome).
      if (std::string what = train_step.non_finite(); !what.empty()) {
        SADDLESCOPE_RETURN_IF_ERROR(window.flush(&*metrics, result));
        if (!result->diverged_at_step) {
          result->diverged_at_step = step;
          result->steps_completed = step;
          result->diverged_reason = what + " not finite when the probes came to them";
        }
        break;
      }
      SADDLESCOPE_RETURN_IF_ERROR(L.probe_set.run(step, view));
    }
    if (snapshot_due(step)) SADDLESCOPE_RETURN_IF_ERROR(save_snapshot_at(L.record.dir(), step, named, cfg.snapshot_grads));
    if (cfg.lr_drop_at > 0 && step == cfg.lr_drop_at) train_step.set_lr(cfg.lr / 10);
    double lr = train_step.lr();
    if (hash) L.hashes.begin("update");
    train_step.update(/*eager=*/hash_eager);
    if (hash) {
      L.hashes.end();
      SADDLESCOPE_RETURN_IF_ERROR(L.hashes.write(step));
    }
    window.record(step, train_step.loss(), train_step.grad_norm(), lr, train_s());

    if (window.full(step)) {
      SADDLESCOPE_RETURN_IF_ERROR(window.flush(&*metrics, result));
      if (result->diverged_at_step) break;
      SADDLESCOPE_RETURN_IF_ERROR(L.record.heartbeat(result->steps_completed, kHeartbeatSeconds));
    }
    if (progress) progress->update(step + 1, window.last_loss());
  }

  store::RunManifest& m = L.record.manifest();
  m.timings.probe_s += L.probe_set.seconds();  // this segment's, over every resume
  for (const probes::ProbeFailure& f : L.probe_set.failures())
    m.probe_failures.push_back({f.step, f.probe, f.reason});
  m.timings.tap_s += L.taps.seconds() + L.hashes.seconds();
  if (int sig = StopSignals::requested(); sig && !result->diverged_at_step && step < cfg.steps) {
    // Stopped by a signal before `step`: everything up to it is written, with a checkpoint there.
    SADDLESCOPE_RETURN_IF_ERROR(window.flush(&*metrics, result));
    if (step > start) SADDLESCOPE_RETURN_IF_ERROR(checkpoint(step));
    result->stop_signal = sig;
    result->train_s = train_s();
    if (progress) progress->finish(step, fmt::format("interrupted ({})", signal_name(sig)));
    return Status::Ok();
  }
  SADDLESCOPE_RETURN_IF_ERROR(window.flush(&*metrics, result));
  SADDLESCOPE_RETURN_IF_ERROR(L.probe_set.finish());
  result->train_s = train_s();
  if (progress)
    progress->finish(result->steps_completed,
                     result->diverged_at_step ? fmt::format("diverged at step {}", *result->diverged_at_step)
                                              : window.last_loss());
  if (result->diverged_at_step) return Status::Ok();

  SADDLESCOPE_RETURN_IF_ERROR(save_snapshot_at(L.record.dir(), result->steps_completed, named, false));
  result->final_loss = window.final_loss();
  Clock::time_point e0 = Clock::now();
  Model::Scores scores = L.model->evaluate(L.data.eval.to(device, dtype), batches.train_mean());
  m.evaluation = store::Evaluation{L.data.eval_split, scores.mse, scores.baseline, scores.baseline_mse,
                                   scores.per_frame_mse, scores.per_frame_baseline_mse, scores.cross_entropy,
                                   scores.baseline_cross_entropy, scores.accuracy};
  m.timings.eval_s = seconds_since(e0);
  return Status::Ok();
}

// The run's row in the study catalogue. The catalogue is derived data (`saddlescope store index`
// rebuilds it): a failure is a warning, never the run's failure.
void index_run(const std::string& study_dir, const std::string& run_dir) {
  Status s = store::upsert_run(study_dir, run_dir);
  if (!s.ok()) std::fprintf(stderr, "saddlescope: warning: catalogue not updated: %s\n", s.message().c_str());
}

// The manifest of a new run, status running.
store::RunManifest new_manifest(const RunConfig& cfg, const std::string& run_id, const Dataset& data,
                                const nlohmann::json& applied, const nlohmann::json& perturbed,
                                const std::vector<probes::ProbeSpec>& specs, int64_t probe_asked, int64_t probe_used) {
  store::RunManifest m;
  m.run_id = run_id;
  m.config_key = cfg.config_key();
  m.config = cfg.to_json();
  m.data = {{"source", data.source},
            {"train_examples", data.sequences ? nlohmann::json("unbounded (generated)") : nlohmann::json(data.train.size(0))},
            {"eval_examples", data.eval.size(0)},
            {"example_shape", data.example_shape},
            {"digests", data.digests}};  // SHA-256 of every data file read
  m.execution = applied;
  m.perturbation_applied = perturbed;
  m.fingerprint = environment_fingerprint();
  m.timings.started = store::utc_now();
  m.files = {{store::kMetrics.file, store::kMetrics.version},
             {store::kSnapshotsEntry, store::kSnapshotsVersion},
             {store::kCheckpointEntry, store::kCheckpointVersion}};
  for (const auto& [file, version] : probes::ProbeSet::files(specs)) m.files[file] = version;
  for (const auto& s : specs)
    if (s.name == "ops") m.files[store::kOps.file] = store::kOps.version;
  m.extra["probe_examples"] = {{"asked", probe_asked}, {"used", probe_used}};
  return m;
}

// The run's directory: created (replacing an earlier run's with `replace`), or for a resumed run the
// existing one with its manifest, latest checkpoint and the metrics rows before it. Errors name the
// directory: another config's run, a run that has ended, no checkpoint yet.
struct OpenedRun {
  std::string dir;
  std::optional<store::RunManifest> previous;  // resumed: its manifest
  std::optional<Checkpoint> checkpoint;        // resumed: where it continues
  std::vector<store::MetricsRow> kept_metrics; // resumed: the rows before the checkpoint
};

Result<OpenedRun> open_run(const std::string& out, const std::string& run_id, const TrainOptions& options) {
  OpenedRun o;
  if (!options.resume) {
    auto created = store::create_run_dir(out, run_id, options.replace);
    if (!created) return created.status();
    o.dir = *created;
    return o;
  }
  o.dir = options.resume_dir;
  const std::string& dir = o.dir;
  auto run = store::RunDir::open(dir);
  if (!run) return run.status();
  const store::RunManifest& pm = run->manifest();
  if (pm.run_id != run_id)
    return Status::Error(dir + ": its config gives run id " + run_id + ", the manifest says " + pm.run_id);
  if (pm.status == store::RunStatus::kCompleted || pm.status == store::RunStatus::kDiverged)
    return Status::Error(dir + ": the run has ended (" + store::status_name(pm.status) + "); nothing to resume");
  if (!pm.checkpoint_step)
    return Status::Error(dir + ": no checkpoint to resume from (stopped at step " + std::to_string(pm.steps_completed) +
                         " before its first one); train it again with --force");
  auto c = load_checkpoint(dir, *pm.checkpoint_step);
  if (!c) return c.status();
  o.checkpoint = std::move(*c);
  auto rows = run->metrics();
  if (!rows) return rows.status();
  for (const auto& r : *rows)
    if (r.step < o.checkpoint->step) o.kept_metrics.push_back(r);
  o.previous = pm;
  return o;
}

// How the loop ended, into the manifest: failed (with the error), interrupted (by which signal),
// diverged (at which step, why) or completed (with the final loss).
store::RunStatus record_outcome(const Status& status, const TrainResult& result, store::RunManifest& m) {
  m.timings.train_s = result.train_s;
  m.steps_completed = result.steps_completed;
  m.steps_per_s = result.train_s > 0 ? std::optional<double>(result.steps_completed / result.train_s) : std::nullopt;
  if (!status.ok()) {
    m.error = status.message();
    return store::RunStatus::kFailed;
  }
  if (result.stop_signal) {
    m.stopped_by = signal_name(result.stop_signal);
    return store::RunStatus::kInterrupted;
  }
  if (result.diverged_at_step) {
    m.diverged_at_step = result.diverged_at_step;
    m.diverged_reason = result.diverged_reason.empty() ? "loss not finite" : result.diverged_reason;
    return store::RunStatus::kDiverged;
  }
  m.final_loss = result.final_loss;
  return store::RunStatus::kCompleted;
}

}  // namespace

Result<TrainResult> train(const RunConfig& cfg, const TrainOptions& options) {
  // Everything that can be checked is checked before the run directory exists.
  auto applied = apply_execution(cfg.execution);
  if (!applied) return applied.status();
  auto data = load_dataset(cfg);
  if (!data) return data.status();
  Perturber perturb(cfg.perturbation);
  nlohmann::json perturbed;
  auto model = initial_model(cfg, *data, perturb, &perturbed);
  if (!model) return model.status();
  std::vector<probes::ProbeSpec> specs;
  for (const auto& text : cfg.probes) specs.push_back(*probes::parse_probe_spec(text));  // checked by config
  int64_t n_params = parameter_count(**model);
  SADDLESCOPE_RETURN_IF_ERROR(probes::check_probes(specs, n_params));
  std::vector<probes::TapOp> tap_ops = (*model)->tap_ops(cfg.batch_size);
  const bool generic_taps = generic_op_taps(cfg, specs);
  if (!generic_taps)
    for (const auto& s : specs) SADDLESCOPE_RETURN_IF_ERROR(probes::check_op_taps(s, tap_ops));
  for (const auto& s : specs)
    if (s.name == "symmetry" && (*model)->unit_layers().empty())
      return Status::Error("probe 'symmetry': model " + std::string(model_name(cfg.model)) + " has no layers of units to compare");

  // The run's lock first: --force must not remove a directory a live process writes, and of two
  // processes starting the same run, one clearly loses.
  std::string run_id = store::make_run_id(cfg.run_prefix(), cfg.identity());
  auto lock = store::RunLock::acquire(cfg.out, run_id);
  if (!lock) return lock.status();

  auto opened = open_run(cfg.out, run_id, options);
  if (!opened) return opened.status();
  auto& [dir, previous, checkpoint, kept_metrics] = *opened;
  int64_t resume_from = checkpoint ? checkpoint->step : -1;

  int64_t probe_asked = probe_examples_needed(specs, cfg.batch_size);
  int64_t probe_used = probe_set_size(*data, probe_asked);
  store::RunManifest manifest = new_manifest(cfg, run_id, *data, *applied, perturbed, specs, probe_asked, probe_used);
  if (previous) {
    // A resumed run keeps its history: when it started, the time spent so far, its checkpoint.
    manifest.timings = previous->timings;
    manifest.checkpoint_step = previous->checkpoint_step;
    manifest.resumes = previous->resumes + 1;
    manifest.perturbation_applied = previous->perturbation_applied;
    for (const auto& f : previous->probe_failures)  // the steps before the checkpoint; later ones run again
      if (previous->checkpoint_step && f.step < *previous->checkpoint_step) manifest.probe_failures.push_back(f);
    if (previous->extra.contains("study")) manifest.extra["study"] = previous->extra["study"];
  }
  if (!options.study.is_null()) manifest.extra["study"] = options.study;
  // Signals are caught from before the manifest says "running": a SIGINT between the two (a study's
  // Ctrl-C reaching a run that has just started) used to kill the process and leave the run stale.
  StopSignals signals;
  RunRecord record(dir, std::move(manifest));
  SADDLESCOPE_RETURN_IF_ERROR(record.start());
  index_run(cfg.out, dir);  // listed as running while it runs

  // The probes' files, once the manifest says the run exists: a failure here is recorded as such.
  auto probe_set = probes::ProbeSet::create(specs, n_params, dir, resume_from);
  auto taps = probe_set ? probes::OpTaps::create(specs, tap_ops, dir, resume_from, generic_taps)
                        : Result<std::shared_ptr<probes::OpTaps>>(probe_set.status());
  auto hashes = taps ? probes::OpHashes::create(specs, named_parameters(**model), dir, resume_from)
                     : Result<std::unique_ptr<probes::OpHashes>>(taps.status());
  if (!hashes) {
    record.manifest().error = hashes.status().message();
    (void)record.finish(store::RunStatus::kFailed);
    index_run(cfg.out, dir);
    return hashes.status();
  }
  attach_op_taps(**model, cfg, generic_taps, *taps);

  TrainResult result;
  result.run_dir = dir;
  result.eval_split = data->eval_split;
  Status status;
  {
    Loop loop{cfg, *data, *model, perturb, *probe_set, **taps, **hashes, record, options, std::move(checkpoint), std::move(kept_metrics),
              probe_asked};
    try {
      status = train_loop(loop, &result);
    } catch (const std::exception& e) {
      // Record the failure in the run before reporting it: a reader must never see "running" forever.
      status = Status::Error("training failed: " + describe_step_failure(e));
    }
  }

  store::RunManifest& m = record.manifest();
  const store::RunStatus final_status = record_outcome(status, result, m);
  Status written = record.finish(final_status);
  index_run(cfg.out, dir);
  if (!status.ok()) return status;
  if (!written.ok()) return written;
  result.status = final_status;
  if (m.evaluation) {
    result.eval_mse = m.evaluation->mse;
    result.baseline_mse = m.evaluation->baseline_mse;
    result.baseline = m.evaluation->baseline;
    result.cross_entropy = m.evaluation->cross_entropy;
    result.baseline_cross_entropy = m.evaluation->baseline_cross_entropy;
    result.accuracy = m.evaluation->accuracy;
  }
  return result;
}

}  // namespace saddlescope::trainer
