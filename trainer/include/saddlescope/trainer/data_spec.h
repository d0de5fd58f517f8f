// The training data as written in configs, parsed once for the config's check and the loader
// (dataset.h): mnist | cifar10[:train=N] | moby-dick[:context=T] | moving-mnist | teacher |
// npy:X.npy[,Y.npy]. Torch-free.
#pragma once

#include <cstdint>
#include <string>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct DataSpec {
  enum class Kind { kMnist, kCifar10, kMobyDick, kMovingMnist, kTeacher, kNpy };
  static constexpr int64_t kDefaultContext = 64;
  Kind kind = Kind::kMnist;
  int64_t train = 0;                  // cifar10: the first `train` training images; 0: all 50,000
  int64_t context = kDefaultContext;  // moby-dick: bytes per example, the next byte of each its target
  std::string x;  // npy: the inputs' file, never empty
  std::string y;  // npy: the labels' or targets' file, "" when none

  // Whether the data are input–target pairs (teacher, or npy with a Y file), as model linear needs.
  bool pairs() const { return kind == Kind::kTeacher || (kind == Kind::kNpy && !y.empty()); }
  // The spec as written in configs: "mnist", "npy:x.npy,y.npy". parse_data_spec(s.name()) gives s back.
  std::string name() const;
};

// Parses `text`; on failure the message says what was expected, worded to follow the key's name:
//   "must be mnist, cifar10[:train=N], moby-dick[:context=T], npy:X.npy[,Y.npy], moving-mnist or teacher, got 'npy:'"
Result<DataSpec> parse_data_spec(const std::string& text);

}  // namespace saddlescope::trainer
