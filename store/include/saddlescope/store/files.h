// Whole-file I/O with the guarantees the run store needs, and the one door through which input files
// are read: a directory, a FIFO or a device (/dev/zero) is refused before a byte is read, and a file
// larger than its reader accepts is refused before anything is allocated for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

// No ceiling beyond the file's own size.
inline constexpr uint64_t kAnySize = UINT64_MAX;

// Writes `content` to `path` atomically: a temporary file beside it, flushed to disk, then renamed over
// `path`. Readers see the old file or the new one, never a part. Errors name the path.
Status write_file_atomic(const std::string& path, std::string_view content);

// A regular file opened for reading; move-only, closed on destruction.
class InputFile {
 public:
  // Opens `path` (following symbolic links). It is stat'ed before it is opened, so that a device is
  // never opened and a FIFO never waited on. Errors, one line each:
  //   "<path>: cannot open for reading: <reason>"   "<path>: not a regular file"
  //   "<path>: <n> bytes, more than the <max_bytes> accepted (<limit>)"   (the parenthesis when given)
  static Result<InputFile> open(const std::string& path, uint64_t max_bytes = kAnySize,
                                std::string_view limit = {});
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  const std::string& path() const { return path_; }
  // The file's size in bytes when it was opened.
  uint64_t size() const { return size_; }
  // Reads the next `n` bytes into `out`. Errors name the path: a read error, or the file ending first
  // ("changed while being read": it was shorter than size() said).
  Status read(void* out, size_t n);
  // Up to `n` next bytes into `out`: how many were read, 0 at the end of the file.
  Result<size_t> read_some(void* out, size_t n);
  // Ok when nothing follows what has been read: a file that grew after open() is an error.
  Status expect_end();

 private:
  InputFile(int fd, std::string path, uint64_t size) : fd_(fd), path_(std::move(path)), size_(size) {}
  int fd_ = -1;
  std::string path_;
  uint64_t size_ = 0;
};

// Ok when `path` is a regular file of at most `max_bytes` bytes: InputFile::open's checks and errors,
// without reading anything.
Status check_regular_file(const std::string& path, uint64_t max_bytes = kAnySize, std::string_view limit = {});

// The whole file as bytes, after InputFile::open's checks; errors name the path.
Result<std::string> read_file(const std::string& path, uint64_t max_bytes = kAnySize, std::string_view limit = {});

// Whether `path` exists (as anything).
bool file_exists(const std::string& path);

// Fault injection for tests of the run's crash safety: when the environment variable
// SADDLESCOPE_FAIL_WRITE is "SUBSTRING" or "SUBSTRING:N", the N-th (default first) write to a path
// containing SUBSTRING, and every later one, fails as a full disk would (ENOSPC). Every writer of the
// run store (CSV flushes, atomic files, .npy, snapshot and checkpoint directories) asks here first.
// SADDLESCOPE_KILL_AT_WRITE, with the same syntax, kills the process (SIGKILL) at that write instead:
// the crash tests stop a run at an exact point, e.g. halfway through a snapshot. Returns ok when no
// failure is due.
Status injected_write_failure(const std::string& path);

}  // namespace saddlescope::store
