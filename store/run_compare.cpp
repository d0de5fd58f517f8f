// run_difference (run_scan.h): whether two copies of a run computed the same thing.
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "catalog_schema.h"
#include "run_scan.h"
#include "saddlescope/store/csv.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/run_dir.h"

namespace saddlescope::store {
namespace {

using json = nlohmann::json;

// Manifest fields that say when, where or by which process a run ran, or how it ended in words, not
// what it computed. `config` is not compared either: the keys that decide the result are hashed into
// the run id (equal ids, equal keys), the others are paths and cadences (out, data_dir, log_every,
// snapshot_every, ...). Nor is data.source, which names the files read by their paths, nor `study`: which
// study ran the run, as which task, sharing its GPU how.
constexpr const char* kNotResults[] = {"run_id",  "merged_from", "process",         "timings", "steps_per_s",
                                       "resumes", "stopped_by",  "checkpoint_step", "config",  "error",
                                       "study"};

// A JSON value for a message: compact, at most 60 characters.
std::string brief(const json& v) {
  std::string s = shown(v.dump());
  return s.size() <= 60 ? s : s.substr(0, 57) + "...";
}

// The first key (as "a.b") at which two JSON values differ, and both values; "" when equal.
std::string json_difference(const json& a, const json& b, const std::string& key) {
  if (a == b) return "";
  if (a.is_object() && b.is_object()) {
    json keys = json::object();
    for (const auto& [k, v] : a.items()) keys[k] = true;
    for (const auto& [k, v] : b.items()) keys[k] = true;
    for (const auto& [k, v] : keys.items()) {
      std::string sub = key.empty() ? k : key + "." + k;
      if (!a.contains(k)) return sub + ": absent vs " + brief(b[k]);
      if (!b.contains(k)) return sub + ": " + brief(a[k]) + " vs absent";
      std::string d = json_difference(a[k], b[k], sub);
      if (!d.empty()) return d;
    }
  }
  return key + ": " + brief(a) + " vs " + brief(b);
}

json results_of(const RunManifest& m) {
  json j = m.to_json();
  for (const char* k : kNotResults) j.erase(k);
  if (j["data"].is_object()) j["data"].erase("source");
  return j;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

std::string value_text(double v) { return format_double(v); }
std::string value_text(int64_t v) { return std::to_string(v); }
std::string value_text(bool v) { return v ? "1" : "0"; }
std::string value_text(const std::string& v) { return v; }

// The first row and column at which two copies of a table differ, timing columns aside.
template <class Row>
Result<std::string> table_difference(const ScannedRun& a, const ScannedRun& b, const Table<Row>& table) {
  bool in_a = file_exists(a.path + "/" + table.file), in_b = file_exists(b.path + "/" + table.file);
  if (!in_a && !in_b) return std::string();
  if (in_a != in_b) return fmt::format("{}: {} vs {}", table.file, in_a ? "present" : "absent", in_b ? "present" : "absent");
  auto ra = read_table(a.path, table);
  if (!ra) return ra.status();
  auto rb = read_table(b.path, table);
  if (!rb) return rb.status();
  if (ra->size() != rb->size()) return fmt::format("{}: {} rows vs {}", table.file, ra->size(), rb->size());
  for (size_t i = 0; i < ra->size(); ++i) {
    const Row &x = (*ra)[i], &y = (*rb)[i];
    for (const auto& c : table.columns) {
      if (c.timing) continue;
      std::string d;
      std::visit(
          [&](auto m) {
            bool same;
            if constexpr (std::is_same_v<std::decay_t<decltype(x.*m)>, double>) same = same_bits(x.*m, y.*m);
            else same = x.*m == y.*m;
            if (!same)
              d = fmt::format("{} line {} (step {}): {} {} vs {}", table.file, i + 2, x.step, c.name,
                              shown(value_text(x.*m)), shown(value_text(y.*m)));
          },
          c.member);
      if (!d.empty()) return d;
    }
  }
  return std::string();
}

}  // namespace

Result<std::string> run_difference(const ScannedRun& a, const ScannedRun& b) {
  std::string d = json_difference(results_of(a.manifest), results_of(b.manifest), "");
  if (!d.empty()) return "manifest.json " + d;
  Result<std::string> tables = std::string();
  for_each_table([&](const auto& table, auto) {
    if (tables.ok() && tables->empty() && a.manifest.files.count(table.file)) tables = table_difference(a, b, table);
  });
  if (!tables.ok() || !tables->empty()) return tables;
  // Arrays both recorded (snapshot_every may differ between two runs of one id).
  for (const auto& [rel, digest] : a.arrays) {
    auto it = b.arrays.find(rel);
    if (it != b.arrays.end() && it->second != digest) return rel + ": different values";
  }
  return std::string();
}

}  // namespace saddlescope::store
