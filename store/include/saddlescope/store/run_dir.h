// Run directories: the one contract between the trainer (the writer) and every reader.
//
//   <study>/runs/<run-id>/manifest.json          manifest.h, written atomically
//                        /metrics.csv ...        the tables of schema.h
//                        /snapshots/step-%08d/   <param>.npy (and <param>.grad.npy): θ_step
//                        /checkpoint/            the latest checkpoint (the trainer's state.json + .npy)
//   <study>/runs/.<run-id>.lock                  held (flock) by the process writing the run
//
// A snapshot or checkpoint directory is complete or absent: it is written under a temporary name and
// renamed into place. docs/run-store.md documents every file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/store/manifest.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/schema.h"

namespace saddlescope::store {

// Schema versions of the directories of a run (the CSV files carry theirs in schema.h).
inline constexpr const char* kSnapshotsEntry = "snapshots";
inline constexpr int kSnapshotsVersion = 1;
inline constexpr const char* kCheckpointEntry = "checkpoint";
inline constexpr int kCheckpointVersion = 1;

// A running run refreshes its heartbeat at every log window and at least once a minute; another host
// calls it stale after this long without one.
inline constexpr double kStaleAfterSeconds = 600;

// A run id is 1-128 characters of [A-Za-z0-9._-], not "." or "..": safe as a directory name.
Status validate_run_id(const std::string& id);

// "<prefix>-<first 8 hex digits of SHA-256(canonical_config)>": readable and stable for one config.
// REQUIRES: prefix passes validate_run_id.
std::string make_run_id(const std::string& prefix, const std::string& canonical_config);

// Whether `name` (a file or directory name, no '/') is a writer's temporary, which readers ignore and
// the next writer (or `store check --repair`) removes: ".<name>.tmp" (AtomicDir), "<name>.tmp.<pid>"
// (write_file_atomic, the catalogue's rebuild), "<file>.resume" (TableWriter::resume).
bool is_temporary_name(const std::string& name);

// The exclusive lock a writing process holds on a run for its whole life (flock on
// <study>/runs/.<run-id>.lock, so the kernel releases it when the process dies, however it dies).
class RunLock {
 public:
  // Takes the lock, or an error saying the run is being written by a live process (with its pid).
  static Result<RunLock> acquire(const std::string& study_dir, const std::string& run_id);
  // Whether some live process holds the run's lock now (a reader's liveness test on this host).
  static bool held(const std::string& study_dir, const std::string& run_id);
  RunLock(RunLock&& other) noexcept;
  RunLock& operator=(RunLock&&) = delete;
  ~RunLock();

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Creates <study>/runs/<run_id>/ and returns its path. REQUIRES: the caller holds the run's lock. An
// existing directory is an error unless `replace`, in which case it is removed first (no live process
// can be writing it: the lock says so).
Result<std::string> create_run_dir(const std::string& study_dir, const std::string& run_id, bool replace);

// Writes <run_dir>/manifest.json atomically.
Status write_manifest(const std::string& run_dir, const RunManifest& manifest);

// Reads and checks <run_dir>/manifest.json (parse errors, magic, version, field types).
Result<RunManifest> read_manifest(const std::string& run_dir);

// "<run_dir>/snapshots/step-%08d".
std::string snapshot_dir(const std::string& run_dir, int64_t step);
// "<run_dir>/checkpoint/step-%08d": a checkpoint taken before step `step` runs. The manifest's
// checkpoint_step names the one to resume from; older ones are removed once it is recorded.
std::string checkpoint_dir(const std::string& run_dir, int64_t step);

// Writes a directory of files all-or-nothing: files go into ".<name>.tmp" beside `final_dir`, made
// durable, then renamed to `final_dir` by commit() (an existing `final_dir` is replaced). Destroyed
// uncommitted, it removes the temporary directory. A writer killed midway leaves only a temporary
// directory, which readers ignore and the next writer removes.
class AtomicDir {
 public:
  static Result<AtomicDir> begin(const std::string& final_dir);
  AtomicDir(AtomicDir&& other) noexcept;
  AtomicDir& operator=(AtomicDir&&) = delete;
  ~AtomicDir();
  const std::string& path() const { return tmp_; }  // write the files here
  Status commit();

 private:
  AtomicDir(std::string final_dir, std::string tmp) : final_(std::move(final_dir)), tmp_(std::move(tmp)) {}
  std::string final_, tmp_;
  bool done_ = false;
};

// One snapshot: parameter name -> array, in name order.
using Snapshot = std::map<std::string, NpyArray>;

// A run directory opened for reading: its manifest, checked, and typed access to every file. Each
// reader checks that the manifest lists the file at the version this saddlescope reads.
class RunDir {
 public:
  // Errors name the directory: not a directory, no manifest, a bad manifest.
  static Result<RunDir> open(const std::string& path);

  const std::string& path() const { return path_; }
  const RunManifest& manifest() const { return manifest_; }
  const std::string& id() const { return manifest_.run_id; }
  // The study directory holding the run (<study>/runs/<run-id>).
  std::string study_dir() const;

  // The status to believe: the manifest's, except that a running run whose writer is gone is kStale —
  // on the writer's host when no process holds the run's lock, elsewhere when its heartbeat is older
  // than kStaleAfterSeconds.
  RunStatus state() const;

  // Whether the run wrote `file` (listed in the manifest).
  bool has(const std::string& file) const { return manifest_.files.count(file) > 0; }

  Result<std::vector<MetricsRow>> metrics() const { return read(kMetrics); }
  Result<std::vector<CurvatureRow>> curvature() const { return read(kCurvature); }
  Result<std::vector<CurvatureEigenRow>> curvature_eigen() const { return read(kCurvatureEigen); }
  Result<std::vector<SymmetryRow>> symmetry() const { return read(kSymmetry); }
  Result<std::vector<NoiseRow>> noise() const { return read(kNoise); }
  Result<std::vector<OpHashRow>> ophash() const { return read(kOpHash); }
  Result<std::vector<OpRow>> ops() const { return read(kOps); }

  // Steps of the complete snapshots, ascending.
  std::vector<int64_t> snapshot_steps() const;
  // The parameters (not gradients) of the snapshot at `step`. Errors: no such snapshot (listing the
  // steps there are), an unreadable .npy.
  Result<Snapshot> snapshot(int64_t step) const;
  // The gradients of that snapshot (parameter name -> array), empty when it has none.
  Result<Snapshot> snapshot_grads(int64_t step) const;
  // The directory of the snapshot at `step`, with the same errors as snapshot().
  Result<std::string> snapshot_path(int64_t step) const;

 private:
  RunDir(std::string path, RunManifest m) : path_(std::move(path)), manifest_(std::move(m)) {}
  template <class Row>
  Result<std::vector<Row>> read(const Table<Row>& table) const;
  Status check_version(const char* entry, int version) const;

  std::string path_;
  RunManifest manifest_;
};

}  // namespace saddlescope::store
