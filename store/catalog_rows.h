// One run's rows in the catalogue (internal to store/): what upsert_run and rebuild_catalog write for
// each run directory, and the file signatures the staleness test compares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/store/manifest.h"
#include "sqlite_db.h"

namespace saddlescope::store {

// A file a run's rows were read from, as it was then: size in bytes (-1: missing) and modification
// time in nanoseconds since the epoch. Rows of table `sources`.
struct Source {
  std::string file;  // relative to the run directory
  int64_t bytes = -1;
  int64_t mtime_ns = 0;
  bool operator==(const Source& o) const { return file == o.file && bytes == o.bytes && mtime_ns == o.mtime_ns; }
};

// manifest.json and every CSV table `manifest` lists (manifest.json alone when `manifest` is null:
// unreadable), as they are now, sorted by file.
std::vector<Source> run_sources(const std::string& run_dir, const RunManifest* manifest);

// The sources recorded for `run_id`, sorted by file; empty when the run has no rows.
Result<std::vector<Source>> recorded_sources(const Db& db, const std::string& run_id);

// Replaces every row of the run in directory `run_dir` (its name is the run id) with what the
// directory holds now: its `runs` row when the manifest reads, the rows of every CSV table the
// manifest lists, a `problems` row for each file that does not read (its rows are left out), and
// its `sources`. A directory that does not exist leaves no rows. Returns the number of problems
// recorded; an error is a failure of the database only. `sources`, when given, receives the sources
// written (what recorded_sources should read back). REQUIRES: inside a write transaction.
Result<int> index_run(const Db& db, const std::string& run_dir, std::vector<Source>* sources = nullptr);

}  // namespace saddlescope::store
