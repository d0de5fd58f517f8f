// Copying a scanned run (run_scan.h) into a staging directory for `store merge`: internal to store/.
#pragma once

#include <string>

#include "run_scan.h"
#include "saddlescope/base/status.h"
#include "saddlescope/store/manifest.h"

namespace saddlescope::store {

// Creates `dest` (which must not exist) and copies into it every directory and file `run` lists from
// run.path, then writes `manifest` as its manifest.json; every file and directory is made durable
// (fsync) before it returns. Source files are opened without following links and must still be the
// files scanned: a regular file of the size and SHA-256 recorded, else an error ("<file>: changed
// since it was checked"). Each file written asks injected_write_failure() first (files.h). Errors name
// the file; what was copied stays for the caller to remove.
Status stage_run(const ScannedRun& run, const std::string& dest, const RunManifest& manifest);

// fsync of a directory, so that the names created or renamed in it are durable. Errors name it.
Status sync_directory(const std::string& dir);

}  // namespace saddlescope::store
