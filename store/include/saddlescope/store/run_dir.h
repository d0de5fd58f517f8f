// Run directories and their manifests: the contract between the trainer (writer) and every reader.
//
//   <study>/runs/<run-id>/manifest.json   config, fingerprint, status, timings (written atomically)
//                        /metrics.csv     one row per step
// docs/design.md describes every field.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

// The manifest's magic and version: readers refuse anything else.
inline constexpr const char* kManifestFormat = "saddlescope.run";
inline constexpr int kManifestVersion = 1;

// Run statuses as written in manifest.json.
inline constexpr const char* kRunning = "running";
inline constexpr const char* kCompleted = "completed";
inline constexpr const char* kFailed = "failed";
inline constexpr const char* kDiverged = "diverged";

// A run id is 1-128 characters of [A-Za-z0-9._-], not "." or "..": safe as a directory name.
Status validate_run_id(const std::string& id);

// "<prefix>-<first 8 hex digits of SHA-256(canonical_config)>": readable and stable for one config.
// REQUIRES: prefix passes validate_run_id.
std::string make_run_id(const std::string& prefix, const std::string& canonical_config);

// Creates <study>/runs/<run_id>/ and returns its path. An existing directory is an error unless
// `replace`, in which case it is removed first.
Result<std::string> create_run_dir(const std::string& study_dir, const std::string& run_id, bool replace);

// Writes <run_dir>/manifest.json atomically. `manifest` must carry kManifestFormat/kManifestVersion.
Status write_manifest(const std::string& run_dir, const nlohmann::json& manifest);

// Reads and checks <run_dir>/manifest.json (parse errors, magic, version).
Result<nlohmann::json> read_manifest(const std::string& run_dir);

}  // namespace saddlescope::store
