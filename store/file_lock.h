// An exclusive lock on a side file (flock), held for the life of the object and released by the
// kernel however the process dies: the catalogue's writers' lock and the merge's. Internal to store/.
// The file stays when the lock is released: removing it would let a second holder in beside the first.
#pragma once

#include <string>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

class FileLock {
 public:
  // Opens (creating) `path` and takes the lock, waiting up to `wait_seconds` (0: not at all) while
  // another process holds it. Errors: "<path>: cannot open: <why>", or `busy` when it is not free in
  // time.
  static Result<FileLock> acquire(const std::string& path, double wait_seconds, const std::string& busy);
  // Whether some process holds the lock on `path` now (false when there is no such file).
  static bool held(const std::string& path);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace saddlescope::store
