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

}  // namespace saddlescope::store
