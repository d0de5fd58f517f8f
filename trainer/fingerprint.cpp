#include "saddlescope/trainer/fingerprint.h"

#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <torch/torch.h>
#include <torch/version.h>

#include "saddlescope/base/version.h"
#include "saddlescope/kernels/fused.h"
#include "saddlescope/trainer/execution.h"

namespace saddlescope::trainer {
namespace {

nlohmann::json cpu_info() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown", flags;
  while (std::getline(in, line)) {
    auto value = [&] { auto c = line.find(':'); return c == std::string::npos ? "" : line.substr(c + 2); };
    if (line.rfind("model name", 0) == 0 && model == "unknown") model = value();
    if (line.rfind("flags", 0) == 0 && flags.empty()) flags = value();
  }
  // The instruction-set extensions that select different kernels (and so different rounding).
  static const std::set<std::string> kRelevant = {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f",
                                                   "avx512dq", "avx512bw", "avx512vl", "avx512_vnni",
                                                   "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"};
  std::vector<std::string> present;
  std::istringstream ss(flags);
  for (std::string f; ss >> f;)
    if (kRelevant.count(f)) present.push_back(f);
  return {{"model", model}, {"flags", present}, {"cores", std::thread::hardware_concurrency()}};
}

// The BLAS as actually loaded: the shared objects with "blas" or "mkl" in their path in this process.
nlohmann::json blas_info() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> libs;
  for (std::string line; std::getline(maps, line);) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    std::string name = path.substr(path.rfind('/') + 1);
    bool cpu_blas = name.find("blas") != std::string::npos || name.find("mkl") != std::string::npos;
    if (cpu_blas && name.find("cublas") == std::string::npos) libs.insert(path);  // cuBLAS is the GPU's
  }
  nlohmann::json j = {{"libraries", std::vector<std::string>(libs.begin(), libs.end())}};
  // A BLAS linked statically into libtorch (MKL in PyTorch's wheels) is not a separate mapping; the
  // build configuration names it.
  std::string config = at::show_config();
  auto at = config.find("BLAS_INFO=");
  j["libtorch_blas_info"] = at == std::string::npos ? "" : config.substr(at + 10, config.find_first_of(", \n", at) - at - 10);
  using GetString = char* (*)();
  if (auto config = reinterpret_cast<GetString>(dlsym(RTLD_DEFAULT, "openblas_get_config")))
    j["openblas_config"] = config();
  if (auto core = reinterpret_cast<GetString>(dlsym(RTLD_DEFAULT, "openblas_get_corename")))
    j["openblas_core"] = core();
  std::string info = j["libtorch_blas_info"];
  j["name"] = j.contains("openblas_config") ? "OpenBLAS"
              : !libs.empty()                ? "other"
              : info.empty()                 ? "none found"
                                             : info + " (linked into libtorch)";
  return j;
}

nlohmann::json env_vars() {
  nlohmann::json j = nlohmann::json::object();
  for (const char* k : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
                        "OPENBLAS_L2_SIZE", "CUBLAS_WORKSPACE_CONFIG", "CUDA_VISIBLE_DEVICES",
                        "CUDA_LAUNCH_BLOCKING", "NVIDIA_TF32_OVERRIDE", "TORCH_CUDNN_V8_API_ENABLED",
                        "PYTORCH_CUDA_ALLOC_CONF", "SADDLESCOPE_DATA_DIR"}) {
    const char* v = std::getenv(k);
    j[k] = v ? nlohmann::json(v) : nlohmann::json(nullptr);
  }
  return j;
}

}  // namespace

nlohmann::json environment_fingerprint() {
  // Touch BLAS once so that a lazily loaded library shows up in the process maps.
  (void)torch::mm(torch::ones({2, 2}), torch::ones({2, 2}));
  utsname u{};
  uname(&u);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return {
      {"cpu", cpu_info()},
      {"threads", {{"intra_op", at::get_num_threads()}, {"inter_op", at::get_num_interop_threads()},
                   {"blas", blas_threads()}}},
      {"blas", blas_info()},
      {"libtorch", {{"version", TORCH_VERSION}, {"cuda_build", at::hasCUDA()}}},
      {"gpu", gpu_fingerprint()},
      // What `kernels = fused` runs on CUDA: this build's own kernels (empty: CPU loops only).
      {"fused_kernels", {{"cuda", kernels::cuda_built()}, {"build", kernels::cuda_build_info()}}},
      {"compiler", std::string("gcc ") + __VERSION__},
      {"toolkit", {{"version", toolkit_version()}, {"commit", toolkit_commit()}}},
      {"os", std::string(u.sysname) + " " + u.release + " " + u.machine},
      {"host", host},
      {"env", env_vars()},
  };
}

}  // namespace saddlescope::trainer
