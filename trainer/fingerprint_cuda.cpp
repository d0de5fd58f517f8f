// CUDA builds: name, capability and memory of each visible device, driver, runtime and cuDNN versions.
#include <fstream>
#include <sstream>

#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include "saddlescope/trainer/fingerprint.h"

namespace saddlescope::trainer {
namespace {

std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// The kernel driver's version, e.g. "580.65.06": the first dotted number on the first line of the
// NVIDIA module's /proc entry ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06 ...").
std::string driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  std::getline(in, line);
  std::istringstream ss(line);
  for (std::string word; ss >> word;)
    if (word.find('.') != std::string::npos && word.find_first_not_of("0123456789.") == std::string::npos)
      return word;
  return "unknown";
}

}  // namespace

nlohmann::json gpu_fingerprint() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  if (!torch::cuda::is_available())
    return {{"available", false}, {"reason", "no CUDA device is visible"},
            {"driver_cuda", cuda_version(driver)}, {"runtime_cuda", cuda_version(runtime)}};
  nlohmann::json devices = nlohmann::json::array();
  for (int i = 0; i < static_cast<int>(torch::cuda::device_count()); ++i) {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(i);
    devices.push_back({{"index", i}, {"name", p->name},
                       {"capability", std::to_string(p->major) + "." + std::to_string(p->minor)},
                       {"memory_gib", p->totalGlobalMem / double(1ull << 30)},
                       {"multiprocessors", p->multiProcessorCount}});
  }
  return {{"available", true}, {"devices", devices}, {"driver", driver_version()},
          {"driver_cuda", cuda_version(driver)},
          {"runtime_cuda", cuda_version(runtime)},
          {"cudnn", at::detail::getCUDAHooks().versionCuDNN()}};
}

}  // namespace saddlescope::trainer
