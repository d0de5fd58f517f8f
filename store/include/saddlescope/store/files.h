// Whole-file I/O with the guarantees the run store needs.
#pragma once

#include <string>
#include <string_view>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

// Writes `content` to `path` atomically: a temporary file beside it, flushed to disk, then renamed over
// `path`. Readers see the old file or the new one, never a part. Errors name the path.
Status write_file_atomic(const std::string& path, std::string_view content);

// The whole file as bytes; an error names the path.
Result<std::string> read_file(const std::string& path);

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
