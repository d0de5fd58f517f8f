// Internal: the IEEE 754 (extended-real) outcome of a sum or dot product with NaN/Inf inputs, shared by
// the fast path and nothing else (the oracle lets MPFR decide, so the tests compare two derivations).
#pragma once

#include <cmath>
#include <cstdint>

#include "saddlescope/reference/evaluation.h"

namespace saddlescope::reference::internal {

// Combines terms t_i = a_i (b == nullptr) or a_i·b_i as IEEE arithmetic would: NaN if any term is NaN
// (NaN input, or inf·0) or if +inf and -inf terms meet, otherwise the sign of the infinite terms.
// Sets *first to the smallest index with a non-finite input. REQUIRES: some input is non-finite.
template <class T>
Kind nonfinite_kind(const T* a, const T* b, int64_t n, int64_t* first) {
  bool nan = false, plus = false, minus = false;
  *first = -1;
  for (int64_t i = 0; i < n; ++i) {
    const T x = a[i], y = b ? b[i] : T(1);
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
