#include "saddlescope/reference/softmax_backward.h"

#include <fmt/format.h>
#include <gmp.h>
#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "mpfr_dyadic.h"
#include "reduction.h"
#include "saddlescope/reference/elementwise.h"

namespace saddlescope::reference {
namespace {

constexpr const char* kName = "softmax_backward";
constexpr const char* kLogName = "log_softmax_backward";
using internal::kExactBits;

Status check_rows(const char* what, const void* g, const void* y, int64_t n, int64_t i) {
  if (n < 1) return Status::Error(fmt::format("{}: needs at least one element, got n = {}", what, n));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span(what, "grad_output", g, n));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span(what, "output", y, n));
  if (i < 0 || i >= n) return Status::Error(fmt::format("{}: i = {} is outside [0, {})", what, i, n));
  return Status::Ok();
}

// An exact dyadic z·2^exponent held as a GMP integer.
struct Scaled {
  mpz_t z;
  int exponent = 0;
  Scaled() { mpz_init(z); }
  explicit Scaled(const Dyadic& x) : Scaled() {
    internal::set_z(z, x);
    exponent = x.exponent;
  }
  Scaled(const Scaled&) = delete;
  Scaled& operator=(const Scaled&) = delete;
  ~Scaled() { mpz_clear(z); }

  Dyadic dyadic() const { return internal::dyadic_of(z, exponent); }
};

// out = a − b, exactly (the smaller exponent kept).
void subtract(const Scaled& a, const Scaled& b, Scaled& out) {
  const int e = std::min(a.exponent, b.exponent);
  mpz_t x, y;
  mpz_inits(x, y, static_cast<mpz_ptr>(nullptr));
  mpz_mul_2exp(x, a.z, static_cast<mp_bitcnt_t>(a.exponent - e));
  mpz_mul_2exp(y, b.z, static_cast<mp_bitcnt_t>(b.exponent - e));
  mpz_sub(out.z, x, y);
  out.exponent = e;
  mpz_clears(x, y, static_cast<mpz_ptr>(nullptr));
}

template <class T>
Result<Evaluation> softmax_backward_impl(const T* g, const T* y, int64_t n, int64_t i) {
  SADDLESCOPE_RETURN_IF_ERROR(check_rows(kName, g, y, n, i));
  Evaluation e;
  e.op = Op::kSoftmaxBackward;
  e.input_format = internal::format_of<T>();
  e.n = n;
  e.rounding_steps = n + 2;
  const Evaluation d = internal::reduce<T>(Op::kDot, g, 1, y, 1, n);  // D = Σ g_j y_j, exactly
  if (d.kind != Kind::kFinite) {
    // g_i and y_i are among D's inputs, so D is non-finite whenever they are: the IEEE outcome.
    e.first_nonfinite = d.first_nonfinite;
    const double v = static_cast<double>(y[i]) * (static_cast<double>(g[i]) - d.f64);
    internal::set_nonfinite(e, std::isnan(v) ? Kind::kNaN : v > 0 ? Kind::kPlusInf : Kind::kMinusInf);
    return e;
  }
  const Scaled dot(d.exact), gi(to_dyadic(g[i])), yi(to_dyadic(y[i]));
  Scaled r;
  subtract(gi, dot, r);  // g_i − D
  mpz_mul(r.z, r.z, yi.z);
  r.exponent += yi.exponent;  // y_i · (g_i − D)
  e.exact = r.dyadic();
  internal::set_rounded(e);
  e.abs_sum = std::fabs(static_cast<double>(y[i])) * (std::fabs(static_cast<double>(g[i])) + d.abs_sum);
  return e;
}

// g_i − e^ℓ·G by Ziv's loop: exact (128 bits), f32 and f64 from a proven 129-bit rounding. REQUIRES: the
// value irrational (G ≠ 0, ℓ finite and ≠ 0).
void round_log_backward(Evaluation& e, double gi, double l, const Scaled& total) {
  mpfr_t big_g;
  mpfr_init2(big_g, std::max<mpfr_prec_t>(static_cast<mpfr_prec_t>(mpz_sizeinbase(total.z, 2)), MPFR_PREC_MIN));
  SADDLESCOPE_CHECK(mpfr_set_z_2exp(big_g, total.z, total.exponent, MPFR_RNDN) == 0);  // G exactly
  mpfr_t y, t;
  for (mpfr_prec_t p = kExactBits + 32;; p *= 2) {
    SADDLESCOPE_CHECK(p <= (mpfr_prec_t{1} << 20));  // Ziv's loop ends: the value is irrational
    mpfr_inits2(p, y, t, static_cast<mpfr_ptr>(nullptr));
    mpfr_set_d(t, l, MPFR_RNDN);
    mpfr_exp(t, t, MPFR_RNDN);
    mpfr_mul(t, t, big_g, MPFR_RNDN);  // e^ℓ·G within (2 + 2^-p)·2^-p relative: below 2^(EXP(t) + 2 − p)
    mpfr_d_sub(y, gi, t, MPFR_RNDN);   // and 2^(EXP(y) − p) more
    mpfr_exp_t err = 0;
    if (!mpfr_zero_p(y)) {
      err = mpfr_get_exp(y) - (std::max(mpfr_get_exp(t) + 2, mpfr_get_exp(y)) + 1 - p);
      if (err > 0 && mpfr_can_round(y, err, MPFR_RNDN, MPFR_RNDZ, kExactBits + 1)) break;
    }
    mpfr_clears(y, t, static_cast<mpfr_ptr>(nullptr));
  }
  internal::set_from_mpfr(e, y);
  e.exact_is_exact = false;
  mpfr_clears(y, t, big_g, static_cast<mpfr_ptr>(nullptr));
}

template <class T>
Result<Evaluation> log_softmax_backward_impl(const T* g, const T* out, int64_t n, int64_t i) {
  SADDLESCOPE_RETURN_IF_ERROR(check_rows(kLogName, g, out, n, i));
  Evaluation e;
  e.op = Op::kLogSoftmaxBackward;
  e.input_format = internal::format_of<T>();
  e.n = e.rounding_steps = n;
  const double l = out[i], gi = g[i];
  const Evaluation total = internal::reduce<T>(Op::kSum, g, 1, nullptr, 0, n);  // G = Σ g_j, exactly
  if (total.kind != Kind::kFinite || std::isnan(l) || l == INFINITY) {
    e.first_nonfinite = total.kind != Kind::kFinite ? total.first_nonfinite : n;
    const double v = gi - std::exp(l) * total.f64;
    internal::set_nonfinite(e, std::isnan(v) ? Kind::kNaN : v > 0 ? Kind::kPlusInf : Kind::kMinusInf);
    return e;
  }
  if (std::isinf(l)) e.first_nonfinite = n;  // −inf: a masked entry, e^ℓ = 0
  const Scaled big_g(total.exact), g_i(to_dyadic(gi));
  if (total.exact.is_zero() || std::isinf(l) || l == 0) {
    // Rational: g_i, or g_i − G when ℓ = 0.
    Scaled r;
    if (l == 0) {
      subtract(g_i, big_g, r);
    } else {
      mpz_set(r.z, g_i.z);
      r.exponent = g_i.exponent;
    }
    e.exact = r.dyadic();
    internal::set_rounded(e);
  } else {
    round_log_backward(e, gi, l, big_g);
  }
  // The allowance (softmax_backward.h), in binary64.
  const double el = std::exp(l), g_abs = total.abs_sum;
  e.abs_sum = el * g_abs;
  e.unit_coefficient = (1 + 2 * kLibraryUlps) * std::fabs(el * round_to_double(total.exact)) + std::fabs(e.f64);
  return e;
}

}  // namespace

Result<Evaluation> evaluate_log_softmax_backward(const float* grad_output, const float* output, int64_t n,
                                                 int64_t i) {
  return log_softmax_backward_impl(grad_output, output, n, i);
}
Result<Evaluation> evaluate_log_softmax_backward(const double* grad_output, const double* output, int64_t n,
                                                 int64_t i) {
  return log_softmax_backward_impl(grad_output, output, n, i);
}

Result<Evaluation> evaluate_softmax_backward(const float* grad_output, const float* output, int64_t n, int64_t i) {
  return softmax_backward_impl(grad_output, output, n, i);
}
Result<Evaluation> evaluate_softmax_backward(const double* grad_output, const double* output, int64_t n,
                                             int64_t i) {
  return softmax_backward_impl(grad_output, output, n, i);
}

}  // namespace saddlescope::reference
