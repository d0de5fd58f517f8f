// Training and evaluation data as float tensors in [0, 1], one example per row.
#pragma once

#include <string>

#include <torch/types.h>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct RunConfig;

struct Dataset {
  torch::Tensor train;      // (N, D) float32 in [0, 1], on the CPU
  torch::Tensor eval;       // (M, D) float32 in [0, 1], on the CPU
  std::string eval_split;   // "test" or "train" (npy data given without a test split)
  std::string source;       // what was read, for the manifest
};

// Loads cfg.data: "mnist" (train/test splits from the verified cache in cfg.data_dir) or
// "npy:X.npy[,Y.npy]": X is (N, ...) uint8 (scaled by 1/255) or float32/float64 already in [0, 1];
// Y, when given, holds N labels. Errors name the file and what was wrong, including
// batch_size > N. Never returns fewer examples than the files hold.
Result<Dataset> load_dataset(const RunConfig& cfg);

}  // namespace saddlescope::trainer
