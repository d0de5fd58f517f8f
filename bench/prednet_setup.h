// The PredNet benchmarks' common start: a run config from flags (key, value), its execution settings
// applied (threads, determinism, malloc) and its data loaded. Errors name the flag or file, as the CLI's.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>  // apply_execution's result

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/execution.h"

namespace saddlescope::bench {

struct PredNetSetup {
  trainer::RunConfig cfg;
  trainer::Dataset data;
};

inline Result<PredNetSetup> prednet_setup(const std::vector<std::pair<std::string, std::string>>& flags) {
  trainer::ConfigBuilder b;
  for (const auto& [k, v] : flags) SADDLESCOPE_RETURN_IF_ERROR(b.set_flag(k, v));
  auto cfg = b.resolve();
  if (!cfg) return cfg.status();
  if (auto a = trainer::apply_execution(cfg->execution); !a) return a.status();
  auto data = trainer::load_dataset(*cfg);
  if (!data) return data.status();
  return PredNetSetup{std::move(*cfg), std::move(*data)};
}

}  // namespace saddlescope::bench
