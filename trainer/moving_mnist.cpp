#include "saddlescope/trainer/moving_mnist.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include <torch/torch.h>

#include "saddlescope/store/npy.h"
#include "saddlescope/trainer/mnist.h"

namespace saddlescope::trainer {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

// SplitMix64's finaliser: a bijection on 64 bits that spreads nearby inputs (seeds 0, 1, 2, ... and
// indices 0, 1, 2, ...) over the whole state space.
uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) from the top 53 bits: exact, and the same on every platform.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

Status validate(const MovingMnistOptions& o, int64_t digit_side) {
  auto bad = [](const std::string& field, const std::string& what, const std::string& got) {
    return Status::Error("moving_mnist." + field + " must be " + what + ", got " + got);
  };
  if (o.canvas < digit_side)
    return bad("canvas", ">= " + std::to_string(digit_side) + " (the digit side)", std::to_string(o.canvas));
  if (o.digits < 1) return bad("digits", ">= 1", std::to_string(o.digits));
  if (o.frames < 2) return bad("frames", ">= 2", std::to_string(o.frames));
  if (!(o.speed > 0 && o.speed <= 1)) return bad("speed", "in (0, 1]", std::to_string(o.speed));
  return Status::Ok();
}

Result<MovingMnist> MovingMnist::create(const MovingMnistOptions& options, IdxArray images) {
  const auto& d = images.dims;
  if (d.size() != 3 || d[0] < 1 || d[1] < 1 || d[1] != d[2] ||
      static_cast<int64_t>(images.data.size()) != d[0] * d[1] * d[2])
    return Status::Error("moving_mnist: digit images must be a non-empty (N, side, side) uint8 array");
  SADDLESCOPE_RETURN_IF_ERROR(validate(options, d[1]));
  return MovingMnist(options, std::move(images));
}

MovingMnist::MovingMnist(const MovingMnistOptions& options, IdxArray images)
    : options_(options),
      side_(images.dims[1]),
      num_images_(images.dims[0]),
      images_(std::make_shared<const std::vector<uint8_t>>(std::move(images.data))) {}

std::vector<DigitPath> MovingMnist::paths(int64_t index) const {
  SADDLESCOPE_CHECK(index >= 0);
  std::mt19937_64 rng(mix(mix(options_.seed) + static_cast<uint64_t>(index)));
  const int64_t frames = options_.frames;
  const double free = static_cast<double>(options_.canvas - side_);
  std::vector<DigitPath> out(options_.digits);
  for (auto& p : out) {
    // Draw order is part of the format: image, x, y, direction.
    p.image = std::min(static_cast<int64_t>(uniform01(rng) * num_images_), num_images_ - 1);
    double x = uniform01(rng), y = uniform01(rng);
    double theta = uniform01(rng) * kTwoPi;
    double vx = options_.speed * std::cos(theta), vy = options_.speed * std::sin(theta);
    for (int64_t t = 0; t < frames; ++t) {
      if (t > 0) {
        x += vx;
        y += vy;
        // Clamp and reflect per component; the comparisons include the edge itself (the original's
        // <= and >=), so a digit that lands exactly on an edge turns there.
        if (x <= 0) { x = 0; vx = -vx; }
        if (x >= 1) { x = 1; vx = -vx; }
        if (y <= 0) { y = 0; vy = -vy; }
        if (y >= 1) { y = 1; vy = -vy; }
      }
      p.x.push_back(x);
      p.y.push_back(y);
      p.vx.push_back(vx);
      p.vy.push_back(vy);
      p.col.push_back(static_cast<int64_t>(std::floor(x * free)));
      p.row.push_back(static_cast<int64_t>(std::floor(y * free)));
    }
  }
  return out;
}

void MovingMnist::render(int64_t index, uint8_t* out, int64_t stride) const {
  const int64_t c = options_.canvas, s = side_;
  const uint8_t* images = images_->data();
  for (const DigitPath& p : paths(index)) {
    const uint8_t* digit = images + p.image * s * s;
    for (int64_t t = 0; t < options_.frames; ++t) {
      uint8_t* frame = out + t * stride;
      for (int64_t r = 0; r < s; ++r) {
        uint8_t* dst = frame + (p.row[t] + r) * c + p.col[t];
        const uint8_t* src = digit + r * s;
        for (int64_t k = 0; k < s; ++k) dst[k] = std::max(dst[k], src[k]);
      }
    }
  }
}

torch::Tensor MovingMnist::sequence(int64_t index) const {
  const int64_t c = options_.canvas;
  auto out = torch::zeros({options_.frames, c, c}, torch::kUInt8);
  render(index, out.data_ptr<uint8_t>(), c * c);
  return out;
}

torch::Tensor MovingMnist::batch(int64_t first, int64_t count) const {
  SADDLESCOPE_CHECK(first >= 0 && count >= 1);
  const int64_t c = options_.canvas;
  auto out = torch::zeros({options_.frames, count, c, c}, torch::kUInt8);
  uint8_t* base = out.data_ptr<uint8_t>();
  for (int64_t n = 0; n < count; ++n) render(first + n, base + n * c * c, count * c * c);
  return out;
}

Result<IdxArray> moving_mnist_digits(const std::string& data_dir, const std::string& split,
                                     std::map<std::string, std::string>* digests) {
  if (split != "train" && split != "test")
    return Status::Error("moving_mnist: split must be train or test, got '" + split + "'");
  auto read = read_mnist(data_dir, split, digests);
  if (!read) return read.status();
  return std::move(read->images);
}

const torch::Tensor& pixel_values() {
  static const torch::Tensor values = torch::arange(256, torch::kFloat32).div_(255.0f);
  return values;
}

torch::Tensor frames_to_input(const torch::Tensor& frames, const torch::Tensor& values) {
  SADDLESCOPE_CHECK(frames.dim() == 4 && frames.scalar_type() == torch::kUInt8);
  SADDLESCOPE_CHECK(values.numel() == 256 && values.device() == frames.device());
  const torch::Tensor bytes = frames.permute({1, 0, 2, 3}).unsqueeze(2).contiguous();
  return values.index_select(0, bytes.flatten().to(torch::kLong)).view(bytes.sizes());
}

Status write_moving_mnist_npy(const MovingMnist& data, int64_t first, int64_t count,
                              const std::string& path) {
  if (first < 0) return Status::Error(path + ": first sequence must be >= 0, got " + std::to_string(first));
  if (count < 1) return Status::Error(path + ": count must be >= 1, got " + std::to_string(count));
  torch::Tensor frames = data.batch(first, count);
  std::vector<int64_t> shape(frames.sizes().begin(), frames.sizes().end());
  return store::write_npy(path, store::Dtype::kUInt8, shape, frames.data_ptr<uint8_t>());
}

}  // namespace saddlescope::trainer
