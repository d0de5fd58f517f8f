// Applying a run's execution settings to the process before any work: device checks and threads.
#pragma once

#include <string>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct RunConfig;

// Checks that cfg.device exists in this build and machine ("cuda" on a CPU-only LibTorch is an error)
// and sets intra-op threads and, when the BLAS is OpenBLAS, its threads to cfg.threads.
Status apply_execution(const RunConfig& cfg);

// Sets LibTorch's intra-op threads and, when the BLAS is OpenBLAS, its threads to `n`.
void set_threads(int n);

// OpenBLAS's thread count, or -1 when the process does not use OpenBLAS.
int blas_threads();

}  // namespace saddlescope::trainer
