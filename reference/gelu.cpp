#include "saddlescope/reference/gelu.h"

#include <fmt/format.h>
#include <mpfr.h>

#include <algorithm>
#include <cmath>

#include "mpfr_dyadic.h"
#include "reduction.h"
#include "saddlescope/reference/elementwise.h"

namespace saddlescope::reference {
namespace {

constexpr double kSaturation = 20;       // gelu.h: x >= 20 rounds to x
constexpr double kFlushLog2 = -2000;     // log2 of a bound on |value| below which it is flushed to 0
constexpr double kLn2 = 0.6931471805599453;
constexpr double kTanhScale = 0.7978845608028654;  // √(2/π), for the binary64 allowance only

// The inner argument w = k(x + c·x³) of the tanh form, in binary64 (the allowance and the range tests).
double inner(double x) { return kTanhScale * (x + 0.044715 * x * x * x); }

// w = k(x + c·x³) at w's precision p, within 9·2^-p relative (x³, c, c·x³, the sum of terms of one
// sign, π, 2/π, its root, the product: 8 roundings); k = √(2/π) and c = 0.044715 left in k and c.
void inner_mpfr(double x, mpfr_t w, mpfr_t k, mpfr_t c) {
  mpfr_set_d(w, x, MPFR_RNDN);
  mpfr_pow_ui(w, w, 3, MPFR_RNDN);
  mpfr_set_str(c, "0.044715", 10, MPFR_RNDN);
  mpfr_mul(w, w, c, MPFR_RNDN);
  mpfr_add_d(w, w, x, MPFR_RNDN);
  mpfr_const_pi(k, MPFR_RNDN);
  mpfr_ui_div(k, 2, k, MPFR_RNDN);
  mpfr_sqrt(k, k, MPFR_RNDN);
  mpfr_mul(w, w, k, MPFR_RNDN);
}

// The value at y's precision p. Returns err with |y − value| <= 2^(EXP(y) − err) (gelu.h's forms).
mpfr_exp_t approximate(Op op, double x, mpfr_t y) {
  const mpfr_prec_t p = mpfr_get_prec(y);
  mpfr_t a, b;
  mpfr_inits2(p, a, b, static_cast<mpfr_ptr>(nullptr));
  double factor;  // the relative error is below 2^-p·factor
  if (op == Op::kGelu) {
    // z = −x/√2 (2 roundings), erfc(z) (one, and z's error amplified by |z erfc'(z)/erfc(z)| <= 2z² + 2),
    // the product by x/2 (one): below 2^-p·(2(2z² + 2)(1 + 2^-p) + 2) <= 2^-p·(5z² + 8).
    mpfr_sqrt_ui(a, 2, MPFR_RNDN);
    mpfr_set_d(b, -x, MPFR_RNDN);
    mpfr_div(a, b, a, MPFR_RNDN);
    mpfr_erfc(a, a, MPFR_RNDN);
    mpfr_mul_d(y, a, x, MPFR_RNDN);
    mpfr_div_2ui(y, y, 1, MPFR_RNDN);
    factor = 5 * (x * x / 2) + 8;
  } else {
    // w within 9·2^-p relative (inner_mpfr); e^{−2w} adds 2|w|·9·2^-p and its own; 1 + t and the
    // division do not amplify (t/(1 + t) < 1) and round twice: below 2^-p·(18|w| + 4)(1 + 2^-60) <=
    // 2^-p·(19|w| + 5).
    mpfr_t k, c;
    mpfr_inits2(p, k, c, static_cast<mpfr_ptr>(nullptr));
    inner_mpfr(x, a, k, c);
    mpfr_clears(k, c, static_cast<mpfr_ptr>(nullptr));
    mpfr_mul_si(a, a, -2, MPFR_RNDN);
    mpfr_exp(a, a, MPFR_RNDN);
    mpfr_add_ui(a, a, 1, MPFR_RNDN);
    mpfr_d_div(y, x, a, MPFR_RNDN);
    factor = 19 * std::fabs(inner(x)) + 5;
  }
  mpfr_clears(a, b, static_cast<mpfr_ptr>(nullptr));
  // |y − value| <= 2^-p·factor·|value| <= 2^(EXP(y) − p + bits + 1) with 2^bits >= factor.
  return p - static_cast<mpfr_exp_t>(std::ceil(std::log2(factor))) - 1;
}


// log2 of a bound on |value| for x < 0 (gelu.h): erfc(z) <= e^{−z²}, sigmoid(2w) <= e^{2w}.
double log2_bound(Op op, double x) {
  const double tail = op == Op::kGelu ? -x * x / 2 : 2 * inner(x);
  return std::log2(std::fabs(x)) + tail / kLn2;
}

template <class T>
Result<Evaluation> gelu_impl(Op op, T input) {
  if (!is_gelu(op)) return Status::Error(fmt::format("{} is not a GELU (gelu, gelu_tanh)", op_name(op)));
  const double x = input;
  Evaluation e;
  e.op = op;
  e.input_format = internal::format_of<T>();
  e.n = 1;
  e.rounding_steps = 0;
  if (!std::isfinite(x)) {
    e.first_nonfinite = 0;
    if (std::isnan(x) || x > 0) {
      internal::set_nonfinite(e, std::isnan(x) ? Kind::kNaN : Kind::kPlusInf);
      return e;
    }
    internal::set_value(e, 0.0);  // the limit at −inf
    return e;
  }
  if (x == 0) {
    internal::set_value(e, 0.0);
  } else if (x >= kSaturation) {
    internal::set_value(e, x);
    e.exact_is_exact = false;
  } else if (x < 0 && !(log2_bound(op, x) >= kFlushLog2)) {
    internal::set_value(e, 0.0);
    e.exact_is_exact = false;
  } else {
    internal::round_by_ziv(e, [&](mpfr_t y) { return approximate(op, x, y); });
    e.exact_is_exact = false;
  }
  // The allowance (gelu.h), in binary64.
  const double f = op == Op::kGelu ? std::erf(x / std::sqrt(2.0)) : std::tanh(inner(x));
  const double c = op == Op::kGelu ? 1.0 : 3.2;
  const double v = std::fabs(e.f64);
  e.abs_sum = v;
  e.unit_coefficient =
      std::fabs(x) / 2 * (c + 2 * kLibraryUlps * std::max(std::fabs(f), std::fabs(1 + f)) + std::fabs(1 + f)) + 2 * v;
  return e;
}

// g·gelu'(x) at y's precision p (gelu.h's backward forms). Returns err with |y − value| <= 2^(EXP(y) − err).
mpfr_exp_t approximate_backward(Op form, double g, double x, mpfr_t y) {
  const mpfr_prec_t p = mpfr_get_prec(y);
  mpfr_t a, b, c, d;
  mpfr_inits2(p, a, b, c, d, static_cast<mpfr_ptr>(nullptr));
  double bound;  // |y − value| <= 2^-p·bound (in binary64, from the terms' magnitudes)
  if (form == Op::kGelu) {
    // Φ(x) = erfc(−x/√2)/2: z's two roundings amplified by <= 2z² + 2, erfc's own, so 4z² + 6 relative.
    // x·φ(x) = x·e^{−x²/2}/√(2π): x² exact (p >= 106), exp, √(2π) (π, the root), the division and the
    // product by x: 6 relative. The sum and the product by g round once each.
    mpfr_sqrt_ui(a, 2, MPFR_RNDN);
    mpfr_set_d(b, -x, MPFR_RNDN);
    mpfr_div(a, b, a, MPFR_RNDN);
    mpfr_erfc(a, a, MPFR_RNDN);
    mpfr_div_2ui(a, a, 1, MPFR_RNDN);  // Φ
    mpfr_set_d(b, x, MPFR_RNDN);
    mpfr_sqr(b, b, MPFR_RNDN);
    mpfr_div_2ui(b, b, 1, MPFR_RNDN);
    mpfr_neg(b, b, MPFR_RNDN);
    mpfr_exp(b, b, MPFR_RNDN);
    mpfr_const_pi(c, MPFR_RNDN);
    mpfr_mul_2ui(c, c, 1, MPFR_RNDN);
    mpfr_sqrt(c, c, MPFR_RNDN);
    mpfr_div(b, b, c, MPFR_RNDN);
    mpfr_mul_d(b, b, x, MPFR_RNDN);  // x·φ
    const double z2 = x * x / 2;
    bound = std::fabs(mpfr_get_d(a, MPFR_RNDN)) * (4 * z2 + 6) + std::fabs(mpfr_get_d(b, MPFR_RNDN)) * 6;
    mpfr_add(d, a, b, MPFR_RNDN);
  } else {
    // w = k(x + c·x³) within 9·2^-p relative (gelu.h's forward). A = (1 + T)/2 = 1/(1 + e^{−2w}):
    // 18|w| + 4. sech²(w) = 1 − T² without cancellation: 18|w| + 3. k(1 + 3c·x²): 8. The product
    // 0.5·x·sech²·k(1 + 3cx²): 2 more. The sum and the product by g round once each.
    mpfr_t w;
    mpfr_init2(w, p);
    inner_mpfr(x, w, b, c);  // b = k
    mpfr_mul_si(a, w, -2, MPFR_RNDN);
    mpfr_exp(a, a, MPFR_RNDN);
    mpfr_add_ui(a, a, 1, MPFR_RNDN);
    mpfr_ui_div(a, 1, a, MPFR_RNDN);  // A
    mpfr_sech(d, w, MPFR_RNDN);
    mpfr_sqr(d, d, MPFR_RNDN);  // sech²
    mpfr_set_d(y, x, MPFR_RNDN);
    mpfr_sqr(y, y, MPFR_RNDN);
    mpfr_mul(y, y, c, MPFR_RNDN);
    mpfr_mul_ui(y, y, 3, MPFR_RNDN);
    mpfr_add_ui(y, y, 1, MPFR_RNDN);
    mpfr_mul(y, y, b, MPFR_RNDN);  // k(1 + 3c·x²)
    mpfr_mul(d, d, y, MPFR_RNDN);
    mpfr_mul_d(d, d, x, MPFR_RNDN);
    mpfr_div_2ui(d, d, 1, MPFR_RNDN);  // B
    const double wa = std::fabs(mpfr_get_d(w, MPFR_RNDN));
    bound = std::fabs(mpfr_get_d(a, MPFR_RNDN)) * (18 * wa + 4) + std::fabs(mpfr_get_d(d, MPFR_RNDN)) * (18 * wa + 14);
    mpfr_add(d, a, d, MPFR_RNDN);
    mpfr_clear(w);
  }
  bound = std::fabs(g) * (bound + std::fabs(mpfr_get_d(d, MPFR_RNDN))) * (1 + 1e-10);
  mpfr_mul_d(y, d, g, MPFR_RNDN);
  bound += std::fabs(mpfr_get_d(y, MPFR_RNDN));
  mpfr_clears(a, b, c, d, static_cast<mpfr_ptr>(nullptr));
  if (mpfr_zero_p(y) || !(bound > 0)) return 0;
  // |y − value| <= 2^-p·bound <= 2^(EXP(y) − err) with err = p + EXP(y) − ceil(log2 bound) − 1.
  return p + mpfr_get_exp(y) - static_cast<mpfr_exp_t>(std::ceil(std::log2(bound))) - 1;
}

template <class T>
Result<Evaluation> gelu_backward_impl(Op form, T grad, T input) {
  if (!is_gelu(form)) return Status::Error(fmt::format("{} is not a GELU (gelu, gelu_tanh)", op_name(form)));
  const double g = grad, x = input;
  Evaluation e;
  e.op = form == Op::kGelu ? Op::kGeluBackward : Op::kGeluTanhBackward;
  e.input_format = internal::format_of<T>();
  e.n = 1;
  e.rounding_steps = 0;
  const double w = inner(x);
  const double f = form == Op::kGelu ? std::erf(x / std::sqrt(2.0)) : std::tanh(w);
  if (!std::isfinite(x) || !std::isfinite(g)) {
    // gelu' is 1 at +inf and 0 at −inf: g·gelu'(x) as IEEE gives it.
    e.first_nonfinite = std::isfinite(g) ? 1 : 0;
    const double v = g * (std::isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? 0.0 : 0.5);
    if (std::isnan(v)) internal::set_nonfinite(e, Kind::kNaN);
    else if (std::isinf(v)) internal::set_nonfinite(e, v > 0 ? Kind::kPlusInf : Kind::kMinusInf);
    else internal::set_value(e, v);
    return e;
  }
  // log2 of a bound on |gelu'(x)| for x < 0 (gelu.h), to flush what lies far below binary64.
  const double tail = form == Op::kGelu ? std::log2(std::fabs(x) + 1) - x * x / 2 / kLn2
                                        : std::log2(1 + 2 * std::fabs(x) * kTanhScale * (1 + 3 * 0.044715 * x * x)) +
                                              2 * w / kLn2;
  if (g == 0) {
    internal::set_value(e, 0.0);
  } else if (x == 0) {
    internal::set_value(e, g / 2);  // gelu'(0) = 1/2 in both forms: exact
  } else if (x < 0 && !(std::log2(std::fabs(g)) + tail >= kFlushLog2)) {
    internal::set_value(e, 0.0);
    e.exact_is_exact = false;
  } else {
    internal::round_by_ziv(e, [&](mpfr_t y) { return approximate_backward(form, g, x, y); });
    e.exact_is_exact = false;
  }
  // The allowance (gelu.h), in binary64: L/u = 2·kLibraryUlps.
  const double L = 2 * kLibraryUlps, v = std::fabs(e.f64);
  double d_coefficient;
  if (form == Op::kGelu) {
    const double phi = std::exp(-x * x / 2) / std::sqrt(2 * M_PI), d = (1 + f) / 2 + x * phi;
    d_coefficient = 0.5 * (1 + L * std::max(std::fabs(f), std::fabs(1 + f)) + std::fabs(1 + f)) +
                    std::fabs(x * phi) * (x * x / 2 + 3 + L) + std::fabs(d);
  } else {
    const double id = kTanhScale * (1 + 3 * 0.044715 * x * x), left = 0.5 * std::fabs(x) * id;
    const double dt = 3.2 + L * std::fabs(f), r = left * (1 - f * f), d = (1 + f) / 2 + std::copysign(r, x);
    d_coefficient = 0.5 * (dt + std::fabs(1 + f)) + left * (2 * std::fabs(f) * dt + f * f + std::fabs(1 - f * f)) +
                    9 * r + std::fabs(d);
  }
  e.abs_sum = v;
  e.unit_coefficient = std::fabs(g) * d_coefficient + v;
  return e;
}

}  // namespace

bool is_gelu(Op op) { return op == Op::kGelu || op == Op::kGeluTanh; }
bool is_gelu_backward(Op op) { return op == Op::kGeluBackward || op == Op::kGeluTanhBackward; }

Result<Evaluation> evaluate_gelu(Op op, float x) { return gelu_impl(op, x); }
Result<Evaluation> evaluate_gelu(Op op, double x) { return gelu_impl(op, x); }
Result<Evaluation> evaluate_gelu_backward(Op form, float grad, float x) { return gelu_backward_impl(form, grad, x); }
Result<Evaluation> evaluate_gelu_backward(Op form, double grad, double x) { return gelu_backward_impl(form, grad, x); }

}  // namespace saddlescope::reference
