// The configuration of one training run: from a TOML file, command-line flags (which override the
// file), and defaults, each value remembering where it came from so that an error can say so:
//   "run.toml:7: lr must be > 0 and finite, got -1"      "--steps: must be >= 1, got 0"
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct RunConfig {
  std::string model = "autoencoder";    // autoencoder
  std::vector<int64_t> hidden = {256, 64};  // encoder widths; the decoder mirrors them
  std::string data = "mnist";           // mnist | npy:X.npy[,Y.npy]
  std::string data_dir;                 // default: $SADDLESCOPE_DATA_DIR, else "data"
  std::string device = "cpu";           // cpu | cuda | cuda:N
  int64_t threads = 0;                  // intra-op (and BLAS) threads; default: all cores
  int64_t seed = 0;                     // initial weights
  int64_t data_seed = -1;               // example order; default: = seed
  int64_t steps = 2000;                 // optimiser steps
  int64_t batch_size = 1;               // examples per step (the seed study used 1)
  double lr = 1e-3;                     // Adam learning rate
  int64_t log_every = 100;              // metrics are read from the device and written every k steps
  std::string out = "runs";             // study directory; the run goes to <out>/runs/<run-id>/

  // Every field, resolved, as JSON (the manifest's "config").
  nlohmann::json to_json() const;
  // The fields that determine the result (not out, data_dir, log_every), canonical JSON: hashed into
  // the run id.
  std::string identity() const;
  // "autoencoder-cpu-t1-s7": readable part of the run id.
  std::string run_prefix() const;
};

// The keys a file or flags may set, in order (flags spell them with '-' for '_').
const std::vector<std::string>& config_keys();
// One line of help for `key`.
std::string config_help(const std::string& key);

class ConfigBuilder {
 public:
  // Reads a TOML file. Unknown keys, wrong types and out-of-range values are errors naming file:line.
  Status load_toml(const std::string& path);
  // Sets `key` from a flag's text (origin "--key"). Same checks as the file.
  Status set_flag(const std::string& key, const std::string& text);
  // Applies defaults (data_dir, threads, data_seed) and cross-field checks.
  Result<RunConfig> resolve() const;

 private:
  RunConfig cfg_;
  std::map<std::string, std::string> origin_;  // key -> "file:line" or "--flag"
};

}  // namespace saddlescope::trainer
