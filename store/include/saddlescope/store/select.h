// Columns of a run's table by name, for scripts: `saddlescope store select RUN FILE COLUMN...` prints
// them as CSV, read through the typed reader (the file's version and header checked), so no script
// parses a run-store file by column position.
#pragma once

#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/store/run_dir.h"

namespace saddlescope::store {

// The named `columns` (all when empty) of `run`'s table `file` ("metrics.csv", or "metrics"), as CSV
// text with a header, values written as the run store writes them. Errors: an unknown file (listing the
// tables), a column the table does not have (listing its columns), the reader's errors.
Result<std::string> select_columns(const RunDir& run, const std::string& file, const std::vector<std::string>& columns);

}  // namespace saddlescope::store
