// The data pipeline of a training run: mini-batches in a seeded order, and the fixed probe set.
//
// Rows of a dataset are visited in a fresh permutation each epoch, drawn from the data seed with our
// own Fisher–Yates (std::shuffle is implementation-defined), so the order is the same on every
// platform and independent of the weight seed. Moving MNIST sequences are generated on the fly:
// batch k of size b holds sequences kb .. kb+b−1. Either way the position in the data is a function of
// the number of examples drawn, so a resumed run continues with skip(examples) — no state to save.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <optional>

#include <torch/types.h>

#include "saddlescope/trainer/dataset.h"

namespace saddlescope::trainer {

class ExampleOrder;

// How many examples a probe set of `n` holds for `data`: at most its training rows; any number of
// generated sequences.
int64_t probe_set_size(const Dataset& data, int64_t n);

class Batches {
 public:
  // Batches of `data` in the order of `seed`, on `device` in `dtype`. REQUIRES: `data` outlives this.
  Batches(const Dataset& data, uint64_t seed, torch::Device device, torch::Dtype dtype);
  ~Batches();

  // The next `b` examples (rows, or sequences as the model's input), on the device.
  torch::Tensor next(int64_t b);
  // Moves past `examples` examples without producing them (a resumed run). REQUIRES: nothing drawn yet.
  void skip(int64_t examples);

  // `n` examples drawn once from their own seed (rows; at most all of them), or sequences far beyond
  // any training index: the same for every run of a dataset, whatever the training order.
  torch::Tensor probe_set(int64_t n) const;

  // The mean training example (the autoencoder's baseline), or undefined.
  torch::Tensor train_mean() const;

 private:
  void next_chunk(int64_t b);
  std::future<torch::Tensor> generate(int64_t first, int64_t n) const;

  const Dataset& data_;
  torch::Device device_;
  torch::Dtype dtype_;
  torch::Tensor train_x_;
  std::unique_ptr<ExampleOrder> order_;

  // Moving MNIST arrives a chunk of sequences at a time: generated on the host by a worker thread one
  // chunk ahead, copied to the device as uint8 in one transfer. A step then costs the host nothing but
  // a few launches — a CUDA-graph PredNet step is shorter than generating and copying its own batch.
  std::future<torch::Tensor> pending_;
  torch::Tensor chunk_;   // (T, sequences, H, W) uint8 on the device
  torch::Tensor pixels_;  // pixel_values() on the device
  int64_t chunk_used_ = 0, next_sequence_ = 0;
};

}  // namespace saddlescope::trainer
