#include "saddlescope/trainer/config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "saddlescope/trainer/mnist.h"

namespace saddlescope::trainer {
namespace {

enum class Kind { kInt, kDouble, kString, kIntList };

// A value as read from a file or a flag, before the key's own range check.
struct Value {
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<int64_t> list;
};

// Each key: its type, one line of help, and a setter that range-checks the value. A setter returns ""
// or what was expected ("must be >= 1, got 0").
struct Key {
  const char* name;
  Kind kind;
  const char* help;
  std::function<std::string(RunConfig&, const Value&)> set;
};

std::string at_least(int64_t v, int64_t lo) {
  return v >= lo ? "" : fmt::format("must be >= {}, got {}", lo, v);
}

std::string check_device(const std::string& d) {
  if (d == "cpu" || d == "cuda") return "";
  if (d.rfind("cuda:", 0) == 0 && d.size() > 5 && d.size() < 9 &&
      d.find_first_not_of("0123456789", 5) == std::string::npos)
    return "";
  return "must be cpu, cuda or cuda:N, got '" + d + "'";
}

std::string check_data(const std::string& d) {
  if (d == "mnist") return "";
  if (d.rfind("npy:", 0) == 0) {
    std::string rest = d.substr(4);
    size_t comma = rest.find(',');
    std::string x = rest.substr(0, comma);
    std::string y = comma == std::string::npos ? "ok" : rest.substr(comma + 1);
    if (!x.empty() && !y.empty() && y.find(',') == std::string::npos) return "";
  }
  return "must be mnist or npy:X.npy[,Y.npy], got '" + d + "'";
}

const std::vector<Key>& keys() {
  static const std::vector<Key> k = {
      {"model", Kind::kString, "model to train: autoencoder",
       [](RunConfig& c, const Value& v) {
         c.model = v.s;
         return v.s == "autoencoder" ? "" : "must be autoencoder, got '" + v.s + "'";
       }},
      {"hidden", Kind::kIntList, "encoder widths, decoder mirrors them (e.g. 256,64)",
       [](RunConfig& c, const Value& v) -> std::string {
         c.hidden = v.list;
         if (v.list.empty()) return "must list at least one width";
         for (int64_t w : v.list)
           if (w < 1 || w > 65536) return fmt::format("widths must be in 1..65536, got {}", w);
         return "";
       }},
      {"data", Kind::kString, "training data: mnist or npy:X.npy[,Y.npy]",
       [](RunConfig& c, const Value& v) { c.data = v.s; return check_data(v.s); }},
      {"data_dir", Kind::kString, "data cache directory (default: $SADDLESCOPE_DATA_DIR or data)",
       [](RunConfig& c, const Value& v) {
         c.data_dir = v.s;
         return v.s.empty() ? std::string("must not be empty") : std::string();
       }},
      {"device", Kind::kString, "cpu, cuda or cuda:N",
       [](RunConfig& c, const Value& v) { c.device = v.s; return check_device(v.s); }},
      {"threads", Kind::kInt, "intra-op and BLAS threads (default: all cores)",
       [](RunConfig& c, const Value& v) {
         c.threads = v.i;
         return v.i > 1024 ? fmt::format("must be <= 1024, got {}", v.i) : at_least(v.i, 1);
       }},
      {"seed", Kind::kInt, "seed of the initial weights",
       [](RunConfig& c, const Value& v) { c.seed = v.i; return at_least(v.i, 0); }},
      {"data_seed", Kind::kInt, "seed of the example order (default: seed)",
       [](RunConfig& c, const Value& v) { c.data_seed = v.i; return at_least(v.i, 0); }},
      {"steps", Kind::kInt, "optimiser steps",
       [](RunConfig& c, const Value& v) { c.steps = v.i; return at_least(v.i, 1); }},
      {"batch_size", Kind::kInt, "examples per step",
       [](RunConfig& c, const Value& v) { c.batch_size = v.i; return at_least(v.i, 1); }},
      {"lr", Kind::kDouble, "Adam learning rate",
       [](RunConfig& c, const Value& v) {
         c.lr = v.d;
         return v.d > 0 && std::isfinite(v.d) ? "" : fmt::format("must be > 0 and finite, got {}", v.d);
       }},
      {"log_every", Kind::kInt, "steps between metric reads and log lines",
       [](RunConfig& c, const Value& v) { c.log_every = v.i; return at_least(v.i, 1); }},
      {"out", Kind::kString, "study directory; the run is written to <out>/runs/<run-id>/",
       [](RunConfig& c, const Value& v) {
         c.out = v.s;
         return v.s.empty() ? std::string("must not be empty") : std::string();
       }},
  };
  return k;
}

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
    case Kind::kIntList: return "a list of integers";
  }
  return "?";
}

bool parse_int(const std::string& t, int64_t* out) {
  if (t.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
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
    case Kind::kIntList: {
      size_t start = 0;
      while (start <= t.size()) {
        size_t comma = t.find(',', start);
        int64_t x;
        if (!parse_int(t.substr(start, comma - start), &x)) return false;
        v->list.push_back(x);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      return true;
    }
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
    case Kind::kIntList:
      if (!n.is_array()) return false;
      for (const auto& e : *n.as_array()) {
        if (!e.is_integer()) return false;
        v->list.push_back(e.as_integer()->get());
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
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return Status::Error(fmt::format("{}:{}: {}", path, e.source().begin.line, e.description()));
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
  std::string flag = "--" + key;
  for (char& c : flag) if (c == '_') c = '-';
  Value v;
  if (!parse_text(k->kind, text, &v))
    return Status::Error(flag + ": must be " + kind_name(k->kind) + ", got '" + text + "'");
  std::string why = k->set(cfg_, v);
  if (!why.empty()) return Status::Error(flag + ": " + why);
  origin_[k->name] = flag;
  return Status::Ok();
}

Result<RunConfig> ConfigBuilder::resolve() const {
  RunConfig c = cfg_;
  if (c.data_dir.empty()) c.data_dir = default_data_dir();
  if (c.threads == 0) c.threads = std::max(1u, std::thread::hardware_concurrency());
  if (c.data_seed < 0) c.data_seed = c.seed;
  if (c.log_every > c.steps) c.log_every = c.steps;
  return c;
}

nlohmann::json RunConfig::to_json() const {
  return {{"model", model}, {"hidden", hidden}, {"data", data}, {"data_dir", data_dir},
          {"device", device}, {"threads", threads}, {"seed", seed}, {"data_seed", data_seed},
          {"steps", steps}, {"batch_size", batch_size}, {"lr", lr}, {"log_every", log_every},
          {"out", out}};
}

std::string RunConfig::identity() const {
  nlohmann::json j = to_json();
  for (const char* k : {"out", "data_dir", "log_every"}) j.erase(k);
  return j.dump();  // nlohmann orders object keys: canonical
}

std::string RunConfig::run_prefix() const {
  std::string dev = device;
  for (char& ch : dev) if (ch == ':') ch = '.';
  return fmt::format("{}-{}-t{}-s{}", model, dev, threads, seed);
}

}  // namespace saddlescope::trainer
