// digest.h's CUDA kernel: one warp per 256-byte block, each lane a pair of words, the block's NH summed
// by shuffles, each warp's blocks added into its own total and the totals into *sum by atomics (a sum
// mod 2⁶⁴: any order gives the CPU loop's bits).
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "saddlescope/kernels/digest.h"
#include "saddlescope/kernels/digest_math.h"

namespace saddlescope::kernels {
namespace {

using namespace digest_math;

constexpr int kThreads = 256;

// Word i of the n bytes, zero past their end (the last word may be partial).
__device__ __forceinline__ uint32_t word(const unsigned char* p, size_t n, size_t i) {
  const size_t at = 4 * i;
  if (at + 4 <= n) return reinterpret_cast<const uint32_t*>(p)[i];
  uint32_t w = 0;
  for (size_t k = at; k < n; ++k) w |= static_cast<uint32_t>(p[k]) << (8 * (k - at));
  return w;
}

__global__ void digest_kernel(const unsigned char* p, size_t n, unsigned long long* sum) {
  const int lane = threadIdx.x & 31;
  const uint32_t ka = key(2 * lane), kb = key(2 * lane + 1);
  const size_t warps = static_cast<size_t>(gridDim.x) * (kThreads / 32);
  const size_t blocks = (n + 4 * kBlockWords - 1) / (4 * kBlockWords);
  uint64_t total = 0;
  for (size_t b = (static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x) / 32; b < blocks; b += warps) {
    const size_t i = b * kBlockWords + 2 * lane;
    uint64_t s = pair(word(p, n, i), word(p, n, i + 1), ka, kb);
    for (int d = 16; d > 0; d /= 2) s += __shfl_down_sync(0xffffffffu, s, d);
    if (lane == 0) total += block(s, b);
  }
  if (lane == 0 && total != 0) atomicAdd(sum, static_cast<unsigned long long>(total));
}

}  // namespace

void digest_sum_cuda(const void* bytes, size_t n, uint64_t* sum, void* stream) {
  if (n == 0) return;
  const size_t blocks = (n + 4 * kBlockWords - 1) / (4 * kBlockWords);
  const size_t grid = (blocks + kThreads / 32 - 1) / (kThreads / 32);
  digest_kernel<<<static_cast<unsigned>(grid < 1024 ? grid : 1024), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const unsigned char*>(bytes), n, reinterpret_cast<unsigned long long*>(sum));
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    std::fprintf(stderr, "saddlescope: CUDA kernel digest failed to launch: %s\n", cudaGetErrorString(e));
    std::abort();
  }
}

}  // namespace saddlescope::kernels
