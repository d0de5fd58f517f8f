// The configuration of one training run: from a TOML file, command-line flags (which override the
// file), and defaults, each value remembering where it came from so that an error can say so:
//   "run.toml:7: lr must be > 0 and finite, got -1"      "--steps: must be >= 1, got 0"
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/config_choices.h"
#include "saddlescope/trainer/perturbation_spec.h"

namespace saddlescope::trainer {

// Every setting of the execution that can change a result's bits. Applied to LibTorch's global
// context before the first CUDA call (execution.h); recorded in the manifest and the run id.
struct ExecutionConfig {
  Device device;                          // cpu | cuda | cuda:N
  int64_t threads = 0;                    // intra-op (and BLAS) threads; default: all cores
  Dtype dtype = Dtype::kFloat32;          // float32 | float64 (model, data and optimiser state)
  std::string deterministic = "off";      // off | strict | warn: LibTorch's deterministic algorithms
  bool cudnn = true;                      // CUDA only: cuDNN enabled
  bool cudnn_benchmark = false;           // CUDA only: autotuned (timing-dependent) algorithm choice
  bool cudnn_deterministic = false;       // CUDA only: deterministic cuDNN algorithms only
  bool tf32_matmul = false;               // CUDA only: TF32 tensor cores for float32 matmul
  bool tf32_cudnn = true;                 // CUDA only: TF32 for cuDNN convolutions (LibTorch's default)
  std::string cublas_workspace = "default";  // CUDA only: CUBLAS_WORKSPACE_CONFIG (:4096:8, :16:8);
                                             // "default" = unset, or :4096:8 when deterministic
  bool cuda_graph = true;                 // CUDA only: each step captured once as CUDA graphs, then
                                          // replayed (the same kernels and bits as eager; see graph.h)
  std::string kernels = "libtorch";       // libtorch | fused: PredNet's ConvLSTM cell and error units
                                          // and Adam as fused kernels (trainer/fused.h), other arithmetic
};

// PredNet and its Moving MNIST data (model = prednet, data = moving-mnist).
struct PredNetConfig {
  std::vector<int64_t> stack_sizes = {1, 32, 64, 128};  // channels of A_l (R_l the same); [0] = image
  std::string loss = "L0";                              // L0 | Lall | pixel_mse
  bool zero_bias = true;  // biases start at 0, as the authors' code: with PyTorch's init many seeds
                          // start with a dead prediction (a negative bias on the 1-channel l0.conv_ahat)
  int64_t nt = 10;                                      // frames per sequence
  int64_t canvas = 64;                                  // Moving MNIST canvas side
  int64_t digits = 2;                                   // digits per sequence
  int64_t eval_sequences = 256;                         // held-out test sequences
};

// Generated input–target pairs for the linear network (data = teacher; trainer/teacher.h): Σ_yx has
// exactly the singular values `sigmas`.
struct TeacherConfig {
  std::vector<double> sigmas = {4, 2, 1, 0.5};  // singular values of Σ_yx, each > 0
  int64_t inputs = 16;                          // d
  int64_t outputs = 8;                          // c
  int64_t examples = 256;                       // N training rows (whitened inputs), and N test rows
  double noise = 0;                             // standard deviation of the target noise, >= 0
};

struct RunConfig {
  ModelKind model = ModelKind::kAutoencoder;  // autoencoder | prednet | linear | torchscript
  std::string model_file;                   // torchscript: the module (torch.jit.save), forward(x) -> prediction
  std::string model_sha256;                 // torchscript: SHA-256 of model_file, set by resolve()
  std::string loss = "mse";                 // torchscript: mse | cross_entropy | module (its own loss(pred, target))
  std::vector<int64_t> hidden = {256, 64};  // encoder widths; the decoder mirrors them
  int64_t linear_hidden = 4;                // linear: hidden units h of y = W2·W1·x
  std::string data = "mnist";               // mnist | npy:X.npy[,Y.npy] | moving-mnist | teacher
  PredNetConfig prednet;
  TeacherConfig teacher;
  std::string data_dir;                     // default: $SADDLESCOPE_DATA_DIR, else "data"
  ExecutionConfig execution;
  int64_t seed = 0;                         // initial weights
  int64_t data_seed = -1;                   // example order; default: = seed
  std::string init = "default";             // default | duplicate | zero
  std::vector<std::string> duplicate_layers;  // init duplicate: these layers (unit_layers() names); all if empty
  std::vector<int64_t> duplicate_units;     // init duplicate: units copied from the first; every unit if empty
  std::string fc1_kernel = "matmul";        // autoencoder: matmul | index_add (atomic adds on CUDA)
  double init_scale = 1;                    // multiplies every seeded initial parameter
  std::string init_from;                    // "" or a run directory / snapshot directory of .npy
  Perturbation perturbation;
  int64_t steps = 2000;                     // optimiser steps
  int64_t batch_size = 1;                   // examples per step (the seed study used 1)
  std::string optimizer = "adam";           // adam | sgd (optimizer.h)
  double lr = 1e-3;                         // learning rate
  double momentum = 0;                      // sgd: momentum μ, 0 <= μ < 1 (adam: must stay 0)
  std::string fault = "none";               // none | alias-target: a planted bug (step.h)
  int64_t lr_drop_at = 0;                   // from this step on the learning rate is lr/10 (0: never)
  int64_t log_every = 100;                  // metrics are read from the device and written every k steps
  std::vector<std::string> probes;          // probe specs, resolved with the model's defaults
                                            // (probes/probe_spec.h, probe_defaults)
  int64_t snapshot_every = 0;               // parameter snapshots every k steps (0: first and last only)
  bool snapshot_grads = false;              // also snapshot the gradients
  int64_t checkpoint_every = 0;             // checkpoints every k steps (0: every 60 s of training)
  std::string out = "runs";                 // study directory; the run goes to <out>/runs/<run-id>/

  // Every key, resolved, as JSON (the manifest's "config"): flat, one entry per config key.
  nlohmann::json to_json() const;
  // The keys that determine the result (not out, data_dir, log_every, snapshot and checkpoint
  // cadence), canonical
  // JSON: hashed into the run id.
  std::string identity() const;
  // identity() without the seeds (seed, data_seed, perturbation_seed), as
  // "autoencoder-cuda-cudnn-det-t16-<hash8>": what the runs of one config over seeds share.
  std::string config_key() const;
  // "autoencoder-cuda-cudnn-det-t16-s7": the readable part of the run id.
  std::string run_prefix() const;
};

// Probe options whose default depends on the model, for probes::parse_probe_spec: PredNet's probe
// batch is 8 sequences, not 256 examples (an HVP over 8 sequences already costs 4-5 training steps of
// batch 4: docs/benchmarks.md). Empty for the other models.
std::map<std::string, std::string> probe_defaults(ModelKind model);

// The keys a file or flags may set, in order (flags spell them with '-' for '_').
const std::vector<std::string>& config_keys();
// The command-line flag of a config key: "--batch-size" for "batch_size".
std::string flag_name(const std::string& key);
// Whether `key` takes a list given by repeating its flag (--probe A --probe B).
bool config_is_list(const std::string& key);
// One line of help for `key`.
std::string config_help(const std::string& key);

// The largest config file load_toml reads: a config is a few dozen lines; anything near this is not one.
inline constexpr uint64_t kMaxConfigBytes = 1 << 20;

class ConfigBuilder {
 public:
  // Reads a TOML file. Unknown keys, wrong types and out-of-range values are errors naming file:line;
  // so are a path that is not a regular file (a FIFO, a device or a directory is refused before
  // reading) and a file larger than kMaxConfigBytes. Floating-point keys must hold values float32 can
  // represent (they end up as float32 values): 1e39 or 1e-50 for lr is an error, not ±inf or 0.
  Status load_toml(const std::string& path);
  // Sets every key of `config` (a manifest's "config": flat, key -> JSON value), as a resumed run does.
  // Same checks as the file; errors name `origin` and the key.
  Status load_json(const nlohmann::json& config, const std::string& origin);
  // Sets `key` from a JSON value as a study file's table holds it (study/study.h): `where` is its
  // "file:line". Same checks and messages as load_toml: an integer key takes only integers.
  Status set_value(const std::string& key, const nlohmann::json& value, const std::string& where);
  // Sets `key` from a flag's text (origin "--key"). Same checks as the file.
  Status set_flag(const std::string& key, const std::string& text);
  // Applies defaults (data_dir, threads, data_seed, cublas_workspace) and cross-field checks (CUDA-only
  // settings changed for a CPU device, stochastic rounding outside float32, teacher_sigmas and
  // teacher_examples that do not fit teacher_inputs and teacher_outputs, momentum with adam, fault
  // alias-target on a PredNet loss whose backward reads no target). `warnings`, when not null,
  // gets one line for each setting that is valid but probably not meant: threads above the machine's
  // cores ("--threads: threads 64 exceeds the 2 cores of this machine; ...").
  Result<RunConfig> resolve(std::vector<std::string>* warnings = nullptr) const;

 private:
  std::string where(const std::string& key) const;  // origin of `key`, for messages
  Status check_teacher(const TeacherConfig& t) const;  // sigmas fit the shape, enough examples
  // model torchscript: model_file readable, model_sha256 set from it (or equal to it, for a resumed run),
  // a fault its loss can honour; any other model: no torchscript key set.
  Status check_torchscript(RunConfig& c) const;

  RunConfig cfg_;
  std::map<std::string, std::string> origin_;  // key -> "file:line" or "--flag"
};

}  // namespace saddlescope::trainer
