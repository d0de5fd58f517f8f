#include "saddlescope/reference/evaluation.h"

#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <limits>

#include "nonfinite.h"
#include "saddlescope/reference/superaccumulator.h"

namespace saddlescope::reference {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

template <class T>
constexpr Format format_of() {
  return sizeof(T) == 4 ? Format::kFloat32 : Format::kFloat64;
}

Status check_span(const char* what, const char* name, const void* p, int64_t n) {
  if (n < 0) return Status::Error(fmt::format("{}: {} has negative length {}", what, name, n));
  if (p == nullptr && n > 0) {
    return Status::Error(fmt::format("{}: {} is null but has length {}", what, name, n));
  }
  return Status::Ok();
}

void set_nonfinite(Evaluation& e, Kind kind) {
  e.kind = kind;
  const double v = kind == Kind::kNaN ? kNaN : kind == Kind::kPlusInf ? kInf : -kInf;
  e.f64 = v;
  e.f32 = static_cast<float>(v);
  e.abs_sum = kind == Kind::kNaN ? kNaN : kInf;
}

void set_finite(Evaluation& e, const SplitAccumulator& terms) {
  e.exact = terms.sum();
  e.f32 = round_to_float(e.exact);
  e.f64 = round_to_double(e.exact);
  e.abs_sum = round_to_double(terms.magnitude_sum());
}

template <class T>
Result<Evaluation> sum_impl(const T* a, int64_t n) {
  SADDLESCOPE_RETURN_IF_ERROR(check_span("sum", "input", a, n));
  Evaluation e;
  e.op = Op::kSum;
  e.input_format = format_of<T>();
  e.n = n;
  SplitAccumulator terms;
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    terms.add(a[i]);
    finite &= std::isfinite(a[i]);
  }
  if (finite) {
    set_finite(e, terms);
  } else {
    set_nonfinite(e, internal::nonfinite_kind<T>(a, nullptr, n, &e.first_nonfinite));
  }
  return e;
}

template <class T>
Result<Evaluation> dot_impl(const T* a, int64_t na, const T* b, int64_t nb) {
  SADDLESCOPE_RETURN_IF_ERROR(check_span("dot", "a", a, na));
  SADDLESCOPE_RETURN_IF_ERROR(check_span("dot", "b", b, nb));
  if (na != nb) {
    return Status::Error(fmt::format("dot: lengths differ: a has {} elements, b has {}", na, nb));
  }
  Evaluation e;
  e.op = Op::kDot;
  e.input_format = format_of<T>();
  e.n = na;
  SplitAccumulator terms;
  bool finite = true;
  for (int64_t i = 0; i < na; ++i) {
    terms.add_product(a[i], b[i]);
    finite &= std::isfinite(a[i]) & std::isfinite(b[i]);
  }
  if (finite) {
    set_finite(e, terms);
  } else {
    set_nonfinite(e, internal::nonfinite_kind<T>(a, b, na, &e.first_nonfinite));
  }
  return e;
}

// Rounds x · 2^shift to the nearest double (exact scaling, one rounding).
double scaled(Dyadic x, int shift) {
  if (x.is_zero()) return 0.0;
  x.exponent += shift;
  return round_to_double(x);
}

template <class T>
ErrorReport assess_impl(const Evaluation& e, T observed) {
  ErrorReport r;
  r.format = format_of<T>();
  r.observed = observed;
  r.bound = e.bound(r.format);
  if (e.kind != Kind::kFinite || !std::isfinite(observed)) {
    r.error = r.ulp_error = r.rel_error = r.bound_ratio = kNaN;
    const T rounded = r.format == Format::kFloat32 ? static_cast<T>(e.f32) : static_cast<T>(e.f64);
    if (e.kind != Kind::kFinite) {
      r.outcome = Outcome::kNonFiniteInput;
      r.matches = std::isnan(rounded) ? std::isnan(observed) : observed == rounded;
    } else {
      r.outcome = Outcome::kNonFiniteObserved;
      r.matches = observed == rounded;  // NaN never matches; inf only where exact overflows
    }
    return r;
  }
  Superaccumulator difference;
  difference.add(to_dyadic(observed));
  difference.add(e.exact, /*negate=*/true);
  const Dyadic d = difference.value();
  r.error = round_to_double(d);
  if (e.exact.is_zero()) {
    const int ulp = ulp_exponent(INT_MIN / 2, r.format);  // the subnormal ULP
    r.ulp_error = scaled(d, -ulp);
    r.rel_error = d.is_zero() ? 0.0 : std::copysign(kInf, r.error);
  } else {
    const int top = top_exponent(e.exact);
    r.ulp_error = scaled(d, -ulp_exponent(top, r.format));
    // Both scaled by 2^-top so neither under- nor overflows: |exact| · 2^-top is in [1, 2).
    Dyadic magnitude = e.exact;
    magnitude.negative = false;
    r.rel_error = scaled(d, -top) / scaled(magnitude, -top);
  }
  if (r.error == 0) {
    r.bound_ratio = 0;
  } else {
    r.bound_ratio = r.bound == 0 ? kInf : std::fabs(r.error) / r.bound;
  }
  r.matches = std::fabs(r.error) <= r.bound;
  return r;
}

}  // namespace

const char* op_name(Op op) { return op == Op::kSum ? "sum" : "dot"; }

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kFinite: return "finite";
    case Kind::kNaN: return "nan";
    case Kind::kPlusInf: return "inf";
    case Kind::kMinusInf: return "-inf";
  }
  return "?";
}

double Evaluation::bound(Format f) const {
  if (kind == Kind::kNaN) return kNaN;
  if (kind != Kind::kFinite) return kInf;
  if (n == 0 || abs_sum == 0) return 0;  // every term zero (or below binary64): no rounding error
  return gamma_n(n, f) * abs_sum;
}

std::string Evaluation::exact_decimal() const {
  return kind == Kind::kFinite ? to_decimal(exact) : kind_name(kind);
}

Result<Evaluation> evaluate_sum(const float* a, int64_t n) { return sum_impl(a, n); }
Result<Evaluation> evaluate_sum(const double* a, int64_t n) { return sum_impl(a, n); }
Result<Evaluation> evaluate_dot(const float* a, int64_t na, const float* b, int64_t nb) {
  return dot_impl(a, na, b, nb);
}
Result<Evaluation> evaluate_dot(const double* a, int64_t na, const double* b, int64_t nb) {
  return dot_impl(a, na, b, nb);
}

ErrorReport assess(const Evaluation& e, float observed) { return assess_impl(e, observed); }
ErrorReport assess(const Evaluation& e, double observed) { return assess_impl(e, observed); }

}  // namespace saddlescope::reference
