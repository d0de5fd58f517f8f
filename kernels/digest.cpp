// digest.h on the CPU.
#include "saddlescope/kernels/digest.h"

#include <cstring>

#include "saddlescope/kernels/digest_math.h"

namespace saddlescope::kernels {
namespace {

using namespace digest_math;

struct Keys {
  uint32_t k[kBlockWords];
  Keys() {
    for (int j = 0; j < kBlockWords; ++j) k[j] = key(j);
  }
};

// NH of one block (a loop the compiler vectorises: 32-bit adds, 32×32→64-bit products).
uint64_t nh(const uint32_t* w, const uint32_t* k) {
  uint64_t s = 0;
  for (int j = 0; j < kBlockWords; j += 2) s += pair(w[j], w[j + 1], k[j], k[j + 1]);
  return s;
}

}  // namespace

uint64_t digest_sum(const void* bytes, size_t n) {
  static const Keys keys;
  const auto* p = static_cast<const unsigned char*>(bytes);
  constexpr size_t kBytes = kBlockWords * 4;
  uint32_t w[kBlockWords];
  uint64_t sum = 0, b = 0;
  size_t i = 0;
  for (; i + kBytes <= n; i += kBytes, ++b) {
    std::memcpy(w, p + i, kBytes);  // words as little-endian (x86-64, CUDA devices)
    sum += block(nh(w, keys.k), b);
  }
  if (i < n) {
    std::memset(w, 0, kBytes);
    std::memcpy(w, p + i, n - i);
    sum += block(nh(w, keys.k), b);
  }
  return sum;
}

uint64_t digest_finish(uint64_t sum, size_t n) { return fmix64(sum ^ fmix64(static_cast<uint64_t>(n) + kGolden)); }

}  // namespace saddlescope::kernels
