// JSON read from files the tool does not trust (manifests, a checkpoint's state, Slurm job records):
// parsed only after a scan without allocation shows it is not nested absurdly deep, so that a file of
// a million '[' is a one-line error rather than a million nested values built and torn down.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

// The deepest nesting of arrays and objects accepted: the run store's files are 4-5 levels deep.
inline constexpr int kMaxJsonDepth = 64;

// The JSON value in `text`, the contents of `path` (named in errors). Errors, one line each:
//   "<path>: JSON nested deeper than 64 levels (at byte N)"   "<path>: not valid JSON"
Result<nlohmann::json> parse_json(const std::string& text, const std::string& path);

// `j[key]`, or null when `j` is not an object or has no `key`: how to read a key such a file may lack
// (a const operator[] of a missing key is undefined behaviour).
const nlohmann::json& field(const nlohmann::json& j, const char* key);

}  // namespace saddlescope::store
