// A run directory read whole from a source that is not trusted — another machine's study, for
// `store merge` (merge.h) — and checked before anything of it is copied. Internal to store/.
//
// A scan walks the directory without following links and refuses what a run directory cannot hold
// (a symbolic link, a FIFO or device, a name outside the run store's layout, a file larger than the
// limit), reads the manifest and every file through its reader (the tables through schema.h, every
// .npy through npy.h) and records the size and SHA-256 of each file to be copied, so that the copy can
// tell a file changed since it was checked. docs/run-store.md ("Merging studies") says what is read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/store/manifest.h"

namespace saddlescope::store {

// The largest manifest.json (and checkpoint state.json) a scan reads: real ones are a few KiB.
inline constexpr uint64_t kMaxManifestBytes = uint64_t{16} << 20;

// A regular file of a scanned run that a merge copies, as it was when checked.
struct ScannedFile {
  std::string rel;     // relative to the run directory: "metrics.csv", "snapshots/step-00000010/w.npy"
  uint64_t size = 0;   // bytes
  std::string sha256;  // of its bytes
};

struct ScannedRun {
  std::string path;                // <study>/runs/<run-id>, as given
  RunManifest manifest;            // as read, except a stale run's: marked as `store check --repair`
                                   // would (interrupted, stopped_by "stale", process cleared)
  bool stale = false;              // the manifest said running, but its writer is gone
  std::string fingerprint_digest;  // SHA-256 of the fingerprint's compact JSON (as the catalogue's)
  std::vector<std::string> dirs;   // directories to create, relative, parents first
  std::vector<ScannedFile> files;  // files to copy; not manifest.json (written from `manifest`), not
                                   // writers' temporaries, not .final-write-reserve
  std::map<std::string, std::string> arrays;  // result arrays (snapshots/, curvature/): relative path
                                              // -> SHA-256 of dtype, shape and values
  uint64_t bytes = 0;              // total size of `files`
};

// Scans the run directory <study>/runs/<name>. Errors, one line naming the file (control characters
// in names shown as \xNN):
//   a name that is not a run id, or a manifest whose run_id is not the directory's name;
//   a symbolic link, a FIFO, socket or device anywhere inside (links are neither copied nor followed);
//   an entry outside the layout (manifest.json, the tables of schema.h, snapshots/step-N/*.npy,
//   checkpoint/step-N/{state.json,*.npy}, curvature/*.npy), or a table present but not listed;
//   a file larger than `max_file_bytes` (kMaxManifestBytes for manifest.json and state.json);
//   a manifest that does not read (format, version, fields), a `files` entry this saddlescope does not
//   know or at another schema version, a table or .npy that does not read;
//   a run being written by a live process (RunDir::state() running): merge it once it has ended.
Result<ScannedRun> scan_run(const std::string& run_dir, uint64_t max_file_bytes);

// How two scanned runs of one run id differ in their results: "" when they are the same run, else the
// first difference, e.g. "metrics.csv line 5 (step 3): loss 0.25 vs 0.5". Compared: the manifest but
// for what says when, where or by which process it ran or how it ended in words (run_id, merged_from,
// process, timings, steps_per_s, resumes, stopped_by, error, checkpoint_step), its config (the keys
// that decide the result are hashed into the run id; the rest are paths and cadences) and
// data.source (paths); every row of every table, through its reader, but for timing columns
// (schema.h); the values of every result array both runs hold (snapshot cadence is not in the id).
// Checkpoints are not compared: when one is taken depends on the wall clock. Errors: a table that no
// longer reads.
Result<std::string> run_difference(const ScannedRun& a, const ScannedRun& b);

// `s` with control characters (bytes below 0x20, and 0x7f) shown as \xNN: a name from a directory listing fit
// for a one-line message.
std::string shown(const std::string& s);

}  // namespace saddlescope::store
