// The manifest of a run while it trains: assembled once, then rewritten (atomically) when the run
// starts, at heartbeats, at checkpoints and when it ends. Whatever ends the run — completion,
// divergence, an error, a signal — the last write says so; if even that write fails (a full disk),
// a reserved file is given up to make room and it is tried once more, and if it still fails the
// process exits with the error and readers see the run as stale (its lock is gone).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/store/manifest.h"

namespace saddlescope::trainer {

class RunRecord {
 public:
  // REQUIRES: run_dir exists and the caller holds the run's lock.
  RunRecord(std::string run_dir, store::RunManifest manifest);

  store::RunManifest& manifest() { return m_; }
  const std::string& dir() const { return dir_; }

  // Status running with this process's pid, host and heartbeat; reserves room for the last write.
  Status start();
  // Refreshes the heartbeat and steps_completed when `min_interval_s` has passed since the last write.
  Status heartbeat(int64_t steps_completed, double min_interval_s);
  // Records a complete checkpoint taken before `step`.
  Status checkpointed(int64_t step, double seconds);
  // The final write: status (not running), finished time, process cleared.
  Status finish(store::RunStatus status);

 private:
  Status save();
  std::string dir_;
  store::RunManifest m_;
  double last_write_ = 0;
};

}  // namespace saddlescope::trainer
