// The study catalogue: <study>/catalog.sqlite, an SQL index of a study's run directories — every
// manifest (table runs) and every row of every CSV table — documented in docs/catalog.md.
//
// It holds nothing the run directories do not: rebuild_catalog() makes it anew from them, so it can
// be deleted at any time. Its schema carries a version (table meta): an older catalogue is rebuilt,
// one written by a newer saddlescope is refused. Writers (upsert_run, rebuild_catalog) hold an
// exclusive flock on <study>/.catalog.lock for their whole update, so concurrent processes neither
// interleave nor lose rows; SQL readers take no lock and see the catalogue before or after an update.
#pragma once

#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

inline constexpr const char* kCatalogFile = "catalog.sqlite";
inline constexpr const char* kCatalogLockFile = ".catalog.lock";
// How long a writer waits for another to finish before giving up with an error (a rebuild of a
// large study holds the lock for as long as it reads every run).
inline constexpr double kCatalogLockWaitSeconds = 600;

// The run directories of a study: <study>/runs/<name> for every directory whose name does not start
// with '.', sorted. Empty when there is no runs/ directory.
std::vector<std::string> list_run_dirs(const std::string& study_dir);

// Replaces the rows of one run with what its directory holds now, in one transaction: its runs row,
// the rows of every CSV table its manifest lists, a problems row for each file that does not read (a
// run directory that does not exist any more leaves no rows). A missing, older, unreadable or
// damaged catalogue (SQLite finds it so while upserting, or the run's rows do not read back) is
// rebuilt from every run instead; damage in pages the upsert does not read is catalog_drift's to
// find. Errors: `run_dir` is not <study>/runs/<name>, the
// catalogue was written by a newer saddlescope (file and version named), a database failure, the lock
// not free within kCatalogLockWaitSeconds. An unreadable run is a problems row, not an error.
Status upsert_run(const std::string& study_dir, const std::string& run_dir);

// Makes <study>/catalog.sqlite anew from every run directory, atomically (a temporary file renamed
// over it), under the lock. Unreadable runs are listed in table problems, not errors. Returns the
// number of rows in table runs. Errors: a catalogue of a newer version (delete it to rebuild), a
// database failure, the lock not free in time.
Result<int> rebuild_catalog(const std::string& study_dir);

// Whether some process holds the writers' lock now (an update or rebuild is under way).
bool catalog_being_written(const std::string& study_dir);

// A row of table problems: a file of a run that could not be read, and why.
struct CatalogProblem {
  std::string run_id;  // the run directory's name
  std::string file;    // relative to it: manifest.json, metrics.csv, ...
  std::string error;   // the reader's message, naming the file
};

// The problems table, ordered by run and file. Errors: no catalogue, a newer or foreign one, one to
// be rebuilt (older, damaged).
Result<std::vector<CatalogProblem>> catalog_problems(const std::string& study_dir);

// How the catalogue differs from the run directories.
struct CatalogDrift {
  std::string whole;              // non-empty when the whole catalogue must be rebuilt: why (missing, damaged, ...)
  std::vector<std::string> runs;  // run ids whose rows no longer match their directory: new, changed, gone
};

// Compares the catalogue with the run directories by the size and modification time of every file
// its rows were read from. Runs still running (RunDir::state) are not compared: their files grow.
// A catalogue SQLite finds damaged while reading it is `whole` ("damaged (SQLite: ...)"), not an error.
// Errors: a catalogue of a newer version or not a saddlescope catalogue, a database failure.
Result<CatalogDrift> catalog_drift(const std::string& study_dir);

}  // namespace saddlescope::store
