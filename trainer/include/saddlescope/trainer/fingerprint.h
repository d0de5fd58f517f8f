// The environment fingerprint: everything about the machine and the build that can change a result's
// bits. Written into every manifest and printed by `saddlescope env`.
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace saddlescope::trainer {

// cpu (model, flags that matter for kernels, cores), threads (intra-op, inter-op, BLAS), blas (the
// library actually mapped into this process, its build config and core), libtorch (version, CUDA
// build), gpu (null on a CPU-only build or machine), compiler, toolkit (version, commit), os, and the
// environment variables that steer numerics (null when unset).
nlohmann::json environment_fingerprint();

// The CUDA part: device name, capability, memory, driver, runtime, cuDNN; {"available": false, ...}
// otherwise. Lives in fingerprint_cuda.cpp or fingerprint_nocuda.cpp, chosen by the build.
nlohmann::json gpu_fingerprint();

}  // namespace saddlescope::trainer
