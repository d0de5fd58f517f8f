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
    // w = k(x + c·x³): x³, c, c·x³, the sum (terms of one sign), π, 2/π, its root, the product: 8
    // roundings, below 9·2^-p relative; e^{−2w} adds 2|w|·9·2^-p and its own; 1 + t and the division
    // do not amplify (t/(1 + t) < 1) and round twice: below 2^-p·(18|w| + 4)(1 + 2^-60) <= 2^-p·(19|w| + 5).
    mpfr_set_d(a, x, MPFR_RNDN);
    mpfr_pow_ui(a, a, 3, MPFR_RNDN);
    mpfr_set_str(b, "0.044715", 10, MPFR_RNDN);
    mpfr_mul(a, a, b, MPFR_RNDN);
    mpfr_add_d(a, a, x, MPFR_RNDN);
    mpfr_const_pi(b, MPFR_RNDN);
    mpfr_ui_div(b, 2, b, MPFR_RNDN);
    mpfr_sqrt(b, b, MPFR_RNDN);
    mpfr_mul(a, a, b, MPFR_RNDN);  // w
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

}  // namespace

bool is_gelu(Op op) { return op == Op::kGelu || op == Op::kGeluTanh; }

Result<Evaluation> evaluate_gelu(Op op, float x) { return gelu_impl(op, x); }
Result<Evaluation> evaluate_gelu(Op op, double x) { return gelu_impl(op, x); }

}  // namespace saddlescope::reference
