#include "saddlescope/store/manifest.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include <fmt/format.h>

namespace saddlescope::store {
namespace {

using json = nlohmann::json;

constexpr const char* kStatusNames[] = {"running", "completed", "diverged", "failed", "interrupted", "stale"};

json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(); }
json optional_json(const std::optional<int64_t>& v) { return v ? json(*v) : json(); }

// Reads typed fields of one JSON object, remembering the first error (file and key named).
class Fields {
 public:
  Fields(const json& j, std::string path, std::string prefix = "")
      : j_(j), path_(std::move(path)), prefix_(std::move(prefix)) {}

  template <class T>
  void get(const char* key, T* out, bool required = false) {
    if (!j_.contains(key) || j_[key].is_null()) {
      if (required) fail(key, "is missing");
      return;
    }
    const json& v = j_[key];
    if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) return fail(key, "must be a string");
    } else if constexpr (std::is_same_v<T, int64_t>) {
      if (!v.is_number_integer()) return fail(key, "must be an integer");
    } else if constexpr (std::is_same_v<T, double>) {
      if (!v.is_number()) return fail(key, "must be a number");
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      if (!v.is_array()) return fail(key, "must be an array of numbers");
      for (const auto& e : v)
        if (!e.is_number()) return fail(key, "must be an array of numbers");
    } else if constexpr (std::is_same_v<T, std::map<std::string, int>>) {
      if (!v.is_object()) return fail(key, "must be an object of integers");
      for (const auto& [k, e] : v.items())
        if (!e.is_number_integer()) return fail(key, "must be an object of integers");
    } else if constexpr (std::is_same_v<T, json>) {
      // any JSON
    }
    *out = v.get<T>();
  }
  template <class T>
  void get(const char* key, std::optional<T>* out) {
    if (!j_.contains(key) || j_[key].is_null()) return;
    T v{};
    get(key, &v);
    *out = v;
  }
  void object(const char* key, json* out) {
    if (!j_.contains(key) || j_[key].is_null()) return;
    if (!j_[key].is_object()) return fail(key, "must be an object");
    *out = j_[key];
  }
  bool has_object(const char* key) {
    if (!j_.contains(key) || j_[key].is_null()) return false;
    if (!j_[key].is_object()) fail(key, "must be an object");
    return error_.ok();
  }
  void fail(const std::string& key, const std::string& what) {
    if (error_.ok()) error_ = Status::Error(path_ + ": " + prefix_ + key + " " + what);
  }
  const Status& error() const { return error_; }
  void absorb(const Fields& other) {
    if (error_.ok() && !other.error_.ok()) error_ = other.error_;
  }

 private:
  const json& j_;
  std::string path_, prefix_;
  Status error_;
};

// Top-level keys this struct owns; every other key is kept in `extra`.
constexpr const char* kKnownKeys[] = {
    "format", "format_version", "run_id", "config_key", "status", "error", "stopped_by", "process", "config",
    "data", "execution", "perturbation_applied", "fingerprint", "files", "timings", "steps_completed",
    "steps_per_s", "diverged_at_step", "diverged_reason", "probe_failures", "final_loss", "evaluation",
    "checkpoint_step", "resumes"};

}  // namespace

std::string this_host() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? buf : "";
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

const char* status_name(RunStatus s) { return kStatusNames[static_cast<int>(s)]; }

std::optional<RunStatus> parse_status(const std::string& name) {
  for (int i = 0; i < 5; ++i)
    if (name == kStatusNames[i]) return static_cast<RunStatus>(i);
  return std::nullopt;
}

json RunManifest::to_json() const {
  json j = extra;
  j["format"] = kManifestFormat;
  j["format_version"] = kManifestVersion;
  j["run_id"] = run_id;
  j["config_key"] = config_key;
  j["status"] = status_name(status);
  j["error"] = error.empty() ? json() : json(error);
  j["stopped_by"] = stopped_by.empty() ? json() : json(stopped_by);
  j["process"] = process ? json{{"pid", process->pid}, {"host", process->host},
                                {"heartbeat_unix", process->heartbeat_unix}}
                         : json();
  j["config"] = config;
  j["data"] = data;
  j["execution"] = execution;
  j["perturbation_applied"] = perturbation_applied;
  j["fingerprint"] = fingerprint;
  j["files"] = files;
  j["timings"] = {{"started", timings.started},     {"finished", timings.finished}, {"train_s", timings.train_s},
                  {"probe_s", timings.probe_s},     {"tap_s", timings.tap_s},       {"eval_s", timings.eval_s},
                  {"checkpoint_s", timings.checkpoint_s}};
  j["steps_completed"] = steps_completed;
  j["steps_per_s"] = optional_json(steps_per_s);
  j["diverged_at_step"] = optional_json(diverged_at_step);
  if (!diverged_reason.empty()) j["diverged_reason"] = diverged_reason;
  if (!probe_failures.empty()) {
    j["probe_failures"] = json::array();
    for (const auto& p : probe_failures)
      j["probe_failures"].push_back({{"step", p.step}, {"probe", p.probe}, {"reason", p.reason}});
  }
  j["final_loss"] = optional_json(final_loss);
  j["evaluation"] = evaluation ? json{{"split", evaluation->split},
                                      {"mse", evaluation->mse},
                                      {"baseline", evaluation->baseline},
                                      {"baseline_mse", evaluation->baseline_mse},
                                      {"per_frame_mse", evaluation->per_frame_mse},
                                      {"per_frame_baseline_mse", evaluation->per_frame_baseline_mse}}
                               : json();
  if (evaluation && evaluation->cross_entropy) {
    j["evaluation"]["cross_entropy"] = *evaluation->cross_entropy;
    j["evaluation"]["baseline_cross_entropy"] = optional_json(evaluation->baseline_cross_entropy);
    j["evaluation"]["accuracy"] = optional_json(evaluation->accuracy);
  }
  j["checkpoint_step"] = optional_json(checkpoint_step);
  j["resumes"] = resumes;
  return j;
}

Result<RunManifest> RunManifest::from_json(const json& j, const std::string& path) {
  if (!j.is_object()) return Status::Error(path + ": not a JSON object");
  if (!j.contains("format") || j["format"] != kManifestFormat)
    return Status::Error(path + ": not a saddlescope run manifest (format is not '" + std::string(kManifestFormat) +
                         "')");
  const json& version = j.contains("format_version") ? j["format_version"] : json();
  if (!version.is_number_integer() || version.get<int64_t>() != kManifestVersion)
    return Status::Error(path + ": format_version is " + version.dump() + ", this saddlescope reads only " +
                         std::to_string(kManifestVersion) + " (use the saddlescope that wrote it)");
  RunManifest m;
  Fields f(j, path);
  std::string status;
  f.get("run_id", &m.run_id, true);
  f.get("config_key", &m.config_key, true);
  f.get("status", &status, true);
  f.get("error", &m.error);
  f.get("stopped_by", &m.stopped_by);
  f.object("config", &m.config);
  f.object("data", &m.data);
  f.object("execution", &m.execution);
  f.get("perturbation_applied", &m.perturbation_applied);
  f.object("fingerprint", &m.fingerprint);
  f.get("files", &m.files, true);
  f.get("steps_completed", &m.steps_completed, true);
  f.get("steps_per_s", &m.steps_per_s);
  f.get("diverged_at_step", &m.diverged_at_step);
  f.get("diverged_reason", &m.diverged_reason);
  if (j.contains("probe_failures")) {
    const json& a = j["probe_failures"];
    bool ok = a.is_array();
    for (size_t i = 0; ok && i < a.size(); ++i) {
      const json& e = a[i];
      ok = e.is_object() && e.value("step", json()).is_number_integer() && e.value("probe", json()).is_string() &&
           e.value("reason", json()).is_string();
      if (ok) m.probe_failures.push_back({e["step"].get<int64_t>(), e["probe"].get<std::string>(), e["reason"].get<std::string>()});
    }
    if (!ok)
      return Status::Error(path + ": probe_failures must be an array of {step, probe, reason}");
  }
  f.get("final_loss", &m.final_loss);
  f.get("checkpoint_step", &m.checkpoint_step);
  f.get("resumes", &m.resumes);
  if (f.has_object("process")) {
    Fields p(j["process"], path, "process.");
    ProcessInfo info;
    p.get("pid", &info.pid, true);
    p.get("host", &info.host, true);
    p.get("heartbeat_unix", &info.heartbeat_unix, true);
    f.absorb(p);
    m.process = info;
  }
  if (f.has_object("timings")) {
    Fields t(j["timings"], path, "timings.");
    t.get("started", &m.timings.started);
    t.get("finished", &m.timings.finished);
    t.get("train_s", &m.timings.train_s);
    t.get("probe_s", &m.timings.probe_s);
    t.get("tap_s", &m.timings.tap_s);
    t.get("eval_s", &m.timings.eval_s);
    t.get("checkpoint_s", &m.timings.checkpoint_s);
    f.absorb(t);
  }
  if (f.has_object("evaluation")) {
    Fields e(j["evaluation"], path, "evaluation.");
    Evaluation ev;
    e.get("split", &ev.split, true);
    e.get("mse", &ev.mse, true);
    e.get("baseline", &ev.baseline, true);
    e.get("baseline_mse", &ev.baseline_mse, true);
    e.get("per_frame_mse", &ev.per_frame_mse);
    e.get("per_frame_baseline_mse", &ev.per_frame_baseline_mse);
    e.get("cross_entropy", &ev.cross_entropy);
    e.get("baseline_cross_entropy", &ev.baseline_cross_entropy);
    e.get("accuracy", &ev.accuracy);
    f.absorb(e);
    m.evaluation = ev;
  }
  if (!f.error().ok()) return f.error();
  auto s = parse_status(status);
  if (!s)
    return Status::Error(path + ": status '" + status +
                         "' is not one of running, completed, diverged, failed, interrupted");
  m.status = *s;
  if (m.steps_completed < 0) return Status::Error(path + ": steps_completed must be >= 0");
  for (const auto& [k, v] : j.items())
    if (std::find(std::begin(kKnownKeys), std::end(kKnownKeys), k) == std::end(kKnownKeys)) m.extra[k] = v;
  return m;
}

const json& RunManifest::config_value(const std::string& key) const {
  static const json null;
  return config.contains(key) ? config[key] : null;
}

}  // namespace saddlescope::store
