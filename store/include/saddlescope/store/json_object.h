// JSON objects declared once, as the CSV tables are (table.h): a struct lists its members and their keys
// in a static `json_keys()`, and encode / decode go through that list. So a key cannot be written under
// one name and read under another, and code that reads such a file uses members, never a key typed as a
// string where it is used.
//
//   struct Span {
//     int64_t from = 0;
//     std::optional<int64_t> to;      // null: open
//     static auto json_keys() { return std::make_tuple(key("from", &Span::from), key("to", &Span::to)); }
//   };
//
// Members and their JSON:
//   bool, int64_t, std::string       the value
//   double                           a number; null reads as NaN, and NaN or ±inf writes as null
//   std::optional<T>                 key(): null when empty; omitted(): the key is left out when empty,
//                                    and a value that is there, null included, is T's (so an omitted
//                                    double that is null reads as NaN, an omitted std::optional<int64_t>
//                                    that is null as an empty inner optional)
//   std::vector<T>                   an array
//   std::map<std::string, T>         an object whose keys are data (optimiser names, definitions)
//   a struct with json_keys()        an object
//   nlohmann::json                   any value, kept as it is
// decode() checks every value's type and that every key not declared with omitted() is there; its
// errors name the key's path: "runs[3].episodes[0].exit_step: expected an integer or null, got "x"".
// Keys a struct does not declare are ignored (a newer writer's additions); a test that round-trips the
// files (decode, then encode gives the same text) is what shows a declaration complete.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

// One declared key: its name, the member it binds, and whether an empty std::optional leaves it out.
template <class T, class M>
struct JsonKey {
  const char* name;
  M T::*member;
  bool omit_empty;
};
template <class T, class M>
constexpr JsonKey<T, M> key(const char* name, M T::*member) {
  return {name, member, false};
}
// A key that is left out, rather than null, when its std::optional member is empty. REQUIRES: M is one.
template <class T, class M>
constexpr JsonKey<T, M> omitted(const char* name, M T::*member) {
  return {name, member, true};
}

namespace json_object_detail {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
template <class T>
struct is_map : std::false_type {};
template <class T>
struct is_map<std::map<std::string, T>> : std::true_type {};
template <class T, class = void>
struct has_keys : std::false_type {};
template <class T>
struct has_keys<T, std::void_t<decltype(T::json_keys())>> : std::true_type {};

std::string describe(const nlohmann::json& j);  // `j` shortened for an error message
Status type_error(const std::string& path, const char* expected, const nlohmann::json& got);

template <class T>
nlohmann::json encode(const T& v);
template <class T>
Status decode(const nlohmann::json& j, const std::string& path, T* out);

template <class T>
nlohmann::json encode_object(const T& v) {
  nlohmann::json j = nlohmann::json::object();
  std::apply(
      [&](const auto&... k) {
        auto one = [&](const auto& key) {
          const auto& m = v.*(key.member);
          if constexpr (is_optional<std::decay_t<decltype(m)>>::value)
            if (key.omit_empty && !m) return;
          j[key.name] = encode(m);
        };
        (one(k), ...);
      },
      T::json_keys());
  return j;
}

template <class T>
Status decode_object(const nlohmann::json& j, const std::string& path, T* out) {
  if (!j.is_object()) return type_error(path, "an object", j);
  Status status;
  std::apply(
      [&](const auto&... k) {
        auto one = [&](const auto& key) {
          if (!status.ok()) return;
          auto& m = out->*(key.member);
          const std::string at = path.empty() ? key.name : path + "." + key.name;
          auto it = j.find(key.name);
          if constexpr (is_optional<std::decay_t<decltype(m)>>::value) {
            if (key.omit_empty) {  // left out: empty; there (null too): the value's own reading
              m.reset();
              if (it != j.end()) status = decode(*it, at, &m.emplace());
              return;
            }
          }
          if (it == j.end()) {
            status = Status::Error(at + ": missing");
            return;
          }
          status = decode(*it, at, &m);
        };
        (one(k), ...);
      },
      T::json_keys());
  return status;
}

template <class T>
nlohmann::json encode(const T& v) {
  if constexpr (std::is_same_v<T, double>) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  } else if constexpr (is_optional<T>::value) {
    return v ? encode(*v) : nlohmann::json(nullptr);
  } else if constexpr (is_vector<T>::value) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : v) a.push_back(encode(x));
    return a;
  } else if constexpr (is_map<T>::value) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [k, x] : v) o[k] = encode(x);
    return o;
  } else if constexpr (has_keys<T>::value) {
    return encode_object(v);
  } else {
    static_assert(std::is_same_v<T, bool> || std::is_same_v<T, int64_t> || std::is_same_v<T, std::string> ||
                      std::is_same_v<T, nlohmann::json>,
                  "a member type json_object.h does not know");
    return nlohmann::json(v);
  }
}

template <class T>
Status decode(const nlohmann::json& j, const std::string& path, T* out) {
  if constexpr (std::is_same_v<T, double>) {
    if (!j.is_null() && !j.is_number()) return type_error(path, "a number or null", j);
    *out = j.is_null() ? std::nan("") : j.get<double>();
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (!j.is_number_integer()) return type_error(path, "an integer", j);
    *out = j.get<int64_t>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) return type_error(path, "true or false", j);
    *out = j.get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) return type_error(path, "a string", j);
    *out = j.get<std::string>();
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    *out = j;
  } else if constexpr (is_optional<T>::value) {
    out->reset();
    if (!j.is_null()) SADDLESCOPE_RETURN_IF_ERROR(decode(j, path, &out->emplace()));
  } else if constexpr (is_vector<T>::value) {
    if (!j.is_array()) return type_error(path, "an array", j);
    out->clear();
    out->reserve(j.size());
    for (size_t i = 0; i < j.size(); ++i)
      SADDLESCOPE_RETURN_IF_ERROR(decode(j[i], path + "[" + std::to_string(i) + "]", &out->emplace_back()));
  } else if constexpr (is_map<T>::value) {
    if (!j.is_object()) return type_error(path, "an object", j);
    out->clear();
    for (auto it = j.begin(); it != j.end(); ++it)
      SADDLESCOPE_RETURN_IF_ERROR(decode(it.value(), path + "." + it.key(), &(*out)[it.key()]));
  } else {
    static_assert(has_keys<T>::value, "a member type json_object.h does not know");
    return decode_object(j, path, out);
  }
  return Status::Ok();
}

template <class T>
void declared_keys(const std::string& path, std::vector<std::string>* out) {
  if constexpr (is_optional<T>::value) {
    declared_keys<typename T::value_type>(path, out);
  } else if constexpr (is_vector<T>::value) {
    declared_keys<typename T::value_type>(path + "[]", out);
  } else if constexpr (is_map<T>::value) {
    declared_keys<typename T::mapped_type>(path + ".*", out);
  } else if constexpr (has_keys<T>::value) {
    std::apply(
        [&](const auto&... k) {
          auto one = [&](const auto& key) {
            using M = std::decay_t<decltype(std::declval<T>().*(key.member))>;
            const std::string at = path.empty() ? key.name : path + "." + key.name;
            out->push_back(at);
            declared_keys<M>(at, out);
          };
          (one(k), ...);
        },
        T::json_keys());
  }
}

}  // namespace json_object_detail

// Every key T declares, nested ones included, as paths in declaration order: "runs", "runs[].run_id",
// "theory.departures.*.n" (`*`: a map's keys, which are data). For a test that holds the documentation
// to the declaration.
template <class T>
std::vector<std::string> declared_keys() {
  std::vector<std::string> out;
  json_object_detail::declared_keys<T>("", &out);
  return out;
}

// `v` as JSON, through its declaration.
template <class T>
nlohmann::json encode(const T& v) {
  return json_object_detail::encode(v);
}

// `j` read into a T through its declaration; errors name the key's path.
template <class T>
Result<T> decode(const nlohmann::json& j) {
  T out{};
  SADDLESCOPE_RETURN_IF_ERROR(json_object_detail::decode(j, "", &out));
  return out;
}

}  // namespace saddlescope::store
