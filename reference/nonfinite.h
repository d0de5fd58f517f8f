// Internal: the IEEE 754 (extended-real) outcome of a sum or dot product with NaN/Inf inputs, shared by
// the fast paths and nothing else (the oracle lets MPFR decide, so the tests compare two derivations).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "saddlescope/reference/evaluation.h"

namespace saddlescope::reference::internal {

// True when a[i·sa] is finite for every i < n. Tests the exponent bits (all ones for NaN/Inf) in a plain
// loop so that the compiler vectorises the contiguous case: it runs before every fast reduction.
template <class T>
bool all_finite(const T* a, int64_t sa, int64_t n) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr Bits kExponent = static_cast<Bits>(sizeof(T) == 4 ? 0x7f800000u : 0x7ff0000000000000u);
  auto scan = [kExponent](const T* x, int64_t sx, int64_t count) {
    Bits nonfinite = 0;
    for (int64_t i = 0; i < count; ++i) {
      Bits bits;
      std::memcpy(&bits, &x[i * sx], sizeof bits);
      nonfinite |= (bits & kExponent) == kExponent;
    }
    return nonfinite == 0;
  };
  return sa == 1 ? scan(a, 1, n) : scan(a, sa, n);
}

// Combines terms t_i = a[i·sa] (b == nullptr) or a[i·sa]·b[i·sb] as IEEE arithmetic would: NaN if any term
// is NaN (NaN input, or inf·0) or if +inf and -inf terms meet, otherwise the sign of the infinite terms.
// Sets *first to the smallest i with a non-finite input. REQUIRES: some input is non-finite.
template <class T>
Kind nonfinite_kind(const T* a, int64_t sa, const T* b, int64_t sb, int64_t n, int64_t* first) {
  bool nan = false, plus = false, minus = false;
  *first = -1;
  for (int64_t i = 0; i < n; ++i) {
    const T x = a[i * sa], y = b ? b[i * sb] : T(1);
    if (std::isfinite(x) && std::isfinite(y)) continue;
    if (*first < 0) *first = i;
    if (std::isnan(x) || std::isnan(y) || x == 0 || y == 0) {
      nan = true;
    } else if (std::signbit(x) != std::signbit(y)) {
      minus = true;
    } else {
      plus = true;
    }
  }
  if (nan || (plus && minus)) return Kind::kNaN;
  return plus ? Kind::kPlusInf : Kind::kMinusInf;
}

}  // namespace saddlescope::reference::internal
