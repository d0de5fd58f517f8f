// A small learnable dataset and a fast training config on it, shared by the trainer tests.
#pragma once

#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/store/npy.h"
#include "saddlescope/trainer/config.h"
#include "temp_dir.h"

namespace saddlescope::testing {

// A uint8 dataset (n, d) with structure to learn: each row is one of 4 prototypes plus noise.
inline std::string write_pixels(const TempDir& dir, int64_t n = 256, int64_t d = 24) {
  std::mt19937 rng(5);
  std::vector<uint8_t> x(n * d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j)
      x[i * d + j] = static_cast<uint8_t>(((i % 4) == (j % 4) ? 200 : 30) + rng() % 20);
  std::string path = dir.file("x.npy");
  store::write_npy(path, store::Dtype::kUInt8, {n, d}, x.data());
  return path;
}

// 150 steps of a 24->16->4->16->24 autoencoder at batch 8: well under a second on one core.
inline trainer::RunConfig small_config(const TempDir& dir, const std::string& data_path) {
  trainer::RunConfig c;
  c.data = "npy:" + data_path;
  c.hidden = {16, 4};
  c.steps = 150;
  c.batch_size = 8;
  c.execution.threads = 1;
  c.seed = 3;
  c.data_seed = 4;
  c.lr = 1e-2;
  c.log_every = 40;
  c.out = dir.file("study");
  c.data_dir = dir.path();
  return c;
}

// `base` with these keys set, resolved as a config file's would be.
inline Result<trainer::RunConfig> with_keys(const trainer::RunConfig& base,
                                            const std::map<std::string, nlohmann::json>& keys) {
  trainer::ConfigBuilder b;
  nlohmann::json j = base.to_json();
  for (const auto& [k, v] : keys) j[k] = v;
  SADDLESCOPE_RETURN_IF_ERROR(b.load_json(j, "test"));
  return b.resolve();
}

// The Python that scripts TorchScript modules for the tests: $SADDLESCOPE_PYTHON, else Debian's
// python3-torch (scripts/setup.sh), the same 1.13 as the LibTorch the tests link.
inline std::string python() {
  const char* p = std::getenv("SADDLESCOPE_PYTHON");
  return p ? p : "/usr/bin/python3";
}

inline std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

}  // namespace saddlescope::testing
