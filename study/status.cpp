#include "saddlescope/study/status.h"

#include <fstream>

#include "saddlescope/store/files.h"
#include "saddlescope/store/run_dir.h"

namespace saddlescope::study {

const char* state_name(RunState s) {
  switch (s) {
    case RunState::kNew: return "new";
    case RunState::kRunning: return "running";
    case RunState::kCompleted: return "completed";
    case RunState::kDiverged: return "diverged";
    case RunState::kFailed: return "failed";
    case RunState::kInterrupted: return "interrupted";
    case RunState::kStale: return "stale";
    case RunState::kUnreadable: return "unreadable";
    case RunState::kSkipped: return "skipped";
  }
  return "?";
}

std::string log_path(const std::string& study_dir, const std::string& run_id) {
  return study_dir + "/logs/" + run_id + ".log";
}

std::string last_error_in_log(const std::string& study_dir, const std::string& run_id) {
  std::ifstream in(log_path(study_dir, run_id));
  std::string line, last;
  const std::string prefix = "saddlescope: ";
  while (std::getline(in, line)) {
    if (line.rfind("== ", 0) == 0) last.clear();  // a new try: earlier errors are history
    if (line.rfind(prefix, 0) == 0 && line.rfind(prefix + "warning:", 0) != 0) last = line.substr(prefix.size());
  }
  return last;
}

RunView inspect_run(const std::string& study_dir, const std::string& run_id) {
  RunView v;
  const std::string dir = study_dir + "/runs/" + run_id;
  if (!store::file_exists(dir)) {
    v.error = last_error_in_log(study_dir, run_id);
    if (!v.error.empty()) v.state = RunState::kFailed;
    return v;
  }
  auto run = store::RunDir::open(dir);
  if (!run) {
    // A directory a live writer is still creating has its lock held: not ours to judge yet.
    v.state = store::RunLock::held(study_dir, run_id) ? RunState::kRunning : RunState::kUnreadable;
    v.error = run.status().message();
    return v;
  }
  const store::RunManifest& m = run->manifest();
  v.steps_completed = m.steps_completed;
  v.checkpoint_step = m.checkpoint_step;
  v.final_loss = m.final_loss;
  v.train_s = m.timings.train_s;
  v.error = m.error;
  switch (run->state()) {
    case store::RunStatus::kRunning: v.state = RunState::kRunning; break;
    case store::RunStatus::kCompleted: v.state = RunState::kCompleted; break;
    case store::RunStatus::kDiverged: v.state = RunState::kDiverged; break;
    case store::RunStatus::kFailed: v.state = RunState::kFailed; break;
    case store::RunStatus::kInterrupted: v.state = RunState::kInterrupted; break;
    case store::RunStatus::kStale: v.state = RunState::kStale; break;
  }
  return v;
}

}  // namespace saddlescope::study
