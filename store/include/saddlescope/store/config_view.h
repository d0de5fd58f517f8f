// The config keys that modules other than the trainer read from a run's manifest, as types: its seeds,
// model, optimiser, dtype, perturbation and probes. The trainer's key table (trainer/config.h) declares
// every key with its type, default and help; this view names the ones read elsewhere (the analysis, the
// study's estimates, replays), and trainer_base's tests hold each to that table. A key a manifest lacks
// (a run from before it existed) is empty here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/base/status.h"
#include "saddlescope/store/json_object.h"
#include "saddlescope/store/manifest.h"

namespace saddlescope::store {

struct ConfigView {
  std::optional<int64_t> seed;       // initial weights
  std::optional<int64_t> data_seed;  // example order (resolved: the seed unless set)
  std::optional<std::string> model, optimizer, dtype;
  std::optional<nlohmann::json> perturbation;     // its spec ("none": none)
  std::optional<std::vector<std::string>> probe;  // probe specs, e.g. "curvature:every=100"
  static auto json_keys() {
    using T = ConfigView;
    return std::make_tuple(omitted("seed", &T::seed), omitted("data_seed", &T::data_seed), omitted("model", &T::model),
                           omitted("optimizer", &T::optimizer), omitted("dtype", &T::dtype),
                           omitted("perturbation", &T::perturbation), omitted("probe", &T::probe));
  }
};

// The view of `m`'s config. A key of another type is an error naming it ("config.seed: expected an
// integer, got "x"").
inline Result<ConfigView> config_view(const RunManifest& m) {
  auto v = decode<ConfigView>(m.config);
  if (!v) return Status::Error("config." + v.status().message());
  return v;
}

}  // namespace saddlescope::store
