#include "saddlescope/trainer/run_record.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

#include "saddlescope/store/run_dir.h"

namespace saddlescope::trainer {
namespace {

// Room kept for the final manifest write on a disk that fills up during the run.
constexpr off_t kReserveBytes = 1 << 20;

std::string reserve_path(const std::string& dir) { return dir + "/.final-write-reserve"; }

std::string hostname() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? buf : "";
}

}  // namespace

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

RunRecord::RunRecord(std::string run_dir, store::RunManifest manifest)
    : dir_(std::move(run_dir)), m_(std::move(manifest)) {}

Status RunRecord::save() {
  last_write_ = unix_now();
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
  m_.process = store::ProcessInfo{static_cast<int64_t>(getpid()), hostname(), unix_now()};
  m_.timings.finished.clear();
  return save();
}

Status RunRecord::heartbeat(int64_t steps_completed, double min_interval_s) {
  if (unix_now() - last_write_ < min_interval_s) return Status::Ok();
  m_.steps_completed = steps_completed;
  m_.process->heartbeat_unix = unix_now();
  return save();
}

Status RunRecord::checkpointed(int64_t step, double seconds) {
  m_.checkpoint_step = step;
  m_.steps_completed = step;
  m_.timings.checkpoint_s += seconds;
  if (m_.process) m_.process->heartbeat_unix = unix_now();
  return save();
}

Status RunRecord::finish(store::RunStatus status) {
  m_.status = status;
  m_.process.reset();
  m_.timings.finished = utc_now();
  Status s = save();
  if (!s.ok()) {
    ::unlink(reserve_path(dir_).c_str());  // give the reserved room back, and try once more
    s = save();
  } else {
    ::unlink(reserve_path(dir_).c_str());
  }
  return s;
}

}  // namespace saddlescope::trainer
