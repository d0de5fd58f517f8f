// A run's manifest read through the typed reader (store::read_manifest checks every field), then as
// JSON, for tests that look at many fields.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "saddlescope/store/run_dir.h"

namespace saddlescope::testing {

inline Result<nlohmann::json> manifest_json(const std::string& run_dir) {
  auto m = store::read_manifest(run_dir);
  if (!m) return m.status();
  return m->to_json();
}

}  // namespace saddlescope::testing
