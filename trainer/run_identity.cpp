// A run's identity: the canonical JSON of the keys that determine its result, the config key that the
// runs of one config over seeds share, and the readable prefix of the run id. Kept apart from the key
// table (config.cpp) because run ids must not change when the table does: tests pin them.
#include "saddlescope/trainer/config.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "saddlescope/store/sha256.h"

namespace saddlescope::trainer {

std::string RunConfig::identity() const {
  nlohmann::json j = to_json();
  for (const char* k : {"out", "data_dir", "log_every", "snapshot_every", "snapshot_grads", "checkpoint_every"}) j.erase(k);
  if (perturbation.kind == "none") j.erase("perturbation_seed");
  // Keys of the other models and data do not change this one's result; nor does a key left at a
  // value that existed before the key did (so that run ids stay stable).
  // A module is its bytes (model_sha256), wherever the file lies.
  j.erase("model_file");
  if (model != ModelKind::kTorchScript)
    for (const char* k : {"model_sha256", "loss"}) j.erase(k);
  if (model != ModelKind::kAutoencoder) j.erase("hidden");
  if (model != ModelKind::kLinear) j.erase("linear_hidden");
  if (model != ModelKind::kPredNet)
    for (const char* k : {"prednet_stacks", "prednet_loss", "prednet_zero_bias", "nt", "canvas", "digits", "eval_sequences"}) j.erase(k);
  if (data != "teacher")
    for (const char* k : {"teacher_sigmas", "teacher_inputs", "teacher_outputs", "teacher_examples", "teacher_noise"}) j.erase(k);
  if (init_scale == 1) j.erase("init_scale");
  if (lr_drop_at == 0) j.erase("lr_drop_at");
  if (execution.cuda_graph) j.erase("cuda_graph");
  if (execution.kernels == "libtorch") j.erase("kernels");
  if (optimizer == "adam") j.erase("optimizer");
  if (momentum == 0) j.erase("momentum");
  if (fault == "none") j.erase("fault");
  if (duplicate_layers.empty()) j.erase("duplicate_layers");
  if (duplicate_units.empty()) j.erase("duplicate_units");
  if (fc1_kernel == "matmul") j.erase("fc1_kernel");
  return j.dump();  // nlohmann orders object keys: canonical
}

std::string RunConfig::config_key() const {
  nlohmann::json j = nlohmann::json::parse(identity());
  for (const char* k : {"seed", "data_seed", "perturbation_seed"}) j.erase(k);
  std::string prefix = run_prefix();
  prefix.resize(prefix.rfind("-s"));  // the readable part without the seed
  return prefix + "-" + store::sha256_hex(j.dump()).substr(0, 8);
}

std::string RunConfig::run_prefix() const {
  const ExecutionConfig& e = execution;
  std::string dev = e.device.name();
  for (char& ch : dev) if (ch == ':') ch = '.';
  std::string p = std::string(model_name(model)) + "-" + dev;
  if (e.device.is_cuda()) p += e.cudnn ? "-cudnn" : "-nocudnn";
  if (e.deterministic != "off") p += "-det";
  if (e.tf32_matmul) p += "-tf32";
  if (e.dtype == Dtype::kFloat64) p += "-f64";
  if (e.kernels != "libtorch") p += "-" + e.kernels;
  if (perturbation.kind != "none") p += "-" + perturbation.kind;
  if (init != "default") p += "-init." + init;
  if (fc1_kernel != "matmul") p += "-fc1." + fc1_kernel;
  if (optimizer != "adam") p += "-" + optimizer;
  if (fault != "none") p += "-fault." + fault;
  return fmt::format("{}-t{}-s{}", p, e.threads, seed);
}

}  // namespace saddlescope::trainer
