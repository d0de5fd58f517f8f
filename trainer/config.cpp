#include "saddlescope/trainer/config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "float32_range.h"
#include "saddlescope/base/text.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/sha256.h"
#include "saddlescope/trainer/data_spec.h"
#include "saddlescope/trainer/mnist.h"
#include "saddlescope/trainer/perturbation_spec.h"
#include "saddlescope/trainer/toml_limits.h"

namespace saddlescope::trainer {
namespace {

enum class Kind { kInt, kDouble, kString, kBool, kIntList, kDoubleList, kStringList };

// A value as read from a file or a flag, before the key's own range check.
struct Value {
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::string s;
  std::vector<int64_t> list;
  std::vector<double> doubles;
  std::vector<std::string> strings;
};

// Each key: its type, one line of help, a setter that range-checks the value (returning "" or what was
// expected: "must be >= 1, got 0"), and a getter for the resolved JSON.
struct Key {
  const char* name;
  Kind kind;
  std::string help;
  std::function<std::string(RunConfig&, const Value&)> set;
  std::function<nlohmann::json(const RunConfig&)> get;
  bool cuda_only = false;  // changing it on a CPU device is an error: it could not be honoured
};

std::string at_least(int64_t v, int64_t lo) {
  return v >= lo ? "" : fmt::format("must be >= {}, got {}", lo, v);
}

std::string one_of(const std::string& v, std::initializer_list<const char*> options) {
  std::string list;
  for (const char* o : options) {
    if (v == o) return "";
    list += (list.empty() ? "" : ", ") + std::string(o);
  }
  return "must be one of " + list + ", got '" + printable(v) + "'";  // a TOML string may hold a newline
}

// Sets *field to what `parse` makes of `text` and returns "", or returns what was expected.
template <class T>
std::string set_parsed(T* field, Result<T> (*parse)(const std::string&), const std::string& text) {
  Result<T> r = parse(text);
  if (!r) return r.status().message();
  *field = *r;
  return "";
}

// The first element of `v` that repeats an earlier one, or nullptr.
template <class T>
const T* first_repeat(const std::vector<T>& v) {
  std::set<T> seen;
  for (const T& x : v)
    if (!seen.insert(x).second) return &x;
  return nullptr;
}

#define FIELD(expr) [](const RunConfig& c) { return nlohmann::json(c.expr); }

const std::vector<Key>& keys() {
  static const std::vector<Key> k = {
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
  return k;
}

#undef FIELD

const Key* find_key(const std::string& name) {
  for (const auto& k : keys())
    if (name == k.name) return &k;
  return nullptr;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kInt: return "an integer";
    case Kind::kDouble: return "a number";
    case Kind::kString: return "a string";
    case Kind::kBool: return "true or false";
    case Kind::kIntList: return "a list of integers";
    case Kind::kDoubleList: return "a list of numbers";
    case Kind::kStringList: return "a list of strings";
  }
  return "?";
}

// Value from a flag's text.
bool parse_text(Kind kind, const std::string& t, Value* v) {
  switch (kind) {
    case Kind::kInt: return parse_int(t, &v->i);
    case Kind::kDouble: {
      if (t.empty()) return false;
      char* end = nullptr;
      v->d = std::strtod(t.c_str(), &end);
      return *end == '\0';
    }
    case Kind::kString: v->s = t; return true;
    case Kind::kBool:
      v->b = t == "true";
      return t == "true" || t == "false";
    case Kind::kStringList: v->strings = {t}; return true;
    case Kind::kIntList:
      for (const auto& part : split(t, ',')) {
        int64_t x;
        if (!parse_int(part, &x)) return false;
        v->list.push_back(x);
      }
      return true;
    case Kind::kDoubleList:
      for (const auto& part : split(t, ',')) {
        Value x;
        if (!parse_text(Kind::kDouble, part, &x)) return false;
        v->doubles.push_back(x.d);
      }
      return true;
  }
  return false;
}

// Value from a TOML node.
bool parse_node(Kind kind, const toml::node& n, Value* v) {
  switch (kind) {
    case Kind::kInt:
      if (!n.is_integer()) return false;
      v->i = n.as_integer()->get();
      return true;
    case Kind::kDouble:
      if (n.is_floating_point()) v->d = n.as_floating_point()->get();
      else if (n.is_integer()) v->d = static_cast<double>(n.as_integer()->get());
      else return false;
      return true;
    case Kind::kString:
      if (!n.is_string()) return false;
      v->s = n.as_string()->get();
      return true;
    case Kind::kBool:
      if (!n.is_boolean()) return false;
      v->b = n.as_boolean()->get();
      return true;
    case Kind::kIntList:
      if (!n.is_array()) return false;
      for (const auto& e : *n.as_array()) {
        if (!e.is_integer()) return false;
        v->list.push_back(e.as_integer()->get());
      }
      return true;
    case Kind::kDoubleList:
      if (!n.is_array()) return false;
      for (const auto& e : *n.as_array()) {
        Value x;
        if (!parse_node(Kind::kDouble, e, &x)) return false;
        v->doubles.push_back(x.d);
      }
      return true;
    case Kind::kStringList:
      if (!n.is_array()) return false;
      for (const auto& e : *n.as_array()) {
        if (!e.is_string()) return false;
        v->strings.push_back(e.as_string()->get());
      }
      return true;
  }
  return false;
}

}  // namespace

const std::vector<std::string>& config_keys() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& k : keys()) n.push_back(k.name);
    return n;
  }();
  return names;
}

std::map<std::string, std::string> probe_defaults(ModelKind model) {
  if (model == ModelKind::kPredNet) return {{"batch", "8"}};
  return {};
}

std::string flag_name(const std::string& key) {
  std::string flag = "--" + key;
  for (char& c : flag) if (c == '_') c = '-';
  return flag;
}

bool config_is_list(const std::string& key) {
  const Key* k = find_key(key);
  return k && k->kind == Kind::kStringList;
}

std::string config_help(const std::string& key) {
  const Key* k = find_key(key);
  if (!k) return "";
  std::string help = k->help;
  // Defaults come from RunConfig itself, so help never drifts from the code; keys whose default is
  // resolved at run time say so in their help text.
  if (help.find("(default") == std::string::npos) {
    nlohmann::json d = RunConfig().to_json()[key];
    help += " (default: " + (d.is_string() ? d.get<std::string>() : d.dump()) + ")";
  }
  return help;
}

Status ConfigBuilder::load_toml(const std::string& path) {
  // Read through the store's one door (a FIFO, a device or a directory is refused before reading), once:
  // what is parsed is what was checked.
  auto text = store::read_file(path, kMaxConfigBytes, "the limit for a config file");
  if (!text) return text.status();
  SADDLESCOPE_RETURN_IF_ERROR(check_toml_nesting(*text, path));
  toml::table table;
  try {
    table = toml::parse(std::string_view(*text), std::string_view(path));
  } catch (const toml::parse_error& e) {
    // toml++ quotes what it saw, a newline included: shown escaped, the error stays one line.
    return Status::Error(
        fmt::format("{}:{}: {}", path, e.source().begin.line, printable(std::string(e.description()))));
  }
  for (const auto& [name, node] : table) {
    std::string where = fmt::format("{}:{}", path, node.source().begin.line);
    const Key* k = find_key(std::string(name.str()));
    if (!k) return Status::Error(where + ": unknown key '" + std::string(name.str()) + "'");
    Value v;
    if (!parse_node(k->kind, node, &v))
      return Status::Error(where + ": " + k->name + " must be " + kind_name(k->kind));
    std::string why = k->set(cfg_, v);
    if (!why.empty()) return Status::Error(where + ": " + k->name + " " + why);
    origin_[k->name] = where;
  }
  return Status::Ok();
}

Status ConfigBuilder::set_flag(const std::string& key, const std::string& text) {
  const Key* k = find_key(key);
  SADDLESCOPE_CHECK(k != nullptr);  // flags are generated from keys()
  std::string flag = flag_name(key);
  Value v;
  if (!parse_text(k->kind, text, &v))
    return Status::Error(flag + ": must be " + kind_name(k->kind) + ", got '" + printable(text) + "'");
  if (k->kind == Kind::kStringList && origin_[k->name] == flag) {
    // A repeated flag adds to the list it started (and which replaced the file's).
    for (const auto& item : k->get(cfg_)) v.strings.insert(v.strings.end() - 1, item.get<std::string>());
  }
  std::string why = k->set(cfg_, v);
  if (!why.empty()) return Status::Error(flag + ": " + why);
  origin_[k->name] = flag;
  return Status::Ok();
}

namespace {

// Value from JSON of exactly the key's type (JSON's own conversions would turn 1.5 into an integer).
bool parse_json(Kind kind, const nlohmann::json& j, Value* v) {
  auto all = [&](auto is) { return j.is_array() && std::all_of(j.begin(), j.end(), is); };
  switch (kind) {
    case Kind::kInt:
      if (!j.is_number_integer()) return false;
      v->i = j.get<int64_t>();
      return true;
    case Kind::kDouble:
      if (!j.is_number()) return false;
      v->d = j.get<double>();
      return true;
    case Kind::kString:
      if (!j.is_string()) return false;
      v->s = j.get<std::string>();
      return true;
    case Kind::kBool:
      if (!j.is_boolean()) return false;
      v->b = j.get<bool>();
      return true;
    case Kind::kIntList:
      if (!all([](const nlohmann::json& e) { return e.is_number_integer(); })) return false;
      v->list = j.get<std::vector<int64_t>>();
      return true;
    case Kind::kDoubleList:
      if (!all([](const nlohmann::json& e) { return e.is_number(); })) return false;
      v->doubles = j.get<std::vector<double>>();
      return true;
    case Kind::kStringList:
      if (!all([](const nlohmann::json& e) { return e.is_string(); })) return false;
      v->strings = j.get<std::vector<std::string>>();
      return true;
  }
  return false;
}

}  // namespace

Status ConfigBuilder::set_value(const std::string& key, const nlohmann::json& j, const std::string& where) {
  const Key* k = find_key(key);
  if (!k) return Status::Error(where + ": unknown key '" + key + "'");
  Value v;
  if (!parse_json(k->kind, j, &v)) return Status::Error(where + ": " + k->name + " must be " + kind_name(k->kind));
  std::string why = k->set(cfg_, v);
  if (!why.empty()) return Status::Error(where + ": " + k->name + " " + why);
  origin_[k->name] = where;
  return Status::Ok();
}

Status ConfigBuilder::load_json(const nlohmann::json& config, const std::string& origin) {
  if (!config.is_object()) return Status::Error(origin + ": config must be a JSON object");
  for (const auto& [name, j] : config.items()) {
    const Key* k = find_key(name);
    if (!k) return Status::Error(origin + ": config." + name + " is not a config key of this saddlescope");
    Value v;
    if (!parse_json(k->kind, j, &v))
      return Status::Error(origin + ": config." + name + " must be " + kind_name(k->kind) + ", got " + j.dump());
    std::string why = k->set(cfg_, v);
    if (!why.empty()) return Status::Error(origin + ": config." + name + " " + why);
    origin_[k->name] = origin + ": config." + name;
  }
  return Status::Ok();
}

Result<RunConfig> ConfigBuilder::resolve(std::vector<std::string>* warnings) const {
  RunConfig c = cfg_;
  ExecutionConfig& e = c.execution;
  if (!e.device.is_cuda()) {
    // A CUDA-only setting changed for a CPU run could not be honoured: say so rather than ignore it.
    const RunConfig d;
    for (const auto& k : keys())
      if (k.cuda_only && origin_.count(k.name) && k.get(c) != k.get(d))
        return Status::Error(origin_.at(k.name) + ": " + k.name + " applies to CUDA devices only (device is cpu)");
  }
  if (c.perturbation.kind == "stochastic-rounding" && e.dtype != Dtype::kFloat32)
    return Status::Error(where("perturbation") + ": stochastic-rounding rounds float64 updates to float32; "
                         "it needs dtype float32, got " + dtype_name(e.dtype));
  if (c.optimizer == "adam" && c.momentum != 0)
    return Status::Error(fmt::format("{}: momentum applies to optimizer sgd only (optimizer is adam), got {}",
                                     where("momentum"), c.momentum));
  if (c.fault == "alias-target" && c.model == ModelKind::kPredNet && c.prednet.loss != "pixel_mse")
    return Status::Error(where("fault") + ": alias-target needs a loss whose backward reads its target; prednet_loss " +
                         c.prednet.loss + " is a mean of error units computed in the forward (use pixel_mse)");
  if (c.data == "teacher") SADDLESCOPE_RETURN_IF_ERROR(check_teacher(c.teacher));
  if (c.init != "duplicate") {
    const std::string set = !c.duplicate_layers.empty() ? "duplicate_layers" : !c.duplicate_units.empty() ? "duplicate_units" : "";
    if (!set.empty())
      return Status::Error(where(set) + ": " + set + " applies to init duplicate only (init is " + c.init + ")");
  }
  if (e.kernels == "fused" && c.model != ModelKind::kPredNet && c.optimizer != "adam")
    return Status::Error(where("kernels") + ": kernels fused has nothing to fuse in model " + model_name(c.model) +
                         " with optimizer " + c.optimizer + " (it fuses PredNet's cell and error units, and Adam)");
  SADDLESCOPE_RETURN_IF_ERROR(check_torchscript(c));
  if (c.fc1_kernel != "matmul" && c.model != ModelKind::kAutoencoder)
    return Status::Error(where("fc1_kernel") + ": fc1_kernel applies to model autoencoder only (model is " +
                         model_name(c.model) + ")");
  for (auto& text : c.probes) text = probes::parse_probe_spec(text, probe_defaults(c.model))->resolved();
  if (c.data_dir.empty()) c.data_dir = default_data_dir();
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  if (e.threads == 0) e.threads = cores;
  if (e.threads > cores && warnings)
    warnings->push_back(fmt::format("{}: threads {} exceeds the {} cores of this machine; the threads will share "
                                    "cores and run slower", where("threads"), e.threads, cores));
  if (c.data_seed < 0) c.data_seed = c.seed;
  if (c.log_every > c.steps) c.log_every = c.steps;
  // cuBLAS is deterministic only with a fixed workspace (PyTorch's reproducibility notes).
  if (e.cublas_workspace == "default" && e.deterministic != "off" && e.device.is_cuda())
    e.cublas_workspace = ":4096:8";
  return c;
}

Status ConfigBuilder::check_torchscript(RunConfig& c) const {
  if (c.model != ModelKind::kTorchScript) {
    const nlohmann::json defaults = RunConfig().to_json(), set = c.to_json();
    for (const char* key : {"model_file", "model_sha256", "loss"})
      if (origin_.count(key) && set[key] != defaults[key])
        return Status::Error(where(key) + ": " + key + " applies to model torchscript only (model is " +
                             model_name(c.model) + ")");
    return Status::Ok();
  }
  if (c.model_file.empty()) return Status::Error(where("model") + ": model torchscript needs model_file (a .pt file)");
  auto digest = store::sha256_file(c.model_file);
  if (!digest) return Status::Error(where("model_file") + ": " + digest.status().message());
  if (!c.model_sha256.empty() && c.model_sha256 != *digest)
    return Status::Error(fmt::format("{}: {} has SHA-256 {}, not the {} this run was started with ({}): the file "
                                     "changed", where("model_file"), c.model_file, *digest, c.model_sha256,
                                     where("model_sha256")));
  c.model_sha256 = *digest;
  if (c.init == "duplicate" && c.duplicate_layers.empty())
    return Status::Error(where("init") + ": init duplicate of a torchscript module needs duplicate_layers (weight "
                         "parameters by name, e.g. fc1.weight): a module's layers are not known in order");
  if (c.fault == "alias-target" && c.loss != "mse")
    return Status::Error(where("fault") + ": alias-target needs a loss whose backward reads its target; loss " + c.loss +
                         " is not torch's mse_loss (use loss mse)");
  return Status::Ok();
}

Status ConfigBuilder::check_teacher(const TeacherConfig& t) const {
  auto rank = static_cast<int64_t>(t.sigmas.size());
  if (rank > std::min(t.inputs, t.outputs))
    return Status::Error(fmt::format("{}: teacher_sigmas lists {} values; a teacher of {} inputs and {} outputs "
                                     "has at most {}", where("teacher_sigmas"), rank, t.inputs, t.outputs,
                                     std::min(t.inputs, t.outputs)));
  if (t.examples < t.inputs)
    return Status::Error(fmt::format("{}: teacher_examples must be >= teacher_inputs = {} (the inputs are "
                                     "whitened), got {}", where("teacher_examples"), t.inputs, t.examples));
  if (t.noise > 0 && t.examples == t.inputs)
    return Status::Error(fmt::format("{}: teacher_examples must exceed teacher_inputs = {} when teacher_noise "
                                     "> 0 (the noise is orthogonal to the inputs), got {}",
                                     where("teacher_examples"), t.inputs, t.examples));
  return Status::Ok();
}

std::string ConfigBuilder::where(const std::string& key) const {
  auto it = origin_.find(key);
  return it == origin_.end() ? "default " + key : it->second;
}

nlohmann::json RunConfig::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& k : keys()) j[k.name] = k.get(*this);
  return j;
}

}  // namespace saddlescope::trainer
