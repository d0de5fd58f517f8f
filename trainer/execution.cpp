#include "saddlescope/trainer/execution.h"

#include <dlfcn.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cstdlib>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/kernels/fused.h"
#include "saddlescope/trainer/config.h"

namespace saddlescope::trainer {
namespace {

Status check_device(const Device& device) {
  if (!device.is_cuda()) return Status::Ok();
  if (!torch::cuda::is_available())
    return Status::Error("device " + device.name() + ": " +
                         (at::hasCUDA() ? "no CUDA device is visible"
                                        : "this saddlescope was built against a LibTorch without CUDA"));
  int count = static_cast<int>(torch::cuda::device_count());
  if (device.index >= count)
    return Status::Error("device " + device.name() + ": only " + std::to_string(count) + " CUDA device(s)");
  return Status::Ok();
}

// Makes glibc's malloc keep freed memory for reuse instead of handing it back to the OS. A training
// step frees and reallocates the same large CPU buffers (activations, gradients, oneDNN's reordered
// weights) thousands of times; by default blocks over the mmap threshold are unmapped on free and the
// heap top is trimmed, so the next allocation page-faults fresh zeroed pages in again: 6-7% of a
// one-thread PredNet step. The price is that the process keeps its peak footprint. Returns whether the
// settings took (false off glibc, where nothing is changed).
bool keep_freed_memory() {
#ifdef __GLIBC__
  constexpr int kMmapThreshold = 256 << 20, kTrimThreshold = 1 << 30;  // bytes
  return mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
#else
  return false;
#endif
}

}  // namespace

int cuda_device_count() {
  return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

Result<nlohmann::json> apply_execution(const ExecutionConfig& e) {
  SADDLESCOPE_RETURN_IF_ERROR(check_device(e.device));
  if (e.kernels == "fused" && e.device.is_cuda() && !kernels::cuda_built())
    return Status::Error("kernels fused on device " + e.device.name() +
                         ": this saddlescope was built without the CUDA Toolkit (nvcc), so its fused kernels are "
                         "CPU loops only; use kernels = libtorch or rebuild with nvcc");
  at::Context& ctx = at::globalContext();
  if (e.cublas_workspace != "default") setenv("CUBLAS_WORKSPACE_CONFIG", e.cublas_workspace.c_str(), 1);
  ctx.setUserEnabledCuDNN(e.cudnn);
  ctx.setBenchmarkCuDNN(e.cudnn_benchmark);
  ctx.setDeterministicCuDNN(e.cudnn_deterministic);
  ctx.setAllowTF32CuBLAS(e.tf32_matmul);
  ctx.setAllowTF32CuDNN(e.tf32_cudnn);
  ctx.setDeterministicAlgorithms(e.deterministic != "off", e.deterministic == "warn");
  set_threads(static_cast<int>(e.threads));
  const bool keeps_freed_memory = keep_freed_memory();

  const char* workspace = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  return nlohmann::json{
      {"intra_op_threads", at::get_num_threads()},
      {"blas_threads", blas_threads()},
      {"cudnn_enabled", ctx.userEnabledCuDNN()},
      {"cudnn_benchmark", ctx.benchmarkCuDNN()},
      {"cudnn_deterministic", ctx.deterministicCuDNN()},
      {"deterministic_algorithms", ctx.deterministicAlgorithms()},
      {"deterministic_warn_only", ctx.deterministicAlgorithmsWarnOnly()},
      {"tf32_matmul", ctx.allowTF32CuBLAS()},
      {"tf32_cudnn", ctx.allowTF32CuDNN()},
      {"cublas_workspace_config", workspace ? nlohmann::json(workspace) : nlohmann::json(nullptr)},
      {"malloc_keeps_freed_memory", keeps_freed_memory},
      {"kernels", e.kernels},
  };
}

void set_threads(int n) {
  at::set_num_threads(n);
  // LibTorch does not pass its thread count to OpenBLAS, whose pthread build would otherwise use
  // every core and so change the reduction order behind the config's back.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(n);
}

std::string describe_step_failure(const std::exception& e) {
  std::string what = e.what();
  what = what.substr(0, what.find('\n'));
  // LibTorch: "<op> does not have a deterministic implementation, but you set ..."
  static const std::string kNoDeterministic = " does not have a deterministic implementation";
  size_t at = what.find(kNoDeterministic);
  if (at != std::string::npos)
    return "deterministic = strict: " + what.substr(0, at) +
           " has no deterministic implementation on this device (deterministic = warn runs it with a "
           "warning)";
  return what;
}

int blas_threads() {
  using GetThreads = int (*)();
  auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : -1;
}

}  // namespace saddlescope::trainer
