// Training and evaluation data as float tensors in [0, 1], one example per row.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct RunConfig;

class MovingMnist;

struct Dataset {
  torch::Tensor train;      // (N, D) float32 in [0, 1], on the CPU; undefined for generated sequences
  // moving-mnist: the endless stream of training sequences (sequence i from (data_seed, i)), else null
  std::shared_ptr<MovingMnist> sequences;
  torch::Tensor eval;       // (M, D), or (M, T, 1, H, W) held-out sequences: float32 in [0, 1], CPU
  std::string eval_split;   // "test" or "train" (npy data given without a test split)
  std::string source;       // what was read, for the manifest
  std::vector<int64_t> example_shape;  // one example: (D) or (T, 1, H, W)
};

// Loads cfg.data: "moving-mnist" (training sequences generated from the MNIST train digits, seeded by
// data_seed; cfg.prednet.eval_sequences held-out sequences from the test digits, the same for every
// run), "mnist" (train/test splits from the verified cache in cfg.data_dir) or
// "npy:X.npy[,Y.npy]": X is (N, ...) uint8 (scaled by 1/255) or float32/float64 already in [0, 1];
// Y, when given, holds N labels. Errors name the file and what was wrong, including
// batch_size > N. Never returns fewer examples than the files hold.
Result<Dataset> load_dataset(const RunConfig& cfg);

}  // namespace saddlescope::trainer
