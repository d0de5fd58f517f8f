// The run config's keys, by topic: the model and its data, the execution settings that decide the bits,
// the initial weights and what perturbs a run, and the training loop with its probes and outputs.
#include "config_key.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <thread>

#include "float32_range.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/sha256.h"
#include "saddlescope/trainer/data_spec.h"
#include "saddlescope/trainer/mnist.h"
#include "saddlescope/trainer/perturbation_spec.h"

namespace saddlescope::trainer::config_detail {
namespace {

#define FIELD(expr) [](const RunConfig& c) { return nlohmann::json(c.expr); }

std::vector<Key> model_and_data_keys() {
  return {
      {"model", Kind::kString,
       "model to train: autoencoder, prednet, linear (y = W2·W1·x, a saddle benchmark) or torchscript (model_file)",
       [](RunConfig& c, const Value& v) { return set_parsed(&c.model, parse_model, v.s); },
       [](const RunConfig& c) { return nlohmann::json(model_name(c.model)); }},
      {"model_file", Kind::kString,
       "model torchscript: a module saved with torch.jit.save whose forward(x) returns the prediction; its saved "
       "weights are the initial weights",
       [](RunConfig& c, const Value& v) { c.model_file = v.s; return ""; }, FIELD(model_file)},
      {"model_sha256", Kind::kString,
       "model torchscript: SHA-256 of model_file (default: computed when the run starts; a different value is an "
       "error: the file changed)",
       [](RunConfig& c, const Value& v) -> std::string {
         c.model_sha256 = v.s;
         if (!v.s.empty() && (v.s.size() != 64 || v.s.find_first_not_of("0123456789abcdef") != std::string::npos))
           return "must be 64 lowercase hexadecimal digits";
         return "";
       }, FIELD(model_sha256)},
      {"loss", Kind::kString,
       "model torchscript: mse (against the data's targets, or the input itself when there are none), "
       "cross_entropy (class labels) or module (the module's own scripted loss(prediction, target))",
       [](RunConfig& c, const Value& v) { c.loss = v.s; return one_of(v.s, {"mse", "cross_entropy", "module"}); },
       FIELD(loss)},
      {"hidden", Kind::kIntList, "encoder widths, decoder mirrors them, e.g. 256,64",
       [](RunConfig& c, const Value& v) -> std::string {
         c.hidden = v.list;
         if (v.list.empty()) return "must list at least one width";
         for (int64_t w : v.list)
           if (w < 1 || w > 65536) return fmt::format("widths must be in 1..65536, got {}", w);
         return "";
       }, FIELD(hidden)},
      {"linear_hidden", Kind::kInt, "hidden units of the linear network",
       [](RunConfig& c, const Value& v) {
         c.linear_hidden = v.i;
         return v.i > 65536 ? fmt::format("must be <= 65536, got {}", v.i) : at_least(v.i, 1);
       }, FIELD(linear_hidden)},
      {"data", Kind::kString, "training data: mnist, cifar10[:train=N], moby-dick[:context=T], npy:X.npy[,Y.npy], moving-mnist or teacher",
       [](RunConfig& c, const Value& v) {
         c.data = v.s;
         auto spec = parse_data_spec(v.s);
         return spec ? std::string() : spec.status().message();
       }, FIELD(data)},
      {"prednet_stacks", Kind::kIntList, "PredNet channels per layer, image first",
       [](RunConfig& c, const Value& v) -> std::string {
         c.prednet.stack_sizes = v.list;
         if (v.list.size() < 2) return "must list the image channels and at least one layer";
         for (int64_t w : v.list)
           if (w < 1 || w > 4096) return fmt::format("sizes must be in 1..4096, got {}", w);
         return "";
       }, FIELD(prednet.stack_sizes)},
      {"prednet_loss", Kind::kString, "PredNet loss: L0, Lall or pixel_mse",
       [](RunConfig& c, const Value& v) { c.prednet.loss = v.s; return one_of(v.s, {"L0", "Lall", "pixel_mse"}); },
       FIELD(prednet.loss)},
      {"prednet_zero_bias", Kind::kBool, "PredNet biases start at 0 (the authors' init)",
       [](RunConfig& c, const Value& v) { c.prednet.zero_bias = v.b; return ""; }, FIELD(prednet.zero_bias)},
      {"nt", Kind::kInt, "PredNet frames per sequence",
       [](RunConfig& c, const Value& v) {
         c.prednet.nt = v.i;
         return v.i > 20 ? fmt::format("must be <= 20, got {}", v.i) : at_least(v.i, 2);
       }, FIELD(prednet.nt)},
      {"canvas", Kind::kInt, "Moving MNIST canvas side in pixels",
       [](RunConfig& c, const Value& v) { c.prednet.canvas = v.i; return at_least(v.i, 28); }, FIELD(prednet.canvas)},
      {"digits", Kind::kInt, "Moving MNIST digits per sequence",
       [](RunConfig& c, const Value& v) { c.prednet.digits = v.i; return at_least(v.i, 1); }, FIELD(prednet.digits)},
      {"eval_sequences", Kind::kInt, "Moving MNIST held-out test sequences",
       [](RunConfig& c, const Value& v) { c.prednet.eval_sequences = v.i; return at_least(v.i, 1); },
       FIELD(prednet.eval_sequences)},
      {"teacher_sigmas", Kind::kDoubleList, "data teacher: singular values of the cross-moment Σ_yx",
       [](RunConfig& c, const Value& v) -> std::string {
         c.teacher.sigmas = v.doubles;
         if (v.doubles.empty()) return "must list at least one singular value";
         for (double x : v.doubles)
           if (std::string why = positive_float32(x); !why.empty()) return "values " + why;
         return "";
       }, FIELD(teacher.sigmas)},
      {"teacher_inputs", Kind::kInt, "data teacher: input features",
       [](RunConfig& c, const Value& v) { c.teacher.inputs = v.i; return at_least(v.i, 1); }, FIELD(teacher.inputs)},
      {"teacher_outputs", Kind::kInt, "data teacher: target features",
       [](RunConfig& c, const Value& v) { c.teacher.outputs = v.i; return at_least(v.i, 1); }, FIELD(teacher.outputs)},
      {"teacher_examples", Kind::kInt, "data teacher: training examples (as many test examples)",
       [](RunConfig& c, const Value& v) { c.teacher.examples = v.i; return at_least(v.i, 1); },
       FIELD(teacher.examples)},
      {"teacher_noise", Kind::kDouble, "data teacher: standard deviation of the target noise",
       [](RunConfig& c, const Value& v) {
         c.teacher.noise = v.d;
         return v.d >= 0 && std::isfinite(v.d) ? in_float32(v.d) : fmt::format("must be >= 0 and finite, got {}", v.d);
       }, FIELD(teacher.noise)},
      {"data_dir", Kind::kString, "data cache directory (default: $SADDLESCOPE_DATA_DIR or data)",
       [](RunConfig& c, const Value& v) { c.data_dir = v.s; return v.s.empty() ? "must not be empty" : ""; },
       FIELD(data_dir)},
  };
}

std::vector<Key> execution_keys() {
  return {
      {"device", Kind::kString, "cpu, cuda or cuda:N",
       [](RunConfig& c, const Value& v) { return set_parsed(&c.execution.device, parse_device, v.s); },
       [](const RunConfig& c) { return nlohmann::json(c.execution.device.name()); }},
      {"threads", Kind::kInt, "intra-op and BLAS threads (default: all cores)",
       [](RunConfig& c, const Value& v) {
         c.execution.threads = v.i;
         return v.i > 1024 ? fmt::format("must be <= 1024, got {}", v.i) : at_least(v.i, 1);
       }, FIELD(execution.threads)},
      {"dtype", Kind::kString, "float32 or float64 (model, data, optimiser)",
       [](RunConfig& c, const Value& v) { return set_parsed(&c.execution.dtype, parse_dtype, v.s); },
       [](const RunConfig& c) { return nlohmann::json(dtype_name(c.execution.dtype)); }},
      {"deterministic", Kind::kString, "LibTorch deterministic algorithms: off, strict or warn",
       [](RunConfig& c, const Value& v) {
         c.execution.deterministic = v.s;
         return one_of(v.s, {"off", "strict", "warn"});
       }, FIELD(execution.deterministic)},
      {"cudnn", Kind::kBool, "CUDA: cuDNN enabled",
       [](RunConfig& c, const Value& v) { c.execution.cudnn = v.b; return ""; }, FIELD(execution.cudnn), true},
      {"cudnn_benchmark", Kind::kBool, "CUDA: cuDNN autotuning (timing-dependent algorithm choice)",
       [](RunConfig& c, const Value& v) { c.execution.cudnn_benchmark = v.b; return ""; },
       FIELD(execution.cudnn_benchmark), true},
      {"cudnn_deterministic", Kind::kBool, "CUDA: deterministic cuDNN algorithms only",
       [](RunConfig& c, const Value& v) { c.execution.cudnn_deterministic = v.b; return ""; },
       FIELD(execution.cudnn_deterministic), true},
      {"tf32_matmul", Kind::kBool, "CUDA: TF32 tensor cores for float32 matmul",
       [](RunConfig& c, const Value& v) { c.execution.tf32_matmul = v.b; return ""; },
       FIELD(execution.tf32_matmul), true},
      {"tf32_cudnn", Kind::kBool, "CUDA: TF32 for cuDNN convolutions",
       [](RunConfig& c, const Value& v) { c.execution.tf32_cudnn = v.b; return ""; },
       FIELD(execution.tf32_cudnn), true},
      {"cublas_workspace", Kind::kString,
       "CUDA: CUBLAS_WORKSPACE_CONFIG, :4096:8 or :16:8 (default: unset, or :4096:8 when deterministic)",
       [](RunConfig& c, const Value& v) {
         c.execution.cublas_workspace = v.s;
         return one_of(v.s, {"default", ":4096:8", ":16:8"});
       }, FIELD(execution.cublas_workspace), true},
      {"cuda_graph", Kind::kBool, "CUDA: capture each training step as CUDA graphs and replay them (same bits)",
       [](RunConfig& c, const Value& v) { c.execution.cuda_graph = v.b; return ""; },
       FIELD(execution.cuda_graph), true},
      {"kernels", Kind::kString,
       "libtorch (LibTorch's ops) or fused: PredNet's ConvLSTM cell and error units and Adam each one "
       "kernel of this project (CUDA, or a CPU loop), whose rounding differs from LibTorch's",
       [](RunConfig& c, const Value& v) {
         c.execution.kernels = v.s;
         return one_of(v.s, {"libtorch", "fused"});
       }, FIELD(execution.kernels)},
  };
}

std::vector<Key> initial_weights_and_perturbation_keys() {
  return {
      {"seed", Kind::kInt, "seed of the initial weights",
       [](RunConfig& c, const Value& v) { c.seed = v.i; return at_least(v.i, 0); }, FIELD(seed)},
      {"data_seed", Kind::kInt, "seed of the example order (default: seed)",
       [](RunConfig& c, const Value& v) { c.data_seed = v.i; return at_least(v.i, 0); }, FIELD(data_seed)},
      {"init", Kind::kString,
       "initial weights: default (seeded), duplicate (all hidden units of a layer copies of its first: a "
       "permutation-symmetric saddle) or zero",
       [](RunConfig& c, const Value& v) { c.init = v.s; return one_of(v.s, {"default", "duplicate", "zero"}); },
       FIELD(init)},
      {"duplicate_layers", Kind::kStringList,
       "init duplicate: the layers whose units are copied, as the symmetry probe names them (encoder.fc1, "
       "l1.r, fc1); default: every layer with outgoing weights",
       [](RunConfig& c, const Value& v) -> std::string {
         c.duplicate_layers = v.strings;
         for (const auto& name : v.strings)
           if (name.empty()) return "layer names must not be empty";
         if (const std::string* twice = first_repeat(v.strings)) return "layer '" + *twice + "' is listed twice";
         return "";
       }, FIELD(duplicate_layers)},
      {"duplicate_units", Kind::kIntList,
       "init duplicate: the units made copies of the first one listed, e.g. 0,64 (the pair in two GEMM tiles); "
       "default: every unit of the layer copies unit 0",
       [](RunConfig& c, const Value& v) -> std::string {
         c.duplicate_units = v.list;
         if (v.list.size() == 1) return "must list at least two units (the first is copied into the others)";
         for (int64_t u : v.list)
           if (u < 0) return fmt::format("units must be >= 0, got {}", u);
         if (const int64_t* twice = first_repeat(v.list)) return fmt::format("unit {} is listed twice", *twice);
         return "";
       }, FIELD(duplicate_units)},
      {"fc1_kernel", Kind::kString,
       "autoencoder: how encoder.fc1 is computed: matmul (one GEMM) or index_add (each term x_p*W[:,p] gathered "
       "and scatter-added per example, an embedding bag: atomic adds on CUDA, in the order the threads run)",
       [](RunConfig& c, const Value& v) { c.fc1_kernel = v.s; return one_of(v.s, {"matmul", "index_add"}); },
       FIELD(fc1_kernel)},
      {"init_scale", Kind::kDouble,
       "multiplies every seeded initial parameter (1e-3: a small initialisation, near the saddle at 0)",
       [](RunConfig& c, const Value& v) { c.init_scale = v.d; return positive_float32(v.d); }, FIELD(init_scale)},
      {"init_from", Kind::kString, "initial weights from a run directory or a directory of .npy files",
       [](RunConfig& c, const Value& v) { c.init_from = v.s; return ""; }, FIELD(init_from)},
      {"perturbation", Kind::kString,
       "none, shuffle-reduction, gaussian:SIGMA[:element|:absolute], stochastic-rounding, bitflip[:PARAM[:INDEX]]",
       [](RunConfig& c, const Value& v) -> std::string {
         auto p = parse_perturbation(v.s);
         if (!p) return p.status().message();
         p->seed = c.perturbation.seed;  // a key of its own
         c.perturbation = *p;
         return "";
       },
       [](const RunConfig& c) { return nlohmann::json(c.perturbation.spec()); }},
      {"perturbation_seed", Kind::kInt, "seed of the perturbation's random stream",
       [](RunConfig& c, const Value& v) { c.perturbation.seed = v.i; return at_least(v.i, 0); },
       FIELD(perturbation.seed)},
      {"fault", Kind::kString,
       "a planted bug: none, or alias-target (the loss reads its target from a buffer that the next batch's "
       "target overwrites between forward and backward: the gradient is against the wrong target)",
       [](RunConfig& c, const Value& v) { c.fault = v.s; return one_of(v.s, {"none", "alias-target"}); }, FIELD(fault)},
  };
}

std::vector<Key> training_and_output_keys() {
  return {
      {"probe", Kind::kStringList,
       "probes, repeatable: " + probes::probe_grammar() + " (prednet's curvature batch: 8)",
       [](RunConfig& c, const Value& v) -> std::string {
         // Checked now, resolved by resolve() once the model (and so its probe defaults) is known.
         c.probes.clear();
         for (const auto& text : v.strings) {
           auto spec = probes::parse_probe_spec(text);
           // "probe 'x': why" -> "'x': why": the caller already names the key.
           if (!spec) return spec.status().message().substr(6);
           c.probes.push_back(text);
         }
         return "";
       }, FIELD(probes)},
      {"steps", Kind::kInt, "optimiser steps",
       [](RunConfig& c, const Value& v) { c.steps = v.i; return at_least(v.i, 1); }, FIELD(steps)},
      {"batch_size", Kind::kInt, "examples per step",
       [](RunConfig& c, const Value& v) { c.batch_size = v.i; return at_least(v.i, 1); }, FIELD(batch_size)},
      {"optimizer", Kind::kString, "optimiser: adam or sgd (with momentum)",
       [](RunConfig& c, const Value& v) { c.optimizer = v.s; return one_of(v.s, {"adam", "sgd"}); }, FIELD(optimizer)},
      {"lr", Kind::kDouble, "learning rate",
       [](RunConfig& c, const Value& v) {
         c.lr = v.d;
         return positive_float32(v.d);
       }, FIELD(lr)},
      {"momentum", Kind::kDouble, "optimizer sgd: momentum, 0 <= momentum < 1 (PyTorch's: b = momentum*b + g)",
       [](RunConfig& c, const Value& v) {
         c.momentum = v.d;
         return v.d >= 0 && v.d < 1 ? in_float32(v.d) : fmt::format("must be >= 0 and < 1, got {}", v.d);
       }, FIELD(momentum)},
      {"lr_drop_at", Kind::kInt, "step from which the learning rate is lr/10 (0: never)",
       [](RunConfig& c, const Value& v) { c.lr_drop_at = v.i; return at_least(v.i, 0); }, FIELD(lr_drop_at)},
      {"log_every", Kind::kInt, "steps between metric reads and log lines",
       [](RunConfig& c, const Value& v) { c.log_every = v.i; return at_least(v.i, 1); }, FIELD(log_every)},
      {"snapshot_every", Kind::kInt, "parameter snapshots every k steps (0: first and last only)",
       [](RunConfig& c, const Value& v) { c.snapshot_every = v.i; return at_least(v.i, 0); },
       FIELD(snapshot_every)},
      {"checkpoint_every", Kind::kInt, "checkpoints (for --resume) every k steps (0: every 60 s of training)",
       [](RunConfig& c, const Value& v) { c.checkpoint_every = v.i; return at_least(v.i, 0); },
       FIELD(checkpoint_every)},
      {"snapshot_grads", Kind::kBool, "snapshot gradients with the parameters",
       [](RunConfig& c, const Value& v) { c.snapshot_grads = v.b; return ""; }, FIELD(snapshot_grads)},
      {"out", Kind::kString, "study directory; the run is written to <out>/runs/<run-id>/",
       [](RunConfig& c, const Value& v) { c.out = v.s; return v.s.empty() ? "must not be empty" : ""; },
       FIELD(out)},
  };
}

#undef FIELD

}  // namespace

const std::vector<Key>& keys() {
  static const std::vector<Key> k = [] {
    std::vector<Key> all;
    for (auto part : {model_and_data_keys, execution_keys, initial_weights_and_perturbation_keys, training_and_output_keys}) {
      std::vector<Key> keys = part();
      all.insert(all.end(), std::make_move_iterator(keys.begin()), std::make_move_iterator(keys.end()));
    }
    return all;
  }();
  return k;
}

}  // namespace saddlescope::trainer::config_detail
