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
#include "config_key.h"

namespace saddlescope::trainer {

using namespace config_detail;  // the key table (config_key.h)

namespace {

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
