// The training data as written in configs, parsed once for the config's check and the loader
// (dataset.h): mnist | moving-mnist | teacher | npy:X.npy[,Y.npy]. Torch-free.
#pragma once

#include <string>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct DataSpec {
  enum class Kind { kMnist, kMovingMnist, kTeacher, kNpy };
  Kind kind = Kind::kMnist;
  std::string x;  // npy: the inputs' file, never empty
  std::string y;  // npy: the labels' or targets' file, "" when none

  // Whether the data are input–target pairs (teacher, or npy with a Y file), as model linear needs.
  bool pairs() const { return kind == Kind::kTeacher || (kind == Kind::kNpy && !y.empty()); }
  // The spec as written in configs: "mnist", "npy:x.npy,y.npy". parse_data_spec(s.name()) gives s back.
  std::string name() const;
};

// Parses `text`; on failure the message says what was expected, worded to follow the key's name:
//   "must be mnist, npy:X.npy[,Y.npy], moving-mnist or teacher, got 'npy:'"
Result<DataSpec> parse_data_spec(const std::string& text);

}  // namespace saddlescope::trainer
