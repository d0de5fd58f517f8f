// fused.h's CUDA kernels: elements.h, one thread per element in a grid-stride loop.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "elements.h"

namespace saddlescope::kernels {
namespace {

constexpr int kThreads = 256;

// Enough blocks for one element per thread, up to a grid that the stride loop covers for any size.
unsigned blocks(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

void check_launch(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "saddlescope: CUDA kernel %s failed to launch: %s\n", what, cudaGetErrorString(e));
  std::abort();
}

#define SADDLESCOPE_FOR_EACH(k, n) \
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < (n); k += int64_t{blockDim.x} * gridDim.x)

// Every element k < n of an op through `at` (elements.h).
template <typename Args, void (*at)(const Args&, int64_t)>
__global__ void each_kernel(Args a, int64_t n) {
  SADDLESCOPE_FOR_EACH(k, n) at(a, k);
}

template <typename T>
__global__ void adam_kernel(AdamArgs<T> a) {
  const auto s = math::adam_scalars<T>(*a.lr, *a.beta1_power, *a.beta2_power, a.beta1, a.beta2, a.eps);
  SADDLESCOPE_FOR_EACH(k, a.n) math::adam(a.p[k], a.g[k], a.m[k], a.v[k], s);
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

template <typename Args, void (*at)(const Args&, int64_t)>
void enqueue_each(const Args& a, void* stream, const char* what) {
  const int64_t n = elements(a);
  each_kernel<Args, at><<<blocks(n), kThreads, 0, as_stream(stream)>>>(a, n);
  check_launch(what);
}

}  // namespace

bool cuda_built() { return true; }

#define SADDLESCOPE_STRINGIFY2(x) #x
#define SADDLESCOPE_STRINGIFY(x) SADDLESCOPE_STRINGIFY2(x)
// __CUDA_ARCH_LIST__: the architectures this file was compiled for, as nvcc was told (LibTorch's CMake
// passes its own -gencode flags, e.g. 90a for the GPU it found, overriding CMAKE_CUDA_ARCHITECTURES).
const char* cuda_build_info() {
  return "nvcc " SADDLESCOPE_STRINGIFY(__CUDACC_VER_MAJOR__) "." SADDLESCOPE_STRINGIFY(__CUDACC_VER_MINOR__)
         ", arch " SADDLESCOPE_STRINGIFY(__CUDA_ARCH_LIST__);
}

// Each element-wise op's launcher, for float and double: every element through name##_at (elements.h).
#define SADDLESCOPE_EACH_CUDA(name, Args)                        \
  template <typename T>                                          \
  void name##_cuda(const Args<T>& a, void* stream) {             \
    enqueue_each<Args<T>, name##_at<T>>(a, stream, #name);       \
  }                                                              \
  template void name##_cuda<float>(const Args<float>&, void*);   \
  template void name##_cuda<double>(const Args<double>&, void*);
SADDLESCOPE_EACH_CUDA(cell_forward, CellArgs)
SADDLESCOPE_EACH_CUDA(cell_backward, CellArgs)
SADDLESCOPE_EACH_CUDA(error_forward, ErrorArgs)
SADDLESCOPE_EACH_CUDA(error_backward, ErrorArgs)
SADDLESCOPE_EACH_CUDA(pool_forward, PoolArgs)
SADDLESCOPE_EACH_CUDA(pool_backward, PoolArgs)

template <typename T>
void adam_cuda(const AdamArgs<T>& a, void* stream) {
  adam_kernel<T><<<blocks(a.n), kThreads, 0, as_stream(stream)>>>(a);
  check_launch("adam");
}

template void adam_cuda<float>(const AdamArgs<float>&, void*);
template void adam_cuda<double>(const AdamArgs<double>&, void*);

}  // namespace saddlescope::kernels
