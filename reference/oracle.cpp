#include "saddlescope/reference/oracle.h"

#include <fmt/format.h>
#include <mpfr.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "mpfr_dyadic.h"
#include "reduction.h"

namespace saddlescope::reference {
namespace {

template <class T>
constexpr int bits_of() {
  return sizeof(T) == 4 ? 24 : 53;
}

// Enough bits that every partial sum is exact: all terms are integer multiples of 2^bottom and their sum
// stays below n · 2^top. A p-bit float with frexp exponent e is a multiple of 2^(e-p) below 2^e.
template <class T>
mpfr_prec_t exact_precision(const T* a, const T* b, int64_t n) {
  const int p = bits_of<T>();
  int top = INT_MIN, bottom = INT_MAX;
  for (int64_t i = 0; i < n; ++i) {
    const T x = a[i], y = b ? b[i] : T(1);
    if (x == 0 || y == 0 || !std::isfinite(x) || !std::isfinite(y)) continue;
    int ex = 0, ey = 0;
    std::frexp(x, &ex);
    std::frexp(y, &ey);
    const int terms_bits = b ? 2 * p : p;
    top = std::max(top, ex + ey);
    bottom = std::min(bottom, ex + ey - terms_bits);
  }
  if (top == INT_MIN) return 2 * p;
  int carry_bits = 1;
  while ((int64_t{1} << carry_bits) <= n) ++carry_bits;
  return std::max<mpfr_prec_t>(2 * p, top - bottom + carry_bits + 1);
}

// Sum (b == nullptr) or dot product, one MPFR operation per step, exactly as a textbook loop would.
template <class T>
Result<Evaluation> oracle_impl(const T* a, const T* b, int64_t n, const OracleOptions& options) {
  if (options.precision_bits < 0 || options.precision_bits > MPFR_PREC_MAX) {
    return Status::Error(fmt::format("oracle: precision_bits must be >= 0, got {}",
                                     options.precision_bits));
  }
  const int p = bits_of<T>();
  const mpfr_prec_t prec = options.precision_bits > 0
                               ? std::max<mpfr_prec_t>(options.precision_bits, MPFR_PREC_MIN)
                               : exact_precision(a, b, n);
  mpfr_t x, y, term, sum, magnitude;
  mpfr_inits2(p, x, y, static_cast<mpfr_ptr>(nullptr));
  mpfr_init2(term, 2 * p);  // a product of two p-bit numbers is exact in 2p bits
  mpfr_inits2(prec, sum, magnitude, static_cast<mpfr_ptr>(nullptr));
  mpfr_set_zero(sum, 1);
  mpfr_set_zero(magnitude, 1);
  bool inexact = false;
  for (int64_t i = 0; i < n; ++i) {
    mpfr_set_d(x, a[i], MPFR_RNDN);  // exact: p bits hold any T
    if (b) {
      mpfr_set_d(y, b[i], MPFR_RNDN);
      mpfr_mul(term, x, y, MPFR_RNDN);
    } else {
      mpfr_set(term, x, MPFR_RNDN);
    }
    inexact |= mpfr_add(sum, sum, term, MPFR_RNDN) != 0;
    mpfr_abs(term, term, MPFR_RNDN);
    mpfr_add(magnitude, magnitude, term, MPFR_RNDN);
  }
  Evaluation e;
  e.op = b ? Op::kDot : Op::kSum;
  e.input_format = p == 24 ? Format::kFloat32 : Format::kFloat64;
  e.n = e.rounding_steps = n;
  e.exact_is_exact = !inexact;
  if (mpfr_nan_p(sum)) {
    e.kind = Kind::kNaN;
  } else if (mpfr_inf_p(sum)) {
    e.kind = mpfr_sgn(sum) > 0 ? Kind::kPlusInf : Kind::kMinusInf;
  } else {
    e.exact = internal::dyadic_of(sum);
  }
  for (int64_t i = 0; i < n && e.first_nonfinite < 0; ++i) {
    if (!std::isfinite(a[i]) || (b && !std::isfinite(b[i]))) e.first_nonfinite = i;
  }
  e.f32 = mpfr_get_flt(sum, MPFR_RNDN);
  e.f64 = mpfr_get_d(sum, MPFR_RNDN);
  e.abs_sum = mpfr_get_d(magnitude, MPFR_RNDN);
  mpfr_clears(x, y, term, sum, magnitude, static_cast<mpfr_ptr>(nullptr));
  return e;
}

}  // namespace

Result<Evaluation> oracle_sum(const float* a, int64_t n, const OracleOptions& options) {
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("sum", "input", a, n));
  return oracle_impl<float>(a, nullptr, n, options);
}
Result<Evaluation> oracle_sum(const double* a, int64_t n, const OracleOptions& options) {
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("sum", "input", a, n));
  return oracle_impl<double>(a, nullptr, n, options);
}

template <class T>
Result<Evaluation> oracle_dot_checked(const T* a, int64_t na, const T* b, int64_t nb,
                                      const OracleOptions& options) {
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("dot", "a", a, na));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("dot", "b", b, nb));
  if (na != nb) {
    return Status::Error(fmt::format("dot: lengths differ: a has {} elements, b has {}", na, nb));
  }
  // A null b with length 0 must still mean "dot", not "sum".
  static const T kNone = 0;
  return oracle_impl<T>(a, b ? b : &kNone, na, options);
}

Result<Evaluation> oracle_dot(const float* a, int64_t na, const float* b, int64_t nb,
                              const OracleOptions& options) {
  return oracle_dot_checked(a, na, b, nb, options);
}
Result<Evaluation> oracle_dot(const double* a, int64_t na, const double* b, int64_t nb,
                              const OracleOptions& options) {
  return oracle_dot_checked(a, na, b, nb, options);
}

}  // namespace saddlescope::reference
