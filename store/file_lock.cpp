#include "file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace saddlescope::store {

Result<FileLock> FileLock::acquire(const std::string& path, double wait_seconds, const std::string& busy) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error(path + ": cannot open: " + std::strerror(errno));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_seconds);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK || std::chrono::steady_clock::now() > deadline) {
      ::close(fd);
      return Status::Error(busy);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return FileLock(fd);
}

bool FileLock::held(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases a shared lock taken just now
  return held;
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace saddlescope::store
