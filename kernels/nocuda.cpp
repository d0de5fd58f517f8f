// fused.h's and digest.h's CUDA launchers in a build without the CUDA Toolkit: there is nothing to launch.
#include "saddlescope/kernels/digest.h"
#include "saddlescope/kernels/fused.h"

#include "saddlescope/base/status.h"

namespace saddlescope::kernels {

bool cuda_built() { return false; }
const char* cuda_build_info() { return ""; }

#define SADDLESCOPE_NO_CUDA(name, Args)                         \
  template <typename T>                                         \
  void name(const Args<T>&, void*) {                            \
    SADDLESCOPE_CHECK(!"fused CUDA kernels are not in this build"); \
  }                                                             \
  template void name<float>(const Args<float>&, void*);         \
  template void name<double>(const Args<double>&, void*);
SADDLESCOPE_NO_CUDA(cell_forward_cuda, CellArgs)
SADDLESCOPE_NO_CUDA(cell_backward_cuda, CellArgs)
SADDLESCOPE_NO_CUDA(error_forward_cuda, ErrorArgs)
SADDLESCOPE_NO_CUDA(error_backward_cuda, ErrorArgs)
SADDLESCOPE_NO_CUDA(pool_forward_cuda, PoolArgs)
SADDLESCOPE_NO_CUDA(pool_backward_cuda, PoolArgs)
SADDLESCOPE_NO_CUDA(adam_cuda, AdamArgs)

void digest_sum_cuda(const void*, size_t, uint64_t*, void*) { SADDLESCOPE_CHECK(!"CUDA kernels are not in this build"); }

}  // namespace saddlescope::kernels
