// Fault injection beyond failed writes (files.h's injected_write_failure), for the tests of what a
// failed flush or rename leaves behind. Same syntax as SADDLESCOPE_FAIL_WRITE ("SUBSTRING" or
// "SUBSTRING:N": the N-th, default first, such call on a path containing SUBSTRING, and every later one):
//   SADDLESCOPE_FAIL_FSYNC   the fsync that makes a file (or a directory's files) durable fails: EIO
//   SADDLESCOPE_FAIL_RENAME  the rename that publishes a file or directory fails: EXDEV
// Each returns ok when no failure is due, else the error the real failure would give, naming `path`.
#pragma once

#include <string>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

Status injected_fsync_failure(const std::string& path);
Status injected_rename_failure(const std::string& path);

}  // namespace saddlescope::store
