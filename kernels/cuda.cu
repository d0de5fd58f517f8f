// fused.h's CUDA kernels: fused_math.h per element, one thread per element in a grid-stride loop.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "saddlescope/kernels/fused.h"
#include "saddlescope/kernels/fused_math.h"

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

template <typename T>
__global__ void cell_forward_kernel(CellArgs<T> a) {
  const int64_t up = a.units_pixels;
  SADDLESCOPE_FOR_EACH(k, a.batch * up) {
    const int64_t b = k / up, j = k % up, at = 4 * b * up + j;
    auto r = math::cell_forward(a.pre[at], a.pre[at + up], a.pre[at + 2 * up], a.pre[at + 3 * up], a.c_prev[k]);
    a.act[at] = r.i;
    a.act[at + up] = r.f;
    a.act[at + 2 * up] = r.o;
    a.act[at + 3 * up] = r.g;
    a.c[k] = r.c;
    a.tc[k] = r.tc;
    a.h[k] = r.h;
  }
}

template <typename T>
__global__ void cell_backward_kernel(CellArgs<T> a) {
  const int64_t up = a.units_pixels;
  SADDLESCOPE_FOR_EACH(k, a.batch * up) {
    const int64_t b = k / up, j = k % up, at = 4 * b * up + j;
    auto r = math::cell_backward(a.act[at], a.act[at + up], a.act[at + 2 * up], a.act[at + 3 * up], a.c_prev[k],
                                 a.tc[k], a.dh ? a.dh[k] : T(0), a.dc ? a.dc[k] : T(0));
    a.dpre[at] = r.dzi;
    a.dpre[at + up] = r.dzf;
    a.dpre[at + 2 * up] = r.dzo;
    a.dpre[at + 3 * up] = r.dzg;
    if (a.dc_prev) a.dc_prev[k] = r.dc_prev;
  }
}

template <typename T>
__global__ void error_forward_kernel(ErrorArgs<T> a) {
  const int64_t up = a.units_pixels;
  SADDLESCOPE_FOR_EACH(k, a.batch * up) {
    const int64_t at = 2 * (k / up) * up + k % up;
    auto r = math::error_forward(a.y[k], a.a[(k / up) * a.a_batch_stride + k % up], a.pixel_max);
    a.ahat[k] = r.ahat;
    a.e[at] = r.up;
    a.e[at + up] = r.down;
  }
}

template <typename T>
__global__ void error_backward_kernel(ErrorArgs<T> a) {
  const int64_t up = a.units_pixels;
  SADDLESCOPE_FOR_EACH(k, a.batch * up) {
    const int64_t at = 2 * (k / up) * up + k % up;
    auto r = math::error_backward(a.y[k], a.a[(k / up) * a.a_batch_stride + k % up], a.pixel_max, a.de[at], a.de[at + up], a.dahat ? a.dahat[k] : T(0));
    a.dy[k] = r.dy;
    if (a.da) a.da[k] = r.da;
  }
}

template <typename T>
__global__ void adam_kernel(AdamArgs<T> a) {
  const auto s = math::adam_scalars<T>(*a.lr, *a.beta1_power, *a.beta2_power, a.beta1, a.beta2, a.eps);
  SADDLESCOPE_FOR_EACH(k, a.n) math::adam(a.p[k], a.g[k], a.m[k], a.v[k], s);
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

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

template <typename T>
void cell_forward_cuda(const CellArgs<T>& a, void* stream) {
  cell_forward_kernel<T><<<blocks(a.batch * a.units_pixels), kThreads, 0, as_stream(stream)>>>(a);
  check_launch("cell_forward");
}
template <typename T>
void cell_backward_cuda(const CellArgs<T>& a, void* stream) {
  cell_backward_kernel<T><<<blocks(a.batch * a.units_pixels), kThreads, 0, as_stream(stream)>>>(a);
  check_launch("cell_backward");
}
template <typename T>
void error_forward_cuda(const ErrorArgs<T>& a, void* stream) {
  error_forward_kernel<T><<<blocks(a.batch * a.units_pixels), kThreads, 0, as_stream(stream)>>>(a);
  check_launch("error_forward");
}
template <typename T>
void error_backward_cuda(const ErrorArgs<T>& a, void* stream) {
  error_backward_kernel<T><<<blocks(a.batch * a.units_pixels), kThreads, 0, as_stream(stream)>>>(a);
  check_launch("error_backward");
}
template <typename T>
void adam_cuda(const AdamArgs<T>& a, void* stream) {
  adam_kernel<T><<<blocks(a.n), kThreads, 0, as_stream(stream)>>>(a);
  check_launch("adam");
}

#define SADDLESCOPE_KERNELS_CUDA(T)                                      \
  template void cell_forward_cuda<T>(const CellArgs<T>&, void*);         \
  template void cell_backward_cuda<T>(const CellArgs<T>&, void*);        \
  template void error_forward_cuda<T>(const ErrorArgs<T>&, void*);       \
  template void error_backward_cuda<T>(const ErrorArgs<T>&, void*);      \
  template void adam_cuda<T>(const AdamArgs<T>&, void*);
SADDLESCOPE_KERNELS_CUDA(float)
SADDLESCOPE_KERNELS_CUDA(double)

}  // namespace saddlescope::kernels
