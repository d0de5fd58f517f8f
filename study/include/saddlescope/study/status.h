// Where each run of a study stands, read back from its run directory (and, for a run that failed
// before its directory existed, from its log): what `study status` prints and what the runner and
// `study exec` decide from — start, resume, retry, or leave alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "saddlescope/study/study.h"

namespace saddlescope::study {

enum class RunState {
  kNew,          // no run directory (and no error in its log)
  kRunning,      // a live process writes it
  kCompleted,
  kDiverged,
  kFailed,       // the manifest says failed, or the run failed before its directory existed (log)
  kInterrupted,  // stopped by a signal; resumes from its checkpoint
  kStale,        // says running, but its writer is gone (killed); resumes from its checkpoint
  kUnreadable,   // a directory without a readable manifest: started again
  kSkipped,      // cannot run here (a CUDA run on a host without that GPU); set by the runner
};
const char* state_name(RunState s);
// Completed and diverged runs are results: nothing more to do.
inline bool finished(RunState s) { return s == RunState::kCompleted || s == RunState::kDiverged; }

struct RunView {
  RunState state = RunState::kNew;
  int64_t steps_completed = 0;
  std::optional<int64_t> checkpoint_step;  // where a resume would continue
  std::optional<double> final_loss;
  double train_s = 0;
  std::string error;  // failed or unreadable: why, one line
};

// <study>/logs/<run-id>.log: everything the processes that ran the run printed, one section per try.
std::string log_path(const std::string& study_dir, const std::string& run_id);

RunView inspect_run(const std::string& study_dir, const std::string& run_id);

// The last "saddlescope: ..." error line of a run's log, or "".
std::string last_error_in_log(const std::string& study_dir, const std::string& run_id);

}  // namespace saddlescope::study
