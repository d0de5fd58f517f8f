#include "saddlescope/trainer/run_record.h"

#include <fcntl.h>
#include <unistd.h>

#include "saddlescope/store/run_dir.h"

namespace saddlescope::trainer {
namespace {

// Room kept for the final manifest write on a disk that fills up during the run.
constexpr off_t kReserveBytes = 1 << 20;

std::string reserve_path(const std::string& dir) { return dir + "/.final-write-reserve"; }

}  // namespace

RunRecord::RunRecord(std::string run_dir, store::RunManifest manifest)
    : dir_(std::move(run_dir)), m_(std::move(manifest)) {}

Status RunRecord::save() {
  last_write_ = store::unix_now();
  return store::write_manifest(dir_, m_);
}

Status RunRecord::start() {
  int fd = ::open(reserve_path(dir_).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || ::posix_fallocate(fd, 0, kReserveBytes) != 0) {
    if (fd >= 0) ::close(fd);
    return Status::Error(reserve_path(dir_) + ": cannot reserve room for the run's final status (disk full?)");
  }
  ::close(fd);
  m_.status = store::RunStatus::kRunning;
  m_.process = store::ProcessInfo{static_cast<int64_t>(getpid()), store::this_host(), store::unix_now()};
  m_.timings.finished.clear();
  return save();
}

Status RunRecord::heartbeat(int64_t steps_completed, double min_interval_s) {
  if (store::unix_now() - last_write_ < min_interval_s) return Status::Ok();
  m_.steps_completed = steps_completed;
  m_.process->heartbeat_unix = store::unix_now();
  return save();
}

Status RunRecord::checkpointed(int64_t step, double seconds) {
  m_.checkpoint_step = step;
  m_.steps_completed = step;
  m_.timings.checkpoint_s += seconds;
  if (m_.process) m_.process->heartbeat_unix = store::unix_now();
  return save();
}

Status RunRecord::finish(store::RunStatus status) {
  m_.status = status;
  m_.process.reset();
  m_.timings.finished = store::utc_now();
  Status s = save();
  ::unlink(reserve_path(dir_).c_str());  // the reserved room: no longer needed, or needed now
  if (!s.ok()) s = save();                // tried once more with that room given back
  return s;
}

}  // namespace saddlescope::trainer
