// Training and evaluation data as float tensors, one example per row: pixels in [0, 1], or for the
// linear network input–target pairs stored side by side in one row [x, y], so that every row-wise
// consumer (the batch order, perturbations, the probe set) handles pairs without knowing about them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct RunConfig;

class MovingMnist;

struct Dataset {
  torch::Tensor train;      // (N, D) float32 on the CPU; undefined for generated sequences
  // moving-mnist: the endless stream of training sequences (sequence i from (data_seed, i)), else null
  std::shared_ptr<MovingMnist> sequences;
  torch::Tensor eval;       // (M, D), or (M, T, 1, H, W) held-out sequences: float32 in [0, 1], CPU
  std::string eval_split;   // "test" or "train" (npy data given without a test split)
  std::string source;       // what was read, for the manifest
  std::vector<int64_t> example_shape;  // one example: (D) or (T, 1, H, W)
  // The last `target_columns` of the D columns of a row are its target y, the others its input x
  // (data teacher, or npy X,Y for model linear); 0: rows are inputs only.
  int64_t target_columns = 0;
  // Model torchscript: the shape of one example's input x as the module's forward takes it (the row's
  // first D − target_columns values reshaped): (1, 28, 28) for mnist, X.npy's shape less its first
  // dimension. Empty for the built-in models.
  std::vector<int64_t> input_shape;
  // The SHA-256 of every file the data came from, for the manifest: "mnist/<file name>" for the MNIST
  // cache (mnist, moving-mnist), the path as written in `data` for .npy files; empty for teacher data.
  std::map<std::string, std::string> digests;
};

// Loads cfg.data: "moving-mnist" (training sequences generated from the MNIST train digits, seeded by
// data_seed; cfg.prednet.eval_sequences held-out sequences from the test digits, the same for every
// run), "mnist" (train/test splits from the cache in cfg.data_dir, verified as read: mnist.h) or
// "npy:X.npy[,Y.npy]": X is (N, ...) uint8 (scaled by 1/255) or float32/float64 already in [0, 1];
// Y, when given, holds N labels. For model linear, Y is required and holds the targets, (N) or
// (N, c), and X and Y may hold any values finite in float32 (NaN, ±inf and float64 values beyond
// float32's range are errors naming the file and the element); rows are [x, y] and evaluation is on
// them too.
// "teacher": generated pairs (trainer/teacher.h) from data_seed. Errors name the file and what was
// wrong, including batch_size > N. Never returns fewer examples than the files hold.
Result<Dataset> load_dataset(const RunConfig& cfg);

}  // namespace saddlescope::trainer
