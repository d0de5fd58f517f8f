// Applying a run's execution settings to the process before any work: device checks, threads, cuDNN,
// deterministic algorithms, TF32 and the cuBLAS workspace, all through LibTorch's global context.
#pragma once

#include <exception>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct ExecutionConfig;

// Checks that e.device exists in this build and machine ("cuda" on a CPU-only LibTorch is an error),
// then applies every setting. REQUIRES: called before the first CUDA operation of the process (the
// cuBLAS workspace is read when cuBLAS starts). Returns the settings as LibTorch reports them after
// applying, for the manifest.
Result<nlohmann::json> apply_execution(const ExecutionConfig& e);

// The CUDA devices this process can use: 0 on a machine without them or a LibTorch without CUDA.
int cuda_device_count();
// Sets LibTorch's intra-op threads and, when the BLAS is OpenBLAS, its threads to `n`.
void set_threads(int n);

// OpenBLAS's thread count, or -1 when the process does not use OpenBLAS.
int blas_threads();

// One line for an exception a training step threw: LibTorch's first line, or, when an execution
// setting is the cause, that setting — "deterministic = strict: put_ has no deterministic
// implementation on this device (deterministic = warn runs it with a warning)".
std::string describe_step_failure(const std::exception& e);

}  // namespace saddlescope::trainer
