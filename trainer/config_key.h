// The run config's key table, internal to trainer/: each key's name, kind, one line of help, a setter
// that range-checks a value, and a getter for the resolved JSON. config_keys.cpp declares the keys by
// topic; config.cpp reads files, flags and manifests through them.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "saddlescope/base/status.h"
#include "saddlescope/base/text.h"
#include "saddlescope/trainer/config.h"

namespace saddlescope::trainer::config_detail {

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

inline std::string at_least(int64_t v, int64_t lo) {
  return v >= lo ? "" : fmt::format("must be >= {}, got {}", lo, v);
}

inline std::string one_of(const std::string& v, std::initializer_list<const char*> options) {
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

// The table: every key once, in the order `saddlescope train --help` lists them.
const std::vector<Key>& keys();

}  // namespace saddlescope::trainer::config_detail
