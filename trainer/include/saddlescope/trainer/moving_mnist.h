// Moving MNIST (Srivastava, Mansimov & Salakhutdinov 2015), generated on the fly from a seed.
//
// Each sequence places `digits` digit images on a square canvas and moves them for `frames` frames:
//   - a digit's position p = (x, y) is normalised over the free canvas: p in [0, 1]^2 maps to the
//     top-left corner floor(p * (canvas - digit_side)) pixels, so a digit never leaves the canvas;
//   - p at frame 0 is uniform in [0, 1)^2, the direction theta uniform in [0, 2*pi), and the velocity
//     v = speed * (cos theta, sin theta) is constant except at edges;
//   - from frame 1 on, p += v; a component that reaches 0 or 1 is clamped there and its velocity
//     component reflected (v_x = -v_x), as in the original generator;
//   - overlapping digits combine by pixel-wise max.
// Sequence i depends only on (seed, i) and the digit images: its generator is an mt19937_64 seeded from
// a hash of (seed, i), and every draw is our own arithmetic on its 64-bit outputs (no std::
// distributions, whose outputs differ between standard libraries), so the same sequence comes out on
// every platform, in any order, in any batch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/idx.h"

namespace saddlescope::trainer {

struct MovingMnistOptions {
  int64_t canvas = 64;   // canvas side in pixels (square); must be >= the digit side (28 for MNIST)
  int64_t digits = 2;    // digits per sequence, >= 1
  int64_t frames = 20;   // frames per sequence T, >= 2
  double speed = 0.1;    // distance per frame in normalised canvas units, in (0, 1]
  uint64_t seed = 0;     // with the sequence index, determines the sequence
};

// Errors name the option and the value: "moving_mnist.frames must be >= 2, got 1".
// `digit_side` is the side of the digit images (28 for MNIST).
Status validate(const MovingMnistOptions& options, int64_t digit_side);

// The motion of one digit in one sequence.
struct DigitPath {
  int64_t image = 0;            // index into the digit images
  std::vector<int64_t> row;     // (T) top-left corner, pixels, in [0, canvas - digit_side]
  std::vector<int64_t> col;     // (T)
  std::vector<double> x, y;     // (T) normalised position, in [0, 1]; col = floor(x * free)
  std::vector<double> vx, vy;   // (T) velocity after frame t's bounce (the one that moves to t + 1)
};

class MovingMnist {
 public:
  // `images` is (N, side, side) uint8, N >= 1 (e.g. read_idx_images(...).images). Errors: options
  // (validate) or an image array that is not a non-empty stack of square images.
  static Result<MovingMnist> create(const MovingMnistOptions& options, IdxArray images);

  const MovingMnistOptions& options() const { return options_; }
  int64_t digit_side() const { return side_; }
  int64_t num_images() const { return num_images_; }

  // The digits' trajectories of sequence `index` (any index >= 0; there is no end).
  std::vector<DigitPath> paths(int64_t index) const;

  // Sequence `index`: (T, canvas, canvas) uint8.
  torch::Tensor sequence(int64_t index) const;

  // Sequences first .. first + count - 1 in the common Moving MNIST layout: (T, count, canvas, canvas)
  // uint8. Equal, sequence by sequence, to sequence(first + n). REQUIRES: first >= 0, count >= 1.
  torch::Tensor batch(int64_t first, int64_t count) const;

 private:
  MovingMnist(const MovingMnistOptions& options, IdxArray images);
  // Draws sequence `index` into `out` (T * canvas * canvas bytes, zeroed by the caller) at `stride`
  // bytes between frames (canvas^2 for one sequence, count * canvas^2 inside a batch).
  void render(int64_t index, uint8_t* out, int64_t stride) const;

  MovingMnistOptions options_;
  int64_t side_ = 0, num_images_ = 0;
  std::shared_ptr<const std::vector<uint8_t>> images_;  // (N, side, side), shared between copies
};

// Digit images for Moving MNIST from the verified MNIST cache under `data_dir` (mnist.h): `split` is
// "train" (training sequences) or "test" (held-out sequences). Errors: unknown split, missing or
// corrupt cache (the message says how to fetch it). `digests`, when not null, gets the SHA-256 of the
// files read (mnist.h read_mnist).
Result<IdxArray> moving_mnist_digits(const std::string& data_dir, const std::string& split,
                                     std::map<std::string, std::string>* digests = nullptr);

// The float32 value of each byte 0..255 as a pixel, x / 255 divided on the host: (256) float32, CPU.
const torch::Tensor& pixel_values();
// (T, N, H, W) uint8 -> (N, T, 1, H, W) float32 in [0, 1]: PredNet's input layout, each byte looked up
// in `values` (pixel_values(), or a copy of it on the frames' device), so a CUDA device gets the host's
// bits: its div_(255.0f) multiplies by the reciprocal instead (PyTorch's kernel for a scalar divisor),
// which rounds 126 of the 256 byte values to the next float.
torch::Tensor frames_to_input(const torch::Tensor& frames, const torch::Tensor& values = pixel_values());

// Writes sequences first .. first + count - 1 to `path` as a (T, count, canvas, canvas) uint8 .npy
// (the layout of the published mnist_test_seq.npy), atomically. Errors: count < 1, first < 0, I/O.
Status write_moving_mnist_npy(const MovingMnist& data, int64_t first, int64_t count,
                              const std::string& path);

}  // namespace saddlescope::trainer
