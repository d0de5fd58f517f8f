// Internal: the pieces every exact evaluation shares (evaluation.cpp defines them), so that sums, dot
// products, matmul and conv2d elements and the losses fill an Evaluation in one way.
#pragma once

#include <cstdint>

#include "saddlescope/base/status.h"
#include "saddlescope/reference/evaluation.h"

namespace saddlescope::reference::internal {

template <class T>
constexpr Format format_of() {
  return sizeof(T) == 4 ? Format::kFloat32 : Format::kFloat64;
}

// "<what>: <name> has negative length -1" / "<what>: <name> is null but has length 3", or Ok.
Status check_span(const char* what, const char* name, const void* p, int64_t n);

// The exact sum of a[i·sa]·b[i·sb] (b == nullptr: of a[i·sa]) for i < n, as an Evaluation of `op` with
// n = rounding_steps = n; NaN/Inf inputs give the IEEE outcome (nonfinite.h). REQUIRES: valid spans.
template <class T>
Evaluation reduce(Op op, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n);

// Sets kind, f32, f64 and abs_sum for a non-finite result.
void set_nonfinite(Evaluation& e, Kind kind);

// Sets f32 and f64 from exact / divisor, each with one rounding.
void set_rounded(Evaluation& e);

// Sets a value that needs no rounding search: exact = v and its roundings.
inline void set_value(Evaluation& e, double v) {
  e.exact = to_dyadic(v);
  e.f32 = round_to_float(e.exact);
  e.f64 = v;
}

}  // namespace saddlescope::reference::internal
