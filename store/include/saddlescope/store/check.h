// Checking a study's run store, and repairing what can be repaired (`saddlescope store check`).
//
// A check reads every run directory through RunDir: the state each run is in (RunDir::state(), so a
// running run whose process is gone is stale) and every problem — an unreadable manifest, a file the
// manifest lists that is missing or does not read with this saddlescope's schema, a completed run
// without its final loss, evaluation or final snapshot, temporaries left by a killed writer, and a
// catalogue that is missing or out of date. It changes nothing. repair_study() changes what can be
// changed safely and says what it did.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

struct RunCheck {
  std::string run_id;  // the directory's name
  std::string state;   // status_name(RunDir::state()): running, stale, completed, ...; "unreadable"
};

struct StudyProblem {
  std::string run_id;   // the run directory's name; empty for the study (its catalogue)
  std::string file;     // relative to the run directory (or the study): manifest.json, metrics.csv,
                        // snapshots/.step-00000010.tmp, catalog.sqlite, ...
  std::string message;  // what is wrong and, where there is one, what fixes it
};

struct StudyCheck {
  std::vector<RunCheck> runs;          // by run id
  std::vector<StudyProblem> problems;  // by run, the study's own last; a stale run is one

  std::map<std::string, int> counts() const;  // runs by state
  bool clean() const { return problems.empty(); }
};

// Ok when `study_dir` is a study: a directory with a runs/ directory. The error names it.
Status require_study(const std::string& study_dir);

// "<run_id>/<file>: <message>" (or "<file>: <message>" for the study): how a problem is printed.
std::string describe(const StudyProblem& p);

// Checks every run directory of <study>/runs and the catalogue. Temporaries of a running run are
// its writer's, not leftovers. Errors: `study_dir` has no runs/ directory (not a study).
Result<StudyCheck> check_study(const std::string& study_dir);

// What repair_study() did, one line per change ("<run_id>: marked interrupted ...").
struct RepairReport {
  std::vector<std::string> actions;
};

// Repairs what check_study() finds and can be repaired, each run under its RunLock (a run some
// process holds is left alone):
//  - a stale run becomes interrupted: status interrupted, stopped_by "stale", process cleared,
//    timings.finished set to now — the manifest rewritten atomically (write_manifest), so that the
//    run can be resumed or replaced;
//  - temporaries left by killed writers are removed (not those of running runs);
//  - the catalogue is brought up to date: the changed runs upserted, or rebuilt when missing or old.
// Unreadable files are not repaired (nothing can say what they held). Errors: not a study, a failure
// to write (named).
Result<RepairReport> repair_study(const std::string& study_dir);

}  // namespace saddlescope::store
