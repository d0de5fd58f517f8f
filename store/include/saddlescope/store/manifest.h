// manifest.json, typed: what a run was (config, environment), what became of it (status, results)
// and which version of each file the run directory holds. docs/run-store.md documents every field.
//
// The trainer fills a RunManifest and writes it atomically at every change of status and at each
// heartbeat; readers get it back checked (RunManifest::from_json), or an error naming the file and
// the key. The config is the trainer's (flat JSON, one entry per config key): the store keeps it as
// JSON and reads the execution axes the catalogue needs from it by name.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

// The manifest's magic and version: readers refuse anything else.
inline constexpr const char* kManifestFormat = "saddlescope.run";
inline constexpr int kManifestVersion = 2;

// What became of a run. kStale is never written: readers derive it for a run whose manifest says
// running but whose process is gone (run_state.h).
enum class RunStatus { kRunning, kCompleted, kDiverged, kFailed, kInterrupted, kStale };
const char* status_name(RunStatus s);  // "running", "completed", ...
std::optional<RunStatus> parse_status(const std::string& name);  // the written five only

// The process writing a running run: readers tell a live run from a dead one by it.
struct ProcessInfo {
  int64_t pid = 0;
  std::string host;             // gethostname()
  double heartbeat_unix = 0;    // seconds since the epoch of the last refresh (every log window)
};

// This machine's name (gethostname), as ProcessInfo::host and the run lock record it.
std::string this_host();
// Seconds since the epoch (ProcessInfo::heartbeat_unix), and UTC as "2026-12-03T13:27:45Z" (Timings).
double unix_now();
std::string utc_now();

struct Evaluation {
  std::string split;            // test | train (when the data has no test split)
  double mse = 0;               // mean squared error per pixel (per target for linear)
  std::string baseline;         // "mean training image" | "previous frame" | ...
  double baseline_mse = 0;      // the same for the trivial baseline
  std::vector<double> per_frame_mse, per_frame_baseline_mse;  // PredNet: by frame t = 1 .. nt-1
  // A classifier (model torchscript, loss cross_entropy): mse is Brier's score (softmax probabilities
  // against one-hot labels, per class) and the baseline predicts the training classes' frequencies;
  // these are the mean cross entropy (nats), the baseline's, and the share of labels predicted right.
  std::optional<double> cross_entropy, baseline_cross_entropy, accuracy;
};

struct Timings {
  std::string started, finished;  // UTC, ISO 8601; finished empty while running
  double train_s = 0;             // the step loop, over every resume
  double probe_s = 0, tap_s = 0, eval_s = 0, checkpoint_s = 0;
};

// A probe's numerical failure at a step (probes/probe.h): recorded, the run went on.
struct ProbeFailure {
  int64_t step = 0;
  std::string probe, reason;
};

struct RunManifest {
  std::string run_id;
  std::string config_key;        // the run identity without the seeds: groups the runs of one config
  RunStatus status = RunStatus::kRunning;
  std::string error;             // failed: why (one line)
  std::string stopped_by;        // interrupted: the signal ("SIGTERM"), or "stale" when repaired
  std::optional<ProcessInfo> process;
  nlohmann::json config = nlohmann::json::object();        // every config key, resolved
  nlohmann::json data = nlohmann::json::object();          // source, sizes, digests of the data files
  nlohmann::json execution = nlohmann::json::object();     // settings as applied (execution.h)
  nlohmann::json perturbation_applied;                     // what a start-of-run perturbation did
  nlohmann::json fingerprint = nlohmann::json::object();   // the environment
  std::map<std::string, int> files;                        // file (or directory) -> schema version
  Timings timings;
  int64_t steps_completed = 0;
  std::optional<double> steps_per_s;
  std::optional<int64_t> diverged_at_step;  // first step whose loss was not finite, or whose parameters
                                            // or gradients were not when the probes came to them
  std::string diverged_reason;              // diverged: "loss not finite", "the parameters ... not finite ..."
  std::vector<ProbeFailure> probe_failures; // every resumed segment's
  std::optional<double> final_loss;         // mean training loss of the last log window; completed only
  std::optional<Evaluation> evaluation;     // completed only
  std::optional<int64_t> checkpoint_step;   // the latest complete checkpoint (resume continues there)
  int64_t resumes = 0;                      // times the run was resumed
  nlohmann::json extra = nlohmann::json::object();  // other top-level fields (e.g. probe sizes used)

  nlohmann::json to_json() const;
  // Checks format, version and the type of every known field; `path` names the file in errors.
  static Result<RunManifest> from_json(const nlohmann::json& j, const std::string& path);
  // A value of `config` by key, or null.
  const nlohmann::json& config_value(const std::string& key) const;
};

}  // namespace saddlescope::store
