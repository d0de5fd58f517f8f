// Running a study on this host: every run is a process of its own (`saddlescope study exec`), so that
// runs fail, are killed and use threads independently; as many run at once as the host's cores and
// GPUs allow (schedule.h).
//
// The study directory is the only state: a rerun skips completed and diverged runs, resumes
// interrupted and stale ones from their checkpoints, and starts failed ones again. A run is one
// directory named by its config's identity, so nothing is ever counted twice. Killed in any way, the
// runner takes its runs with it (each child gets SIGTERM when the runner dies, checkpoints and says
// `interrupted`); SIGINT, SIGTERM or SIGHUP stop the study the same way, and a second SIGINT stops the
// runs at once.
//
// Several runs share a GPU through MPS when it is there (`nvidia-cuda-mps-control`: started for the
// study and stopped after it), else by the driver's time slicing; each manifest records which
// (docs/studies.md has the measurements behind that choice).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/study/schedule.h"
#include "saddlescope/study/study.h"

namespace saddlescope::study {

// How runs share a GPU: "mps" | "time-slice" (several processes, no MPS) | "auto" (MPS when several
// runs share a GPU and the MPS control program is on PATH).
struct LocalOptions {
  std::string self;             // the saddlescope executable the runs are started with
  HostSlots slots;              // cores, GPUs, runs per GPU, runs at once
  std::string gpu_sharing = "auto";
  bool require_cuda = false;    // a CUDA run this host cannot run is an error, not skipped
  std::FILE* out = stdout;      // the live display, or plain lines when not a terminal
};

struct StudySummary {
  int64_t planned = 0, already_done = 0;  // runs in the plan; finished before this call
  int64_t completed = 0, diverged = 0, failed = 0, interrupted = 0, skipped = 0;
  int64_t not_started = 0;               // left when a signal stopped the study
  int signal = 0;                        // the signal that stopped the study, or 0
  std::vector<std::string> failures;     // "label (run id): error"
  std::vector<std::string> skips;        // "label: why"
};

// Copies the study file to <out>/study.toml (what `study exec` and later reruns read), unless it is
// already that file. Errors name the file.
Status write_study_file(const Study& study, const std::string& out);

// Runs every run of `study` (loaded from <out>/study.toml) that has not finished. Errors: a CUDA run
// that cannot run here with require_cuda, MPS asked for but not available, the study directory not
// writable. Failed runs are not errors: they are in the summary.
Result<StudySummary> run_local(const Study& study, const std::string& out, const LocalOptions& options);

// The CPU cores this process may run on (its affinity mask), in order.
std::vector<int> usable_cores();

}  // namespace saddlescope::study
