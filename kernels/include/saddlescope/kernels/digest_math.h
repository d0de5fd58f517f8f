// digest.h's arithmetic, written once for the CPU loop (digest.cpp) and the CUDA kernel (digest.cu).
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define SADDLESCOPE_DIGEST_HD __host__ __device__ __forceinline__
#else
#define SADDLESCOPE_DIGEST_HD inline
#endif

namespace saddlescope::kernels::digest_math {

constexpr int kBlockWords = 64;  // 256 bytes: one warp's 32 lanes read a pair of words each
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// MurmurHash3's 64-bit finaliser: a bijection whose every output bit depends on every input bit.
SADDLESCOPE_DIGEST_HD uint64_t fmix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}
// NH's key for word j of a block.
SADDLESCOPE_DIGEST_HD uint32_t key(int j) { return static_cast<uint32_t>(fmix64((j + 1) * kGolden)); }
// One pair's NH term.
SADDLESCOPE_DIGEST_HD uint64_t pair(uint32_t a, uint32_t b, uint32_t ka, uint32_t kb) {
  return static_cast<uint64_t>(static_cast<uint32_t>(a + ka)) * static_cast<uint32_t>(b + kb);
}
// Block `b`'s contribution to the sum, from its NH value.
SADDLESCOPE_DIGEST_HD uint64_t block(uint64_t nh, uint64_t b) { return fmix64(nh ^ ((b + 1) * kGolden)); }

}  // namespace saddlescope::kernels::digest_math
