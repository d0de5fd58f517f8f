// CPU-only builds: there is no GPU to describe.
#include <nlohmann/json.hpp>

#include "saddlescope/trainer/fingerprint.h"

namespace saddlescope::trainer {

nlohmann::json gpu_fingerprint() {
  return {{"available", false}, {"reason", "this build's LibTorch has no CUDA"}};
}

}  // namespace saddlescope::trainer
