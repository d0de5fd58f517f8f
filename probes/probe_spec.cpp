#include "saddlescope/probes/probe_spec.h"

#include "saddlescope/base/text.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace saddlescope::probes {
namespace {

enum class Type { kInt, kDouble, kBool, kSteps, kNames };

struct Option {
  const char* key;
  Type type;
  const char* default_value;
  double min;  // inclusive lower bound for numbers
};

struct Probe {
  const char* name;
  std::vector<Option> options;
};

const std::vector<Probe>& probes() {
  static const std::vector<Probe> p = {
      {"curvature",
       {{"every", Type::kInt, "2500", 0}, {"at", Type::kSteps, "", 0}, {"k", Type::kInt, "1", 1},
        {"tol", Type::kDouble, "0.001", 0}, {"iters", Type::kInt, "100", 2}, {"batch", Type::kInt, "256", 1},
        {"float64", Type::kBool, "false", 0}, {"trace", Type::kInt, "0", 0}, {"slq", Type::kInt, "0", 0},
        {"slq_steps", Type::kInt, "40", 2}, {"vectors", Type::kBool, "false", 0}, {"seed", Type::kInt, "0", 0},
        {"graph", Type::kBool, "true", 0}}},
      {"symmetry", {{"every", Type::kInt, "100", 0}, {"at", Type::kSteps, "", 0}}},
      {"noise",
       {{"every", Type::kInt, "5000", 0}, {"at", Type::kSteps, "", 0}, {"sgd_batch", Type::kInt, "0", 0},
        {"k", Type::kInt, "32", 2}, {"seed", Type::kInt, "0", 0}, {"graph", Type::kBool, "", 0}}},
      {"ophash", {{"every", Type::kInt, "1", 0}, {"at", Type::kSteps, "", 0}}},
      {"ops",
       {{"every", Type::kInt, "1000", 0}, {"at", Type::kSteps, "", 0}, {"k", Type::kInt, "8", 1},
        {"only", Type::kNames, "", 0}, {"wgrad", Type::kBool, "true", 0}, {"seed", Type::kInt, "0", 0},
        {"clamp", Type::kBool, "", 0}, {"aten", Type::kBool, "", 0}}},  // "" (false): left out of the resolved spec, so run ids stay
  };
  return p;
}

// "" or what was wrong with `value` for `o`.
std::string check(const Option& o, const std::string& value) {
  std::string key = o.key;
  switch (o.type) {
    case Type::kInt: {
      int64_t v;
      if (!parse_int(value, &v)) return key + " must be an integer, got '" + value + "'";
      if (v < o.min) return key + " must be >= " + std::to_string(static_cast<int64_t>(o.min)) + ", got " + value;
      return "";
    }
    case Type::kDouble: {
      char* end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(v) || v <= o.min)
        return key + " must be a number > " + std::to_string(static_cast<int64_t>(o.min)) + ", got '" + value + "'";
      return "";
    }
    case Type::kBool:
      return value == "true" || value == "false" ? "" : key + " must be true or false, got '" + value + "'";
    case Type::kSteps:
      if (value.empty()) return "";
      for (const auto& part : split(value, '+')) {
        int64_t v;
        if (!parse_int(part, &v) || v < 0) return key + " must be steps >= 0 joined by '+', got '" + value + "'";
      }
      return "";
    case Type::kNames:
      if (value.empty()) return "";  // no filter: every op
      for (const auto& part : split(value, '+'))
        if (part.empty()) return key + " must be names joined by '+', got '" + value + "'";
      return "";
  }
  return "";
}

}  // namespace

std::vector<std::string> probe_names() {
  std::vector<std::string> n;
  for (const auto& p : probes()) n.push_back(p.name);
  return n;
}

std::string probe_grammar() {
  std::string g;
  const auto& all = probes();
  for (size_t i = 0; i < all.size(); ++i) {
    g += i == 0 ? "" : i + 1 == all.size() ? " or " : ", ";
    g += std::string(all[i].name) + "[:";
    for (size_t j = 0; j < all[i].options.size(); ++j) {
      const Option& o = all[i].options[j];
      const std::string value = o.type == Type::kSteps   ? "S+S"
                                : o.type == Type::kNames ? "NAME+NAME"
                                : *o.default_value       ? o.default_value
                                                         : "false";
      g += (j ? "," : "") + std::string(o.key) + "=" + value;
    }
    g += "]";
  }
  return g;
}

Result<ProbeSpec> parse_probe_spec(const std::string& text, const std::map<std::string, std::string>& defaults) {
  auto bad = [&](const std::string& what) { return Status::Error("probe '" + text + "': " + what); };
  size_t colon = text.find(':');
  ProbeSpec spec;
  spec.text = text;
  spec.name = text.substr(0, colon);
  const Probe* probe = nullptr;
  for (const auto& p : probes())
    if (spec.name == p.name) probe = &p;
  if (!probe) {
    std::string known;
    for (const auto& n : probe_names()) known += (known.empty() ? "" : ", ") + n;
    return bad("unknown probe '" + spec.name + "' (known: " + known + ")");
  }
  for (const auto& o : probe->options) {
    auto d = defaults.find(o.key);
    spec.values[o.key] = d == defaults.end() ? o.default_value : d->second;
    SADDLESCOPE_CHECK(spec.values[o.key].empty() || check(o, spec.values[o.key]).empty());  // "": unset
  }
  if (colon != std::string::npos) {
    for (const auto& item : split(text.substr(colon + 1), ',')) {
      size_t eq = item.find('=');
      if (eq == std::string::npos) return bad("expected KEY=VALUE, got '" + item + "'");
      std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      auto o = std::find_if(probe->options.begin(), probe->options.end(),
                            [&](const Option& x) { return key == x.key; });
      if (o == probe->options.end()) {
        std::string known;
        for (const auto& x : probe->options) known += (known.empty() ? "" : ", ") + std::string(x.key);
        return bad("unknown option '" + key + "' (" + spec.name + " takes " + known + ")");
      }
      std::string why = check(*o, value);
      if (!why.empty()) return bad(why);
      spec.values[key] = value;
    }
  }
  spec.every = spec.get_int("every");
  if (!spec.values["at"].empty())
    for (const auto& part : split(spec.values["at"], '+')) spec.at.push_back(std::stoll(part));
  if (spec.every < 1 && spec.at.empty()) return bad("every must be >= 1 (or give steps with at=), got " + spec.values["every"]);
  if (spec.name == "curvature" && spec.get_int("iters") < spec.get_int("k"))
    return bad("iters must be >= k, got iters=" + spec.values["iters"] + ", k=" + spec.values["k"]);
  return spec;
}

int64_t ProbeSpec::get_int(const std::string& key) const { return std::stoll(values.at(key)); }
double ProbeSpec::get_double(const std::string& key) const { return std::stod(values.at(key)); }
bool ProbeSpec::get_bool(const std::string& key) const { return values.at(key) == "true"; }

bool ProbeSpec::due(int64_t step) const {
  return (every > 0 && step % every == 0) || std::find(at.begin(), at.end(), step) != at.end();
}

std::string ProbeSpec::resolved() const {
  std::string s = name + ":";
  for (const auto& [k, v] : values)
    if (!v.empty()) s += k + "=" + v + ",";
  s.pop_back();
  return s;
}

}  // namespace saddlescope::probes
