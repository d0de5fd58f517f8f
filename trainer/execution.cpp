#include "saddlescope/trainer/execution.h"

#include <dlfcn.h>

#include <torch/torch.h>

#include "saddlescope/trainer/config.h"

namespace saddlescope::trainer {

Status apply_execution(const RunConfig& cfg) {
  if (cfg.device != "cpu") {
    if (!torch::cuda::is_available())
      return Status::Error("device " + cfg.device + ": " +
                           (at::hasCUDA() ? "no CUDA device is visible"
                                          : "this saddlescope was built against a LibTorch without CUDA"));
    if (cfg.device.size() > 5) {
      int index = std::stoi(cfg.device.substr(5));
      int count = static_cast<int>(torch::cuda::device_count());
      if (index >= count)
        return Status::Error("device " + cfg.device + ": only " + std::to_string(count) + " CUDA device(s)");
    }
  }
  set_threads(static_cast<int>(cfg.threads));
  return Status::Ok();
}

void set_threads(int n) {
  at::set_num_threads(n);
  // LibTorch does not pass its thread count to OpenBLAS, whose pthread build would otherwise use
  // every core and so change the reduction order behind the config's back.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(n);
}

int blas_threads() {
  using GetThreads = int (*)();
  auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : -1;
}

}  // namespace saddlescope::trainer
