#include "saddlescope/reference/elementwise.h"

#include <fmt/format.h>
#include <mpfr.h>

#include <cmath>

#include "mpfr_dyadic.h"
#include "reduction.h"

namespace saddlescope::reference {
namespace {

// e^1386 < 2^2000: beyond it a value leaves the accumulators' range (elementwise.h).
constexpr double kRangeLimit = 1386;
// For |x| >= 90 sigmoid(x) and |tanh(x)| round to 1 at 128 bits: 1 - sigmoid(x) < e^-90 < 2^-129 and
// 1 - tanh|x| < 2 e^-180, both below half the gap under 1. Ziv's loop could not prove that rounding in
// reasonable precision (the values are within 2^-129 of a representable number), so it is stated here.
constexpr double kSaturation = 90;

// op(x) at y's precision w. Returns err with |y - op(x)| <= 2^(EXP(y) - err), as mpfr_can_round wants.
mpfr_exp_t approximate(Op op, const mpfr_t x, mpfr_t y) {
  const mpfr_prec_t w = mpfr_get_prec(y);
  if (op == Op::kExp) {
    mpfr_exp(y, x, MPFR_RNDN);  // correctly rounded: half an ULP, 2^(EXP(y) - w - 1)
    return w - 1;
  }
  if (op == Op::kTanh) {
    mpfr_tanh(y, x, MPFR_RNDN);
    return w - 1;
  }
  // sigmoid: three roundings of relative error 2^-w each, and 1/(1 + t) does not amplify t's error:
  // the total stays below 4 · 2^-w · |y| <= 2^(EXP(y) - w + 2).
  mpfr_neg(y, x, MPFR_RNDN);
  mpfr_exp(y, y, MPFR_RNDN);
  mpfr_add_ui(y, y, 1, MPFR_RNDN);
  mpfr_ui_div(y, 1, y, MPFR_RNDN);
  return w - 3;
}

// Fills exact (128 bits), f32 and f64 from op(x) for finite x != 0 inside the range: one Ziv loop that
// proves the 129-bit rounding, which implies the 25- and 54-bit ones (their breakpoints are among its).
void round_correctly(Op op, double x, Evaluation& e) {
  mpfr_t xm;
  mpfr_init2(xm, 53);
  mpfr_set_d(xm, x, MPFR_RNDN);  // exact
  internal::round_by_ziv(e, [&](mpfr_t y) { return approximate(op, xm, y); });  // op(x) is irrational here
  mpfr_clear(xm);
}


Evaluation relu(double x, Format input) {
  Evaluation e;
  e.op = Op::kRelu;
  e.input_format = input;
  e.n = 1;
  if (!std::isfinite(x)) e.first_nonfinite = 0;
  if (std::isnan(x) || x == INFINITY) {
    internal::set_nonfinite(e, std::isnan(x) ? Kind::kNaN : Kind::kPlusInf);
    return e;
  }
  internal::set_value(e, x > 0 ? x : 0.0);
  e.abs_sum = e.f64;
  return e;
}

Evaluation transcendental(Op op, double x, Format input) {
  Evaluation e;
  e.op = op;
  e.input_format = input;
  e.n = 1;
  if (!std::isfinite(x)) e.first_nonfinite = 0;
  if (std::isnan(x) || (op == Op::kExp && x > kRangeLimit)) {
    internal::set_nonfinite(e, std::isnan(x) ? Kind::kNaN : Kind::kPlusInf);
    return e;
  }
  const bool limit = std::isinf(x);  // a limit is exact; a saturated or flushed value is not
  if (x == 0) {
    internal::set_value(e, op == Op::kExp ? 1.0 : op == Op::kSigmoid ? 0.5 : x);  // tanh(±0) = ±0
  } else if ((op == Op::kExp || op == Op::kSigmoid) && x < -kRangeLimit) {
    internal::set_value(e, 0.0);
    e.exact_is_exact = limit;
  } else if ((op == Op::kTanh && std::fabs(x) >= kSaturation) || (op == Op::kSigmoid && x >= kSaturation)) {
    internal::set_value(e, std::copysign(1.0, x));
    e.exact_is_exact = limit;
  } else {
    round_correctly(op, x, e);
    e.exact_is_exact = false;
  }
  e.abs_sum = std::fabs(e.f64);
  return e;
}

template <class T>
Result<Evaluation> elementwise_impl(Op op, T x) {
  if (!is_elementwise(op)) {
    return Status::Error(fmt::format("{} is not an elementwise op (sigmoid, tanh, relu, exp)", op_name(op)));
  }
  const Format input = internal::format_of<T>();
  return op == Op::kRelu ? relu(x, input) : transcendental(op, x, input);
}

}  // namespace

double allowed_ulps(Op op, Format input, Format observed) {
  SADDLESCOPE_CHECK(is_elementwise(op));
  if (op != Op::kRelu) return kLibraryUlps;
  return precision(observed) < precision(input) ? 0.5 : 0.0;
}

Result<Evaluation> evaluate_elementwise(Op op, float x) { return elementwise_impl(op, x); }
Result<Evaluation> evaluate_elementwise(Op op, double x) { return elementwise_impl(op, x); }

}  // namespace saddlescope::reference
