#include "saddlescope/trainer/train.h"

#include <chrono>
#include <filesystem>
#include <cmath>
#include <ctime>
#include <future>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/base/progress.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/csv.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/adam.h"
#include "saddlescope/gpu/graph.h"
#include "saddlescope/trainer/model.h"
#include "saddlescope/trainer/moving_mnist.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/execution.h"
#include "saddlescope/trainer/fingerprint.h"
#include "saddlescope/trainer/model_view.h"
#include "saddlescope/trainer/perturbation.h"
#include "saddlescope/trainer/snapshot.h"
#include "saddlescope/trainer/step.h"

namespace saddlescope::trainer {
namespace {

using Clock = std::chrono::steady_clock;

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The order in which examples are visited: a fresh permutation each epoch, drawn from its own seed
// (so the data order does not depend on the weight seed), kept on the device so a step copies nothing.
class ExampleOrder {
 public:
  ExampleOrder(int64_t n, uint64_t seed, torch::Device device) : n_(n), rng_(seed), device_(device) {
    shuffle();
  }

  // The next `b` example indices (int64, on the device), continuing into the next epoch when needed.
  torch::Tensor next(int64_t b) {
    std::vector<torch::Tensor> parts;
    while (b > 0) {
      if (pos_ == n_) shuffle();
      int64_t take = std::min(b, n_ - pos_);
      parts.push_back(perm_.narrow(0, pos_, take));
      pos_ += take;
      b -= take;
    }
    return parts.size() == 1 ? parts[0] : torch::cat(parts);
  }

 private:
  // Fisher-Yates with an unbiased bounded draw: std::shuffle's output is implementation-defined.
  void shuffle() {
    std::vector<int64_t> p(n_);
    for (int64_t i = 0; i < n_; ++i) p[i] = i;
    for (int64_t i = n_ - 1; i > 0; --i) {
      uint64_t bound = static_cast<uint64_t>(i) + 1, limit = UINT64_MAX - UINT64_MAX % bound, r;
      do r = rng_(); while (r >= limit);
      std::swap(p[i], p[static_cast<int64_t>(r % bound)]);
    }
    perm_ = torch::from_blob(p.data(), {n_}, torch::kInt64).clone().to(device_);  // own the data
    pos_ = 0;
  }

  int64_t n_, pos_ = 0;
  std::mt19937_64 rng_;
  torch::Device device_;
  torch::Tensor perm_;
};

// Training batches and the fixed probe set, on the device in the model's dtype: rows of a dataset in a
// seeded order, or freshly generated Moving MNIST sequences (batch k of b holds sequences kb..kb+b-1).
class Batches {
 public:
  Batches(const Dataset& data, uint64_t seed, torch::Device device, torch::Dtype dtype)
      : data_(data), device_(device), dtype_(dtype) {
    if (!data.sequences) {
      train_x_ = data.train.to(device, dtype);
      order_.emplace(train_x_.size(0), seed, device);
    }
  }

  torch::Tensor next(int64_t b) {
    if (order_) return train_x_.index_select(0, order_->next(b));
    if (chunk_used_ + b > (chunk_.defined() ? chunk_.size(1) : 0)) next_chunk(b);
    torch::Tensor frames = chunk_.narrow(1, chunk_used_, b);
    chunk_used_ += b;
    return frames_to_input(frames).to(dtype_);  // on the device: the same bits as on the host
  }

  // `n` examples drawn once from their own seed (rows), or sequences far beyond any training index:
  // the same for every run of a dataset, whatever the training order.
  torch::Tensor probe_set(int64_t n) const {
    if (!order_) return frames_to_input(data_.sequences->batch(int64_t{1} << 40, n)).to(device_, dtype_);
    n = std::min(n, train_x_.size(0));
    auto gen = at::detail::createCPUGenerator(kProbeSeed);
    torch::Tensor rows = torch::randperm(train_x_.size(0), gen, torch::kInt64).narrow(0, 0, n);
    return train_x_.index_select(0, rows.to(device_));
  }

  // The mean training example (the autoencoder's baseline), or undefined.
  torch::Tensor train_mean() const { return order_ ? train_x_.mean(0) : torch::Tensor(); }

 private:
  static constexpr uint64_t kProbeSeed = 0x5add1e;
  const Dataset& data_;
  torch::Device device_;
  torch::Dtype dtype_;
  torch::Tensor train_x_;
  std::optional<ExampleOrder> order_;

  // Moving MNIST arrives a chunk of sequences at a time: generated on the host by a worker thread one
  // chunk ahead, copied to the device as uint8 in one transfer. A step then costs the host nothing but
  // a few launches — a CUDA-graph PredNet step is shorter than generating and copying its own batch.
  // Batch k still holds sequences kb .. kb+b-1.
  void next_chunk(int64_t b) {
    const int64_t n = std::max<int64_t>(1, kChunkSequences / b) * b;
    if (!pending_.valid()) pending_ = generate(0, n);
    chunk_ = pending_.get().to(device_);
    chunk_used_ = 0;
    next_sequence_ += n;
    pending_ = generate(next_sequence_, n);
  }
  std::future<torch::Tensor> generate(int64_t first, int64_t n) const {
    return std::async(std::launch::async, [seq = data_.sequences, first, n] { return seq->batch(first, n); });
  }

  static constexpr int64_t kChunkSequences = 512;
  std::future<torch::Tensor> pending_;
  torch::Tensor chunk_;  // (T, sequences, H, W) uint8 on the device
  int64_t chunk_used_ = 0, next_sequence_ = 0;
};

int64_t parameter_count(Model& model) {
  int64_t n = 0;
  for (const auto& p : model.module().parameters()) n += p.numel();
  return n;
}

torch::Dtype dtype_of(const RunConfig& cfg) {
  return cfg.execution.dtype == "float64" ? torch::kFloat64 : torch::kFloat32;
}

struct Run {
  const RunConfig& cfg;
  std::string dir;
  nlohmann::json manifest;
  int64_t probe_examples = 1;

  Status save() { return store::write_manifest(dir, manifest); }
};

// The model with its initial weights: drawn on the CPU from `seed` (or loaded), then perturbed, then
// moved to the device — so every device starts from the same bits. `applied` gets what the
// perturbation did at the start.
Result<std::shared_ptr<Model>> initial_model(const RunConfig& cfg, const Dataset& data, Perturber& perturb,
                                             nlohmann::json* applied) {
  auto model = make_model(cfg, data);
  if (!model) return model.status();
  torch::nn::Module& m = (*model)->module();
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(cfg.seed));
  SADDLESCOPE_RETURN_IF_ERROR((*model)->initialise(gen, cfg.init));
  // Drawn in float32 and widened exactly, so a float64 run starts from the float32 run's values: the
  // trajectory-level high-precision reference differs only in the arithmetic that follows.
  m.to(dtype_of(cfg));
  NamedTensors named = m.named_parameters();
  if (!cfg.init_from.empty()) SADDLESCOPE_RETURN_IF_ERROR(load_parameters(cfg.init_from, named));
  auto flipped = perturb.at_start(named);
  if (!flipped) return flipped.status();
  *applied = *flipped;
  m.to(torch::Device(cfg.execution.device));
  return *model;
}

Status train_loop(Run& run, const Dataset& data, std::shared_ptr<Model> model, Perturber& perturb,
                  probes::ProbeSet& probe_set, probes::OpTaps& taps, const TrainOptions& options, TrainResult* result) {
  const RunConfig& cfg = run.cfg;
  torch::Device device(cfg.execution.device);
  torch::Dtype dtype = dtype_of(cfg);
  auto params = model->module().parameters();
  NamedTensors named = model->module().named_parameters();
  DeviceAdam::Options adam;
  adam.lr = cfg.lr;

  Batches batches(data, static_cast<uint64_t>(cfg.data_seed), device, dtype);
  probes::ModelView view = model_view(model, batches.probe_set(run.probe_examples));
  auto metrics = store::CsvWriter::create(run.dir + "/metrics.csv",
                                          {"step", "loss", "grad_norm", "lr", "wall_s"});
  if (!metrics) return metrics.status();
  auto snapshot_due = [&](int64_t step) {
    return step == 0 || (cfg.snapshot_every > 0 && step % cfg.snapshot_every == 0);
  };

  gpu::SideStream stream(device);  // CUDA graphs are captured and replayed off the default stream
  TrainStep train_step(*model, perturb, adam, device.is_cuda() && cfg.execution.cuda_graph);

  // Per-step metrics stay on the device and are read once per log window: no sync inside a step.
  auto on_device = torch::TensorOptions().dtype(torch::kFloat64).device(device);
  torch::Tensor loss_log = torch::empty({cfg.log_every}, on_device);
  torch::Tensor norm_log = torch::empty({cfg.log_every}, on_device);
  std::vector<double> wall(cfg.log_every), lr(cfg.log_every);
  std::optional<Progress> progress;
  if (options.progress) progress.emplace("train", cfg.steps, "steps", options.progress, 5.0);
  std::string last_loss = "loss ?";

  Clock::time_point t0 = Clock::now();
  int64_t window_start = 0;
  for (int64_t step = 0; step < cfg.steps; ++step) {
    const bool tap = taps.due(step);  // op taps: armed for this step's forward and backward, run eagerly
    if (tap) taps.arm(step);
    train_step.compute(perturb.batch(batches.next(cfg.batch_size)), /*eager=*/tap);
    if (tap) SADDLESCOPE_RETURN_IF_ERROR(taps.record(step));
    perturb.gradients(params);
    if (probe_set.due(step)) SADDLESCOPE_RETURN_IF_ERROR(probe_set.run(step, view));
    if (snapshot_due(step))
      SADDLESCOPE_RETURN_IF_ERROR(save_snapshot(snapshot_dir(run.dir, step), named, cfg.snapshot_grads));
    if (cfg.lr_drop_at > 0 && step == cfg.lr_drop_at) train_step.set_lr(cfg.lr / 10);
    int64_t k = step - window_start;
    lr[k] = train_step.lr();
    train_step.update();
    loss_log[k].copy_(train_step.loss());
    norm_log[k].copy_(train_step.grad_norm());
    wall[k] = seconds_since(t0);

    if (k + 1 == cfg.log_every || step + 1 == cfg.steps) {
      auto losses = loss_log.narrow(0, 0, k + 1).cpu();
      auto norms = norm_log.narrow(0, 0, k + 1).cpu();
      double window_sum = 0;
      for (int64_t i = 0; i <= k; ++i) {
        double l = losses[i].item<double>();
        metrics->add(window_start + i).add(l).add(norms[i].item<double>()).add(lr[i]).add(wall[i]);
        metrics->end_row();
        window_sum += l;
        if (!std::isfinite(l)) {
          result->diverged_at_step = window_start + i;
          result->steps_completed = window_start + i + 1;
          break;
        }
      }
      SADDLESCOPE_RETURN_IF_ERROR(metrics->flush());
      if (result->diverged_at_step) break;
      result->steps_completed = step + 1;
      result->final_loss = window_sum / double(k + 1);
      last_loss = fmt::format("loss {:.6f}", losses[k].item<double>());
      window_start = step + 1;
    }
    if (progress) progress->update(step + 1, last_loss);
  }
  SADDLESCOPE_RETURN_IF_ERROR(probe_set.finish());
  SADDLESCOPE_RETURN_IF_ERROR(taps.finish());
  result->train_s = seconds_since(t0);
  run.manifest["timings"]["probe_s"] = probe_set.seconds();
  run.manifest["timings"]["tap_s"] = taps.seconds();
  if (progress)
    progress->finish(result->steps_completed,
                     result->diverged_at_step ? fmt::format("diverged at step {}", *result->diverged_at_step)
                                              : last_loss);

  if (result->diverged_at_step) {
    result->status = store::kDiverged;
    return Status::Ok();
  }
  SADDLESCOPE_RETURN_IF_ERROR(save_snapshot(snapshot_dir(run.dir, result->steps_completed), named, false));
  result->status = store::kCompleted;
  Clock::time_point e0 = Clock::now();
  Model::Scores scores = model->evaluate(data.eval.to(device, dtype), batches.train_mean());
  result->eval_mse = scores.mse;
  result->baseline_mse = scores.baseline_mse;
  result->baseline = scores.baseline;
  run.manifest["evaluation_per_frame"] = scores.per_frame_mse.empty() ? nlohmann::json()
      : nlohmann::json{{"mse", scores.per_frame_mse}, {"baseline_mse", scores.per_frame_baseline_mse}};
  run.manifest["timings"]["eval_s"] = seconds_since(e0);
  return Status::Ok();
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
  for (const auto& s : specs) SADDLESCOPE_RETURN_IF_ERROR(probes::check_op_taps(s, tap_ops));
  for (const auto& s : specs)
    if (s.name == "symmetry" && (*model)->unit_layers().empty())
      return Status::Error("probe 'symmetry': model " + cfg.model + " has no layers of units to compare");

  std::string run_id = store::make_run_id(cfg.run_prefix(), cfg.identity());
  auto dir = store::create_run_dir(cfg.out, run_id, options.replace);
  if (!dir) return dir.status();

  Run run{cfg, *dir, {}, probe_examples_needed(specs)};
  auto probe_set = probes::ProbeSet::create(specs, n_params, *dir);
  if (!probe_set) return probe_set.status();
  auto taps = probes::OpTaps::create(specs, tap_ops, *dir);
  if (!taps) return taps.status();
  (*model)->set_op_taps(*taps);
  run.manifest = {{"format", store::kManifestFormat}, {"format_version", store::kManifestVersion},
                  {"run_id", run_id}, {"status", store::kRunning}, {"config", cfg.to_json()},
                  {"data", {{"source", data->source},
                            {"train_examples", data->sequences ? nlohmann::json("unbounded (generated)")
                                                               : nlohmann::json(data->train.size(0))},
                            {"eval_examples", data->eval.size(0)}, {"example_shape", data->example_shape}}},
                  {"execution", *applied}, {"perturbation_applied", perturbed},
                  {"fingerprint", environment_fingerprint()},
                  {"timings", {{"started", utc_now()}}}};
  SADDLESCOPE_RETURN_IF_ERROR(run.save());

  TrainResult result;
  result.run_dir = *dir;
  result.eval_split = data->eval_split;
  Status status;
  try {
    status = train_loop(run, *data, *model, perturb, *probe_set, **taps, options, &result);
  } catch (const std::exception& e) {
    // Record the failure in the run before reporting it: a reader must never see "running" forever.
    status = Status::Error("training failed: " + describe_step_failure(e));
  }

  nlohmann::json& m = run.manifest;
  m["timings"]["finished"] = utc_now();
  m["timings"]["train_s"] = result.train_s;
  m["steps_completed"] = result.steps_completed;
  if (!status.ok()) {
    m["status"] = store::kFailed;
    m["error"] = status.message();
    (void)run.save();
    return status;
  }
  m["status"] = result.status;
  m["steps_per_s"] = result.train_s > 0 ? result.steps_completed / result.train_s : 0.0;
  m["diverged_at_step"] = result.diverged_at_step ? nlohmann::json(*result.diverged_at_step) : nlohmann::json();
  m["final_loss"] = result.final_loss;
  if (result.eval_mse)
    m["evaluation"] = {{"split", result.eval_split}, {"mse", *result.eval_mse},
                       {"baseline", result.baseline}, {"baseline_mse", *result.baseline_mse}};
  else
    m["evaluation"] = nullptr;
  SADDLESCOPE_RETURN_IF_ERROR(run.save());

  auto indexed = store::rebuild_catalog(cfg.out);
  if (!indexed) std::fprintf(stderr, "saddlescope: warning: catalogue not rebuilt: %s\n",
                             indexed.status().message().c_str());
  return result;
}

Result<nlohmann::json> curvature_at(const RunConfig& config, int64_t at_step, const std::string& probe_spec) {
  auto spec = probes::parse_probe_spec(probe_spec, probe_defaults(config.model));
  if (!spec) return spec.status();
  if (spec->name != "curvature") return Status::Error("probe '" + probe_spec + "': expected a curvature probe");
  RunConfig cfg = config;
  if (at_step >= 0) {
    if (cfg.init_from.empty()) return Status::Error("--at-step needs --init-from RUN_DIR");
    cfg.init_from = snapshot_dir(cfg.init_from, at_step);
    if (!std::filesystem::is_directory(cfg.init_from))
      return Status::Error(cfg.init_from + ": no snapshot at step " + std::to_string(at_step) +
                           " (train with --snapshot-every)");
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
  torch::Device device(cfg.execution.device);
  Batches batches(*data, static_cast<uint64_t>(cfg.data_seed), device, dtype_of(cfg));
  probes::ModelView view = model_view(*model, batches.probe_set(probe_examples_needed({*spec})));
  gpu::SideStream stream(device);  // as in training: the probe's HVP graphs are captured off the default stream
  auto j = probes::evaluate_curvature(*spec, view);
  if (!j) return j.status();
  (*j)["parameters"] = cfg.init_from.empty() ? "initial (seed " + std::to_string(cfg.seed) + ")" : cfg.init_from;
  (*j)["parameter_count"] = n_params;
  return *j;
}

}  // namespace saddlescope::trainer
