// The study catalogue: <study>/catalog.sqlite, an SQL index over the run manifests.
//
// It holds nothing the run directories do not: rebuild_catalog() makes it anew from them, so it can be
// deleted at any time. Table `runs`: run_id, status, model, device, seed, steps, started, finished,
// eval_mse, baseline_mse, manifest (the whole manifest as JSON text, for json_extract()).
#pragma once

#include <string>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

// Scans <study>/runs/*/manifest.json and replaces <study>/catalog.sqlite atomically. A run directory
// whose manifest is unreadable is an error naming it. Returns the number of runs indexed.
Result<int> rebuild_catalog(const std::string& study_dir);

}  // namespace saddlescope::store
