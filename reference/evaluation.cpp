#include "saddlescope/reference/evaluation.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "nonfinite.h"
#include "reduction.h"
#include "saddlescope/reference/elementwise.h"
#include "saddlescope/reference/gelu.h"
#include "saddlescope/reference/normalization.h"
#include "saddlescope/reference/superaccumulator.h"

namespace saddlescope::reference {
namespace internal {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

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

void set_rounded(Evaluation& e) {
  if (e.divisor == 1) {  // no copy: this is on the path of every short reduction
    e.f32 = round_to_float(e.exact);
    e.f64 = round_to_double(e.exact);
    return;
  }
  const Dyadic value = divide_for_rounding(e.exact, e.divisor);
  e.f32 = round_to_float(value);
  e.f64 = round_to_double(value);
}

template <class T>
Evaluation reduce(Op op, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n) {
  Evaluation e;
  e.op = op;
  e.input_format = format_of<T>();
  e.n = e.rounding_steps = n;
  SplitAccumulator terms;
  if (terms.add_all(a, sa, b, sb, n)) {  // false on a NaN/Inf input: the IEEE outcome instead
    SplitAccumulator::Totals totals = terms.totals();
    e.exact = std::move(totals.sum);
    set_rounded(e);
    e.abs_sum = totals.abs_sum;
  } else {
    set_nonfinite(e, nonfinite_kind<T>(a, sa, b, sb, n, &e.first_nonfinite));
  }
  return e;
}

template Evaluation reduce<float>(Op, const float*, int64_t, const float*, int64_t, int64_t);
template Evaluation reduce<double>(Op, const double*, int64_t, const double*, int64_t, int64_t);

}  // namespace internal

namespace {

using internal::kInf;
using internal::kNaN;

template <class T>
Result<Evaluation> sum_impl(const T* a, int64_t n) {
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("sum", "input", a, n));
  return internal::reduce<T>(Op::kSum, a, 1, nullptr, 0, n);
}

template <class T>
Result<Evaluation> dot_impl(const T* a, int64_t na, const T* b, int64_t nb) {
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("dot", "a", a, na));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("dot", "b", b, nb));
  if (na != nb) {
    return Status::Error(fmt::format("dot: lengths differ: a has {} elements, b has {}", na, nb));
  }
  static const T kNone = 0;  // a null b with length 0 must still mean "dot", not "sum"
  return internal::reduce<T>(Op::kDot, a, 1, b ? b : &kNone, 1, na);
}

// Rounds x · 2^shift to the nearest double (exact scaling, one rounding).
double scaled(Dyadic x, int shift) {
  if (x.is_zero()) return 0.0;
  x.exponent += shift;
  return round_to_double(x);
}

// log2 of ulp(exact / divisor) in format f; the subnormal ULP for 0.
int value_ulp_exponent(const Evaluation& e, Format f) {
  if (e.exact.is_zero()) return ulp_exponent(INT_MIN / 2, f);
  return ulp_exponent(top_exponent(divide_for_rounding(e.exact, e.divisor)), f);
}

template <class T>
ErrorReport assess_impl(const Evaluation& e, T observed) {
  ErrorReport r;
  r.format = internal::format_of<T>();
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
  // d = observed · divisor - exact, so that error = d / divisor and rel_error = d / exact, both exactly.
  SADDLESCOPE_CHECK(e.divisor >= 1 && e.divisor <= (int64_t{1} << 53));
  Superaccumulator difference;
  difference.add_product(static_cast<double>(observed), static_cast<double>(e.divisor));
  difference.add(e.exact, /*negate=*/true);
  const Dyadic d = difference.value();
  const Dyadic error = divide_for_rounding(d, e.divisor);
  r.error = round_to_double(error);
  r.ulp_error = scaled(error, -value_ulp_exponent(e, r.format));
  if (e.exact.is_zero()) {
    r.rel_error = d.is_zero() ? 0.0 : std::copysign(kInf, r.error);
  } else {
    // Both scaled by 2^-top so neither under- nor overflows: |exact| · 2^-top is in [1, 2).
    const int top = top_exponent(e.exact);
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

bool is_elementwise(Op op) {
  return op == Op::kSigmoid || op == Op::kTanh || op == Op::kRelu || op == Op::kExp;
}

const char* op_name(Op op) {
  switch (op) {
    case Op::kSum: return "sum";
    case Op::kDot: return "dot";
    case Op::kMatmul: return "matmul";
    case Op::kConv2d: return "conv2d";
    case Op::kConv2dWeightGrad: return "conv2d_wgrad";
    case Op::kMseLoss: return "mse_loss";
    case Op::kMaeLoss: return "mae_loss";
    case Op::kMseLossGrad: return "mse_loss_grad";
    case Op::kNllLossGrad: return "nll_loss_grad";
    case Op::kSigmoid: return "sigmoid";
    case Op::kTanh: return "tanh";
    case Op::kRelu: return "relu";
    case Op::kExp: return "exp";
    case Op::kSoftmax: return "softmax";
    case Op::kLogSoftmax: return "log_softmax";
    case Op::kLayerNorm: return "layer_norm";
    case Op::kBatchNorm: return "batch_norm";
    case Op::kSoftmaxBackward: return "softmax_backward";
    case Op::kLogSoftmaxBackward: return "log_softmax_backward";
    case Op::kGelu: return "gelu";
    case Op::kGeluTanh: return "gelu_tanh";
    case Op::kCrossEntropy: return "cross_entropy";
    case Op::kGeluBackward: return "gelu_backward";
    case Op::kGeluTanhBackward: return "gelu_tanh_backward";
  }
  return "?";
}

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
  if (is_elementwise(op)) {
    // ULPs of the value in f; beyond f's range, ULPs of its largest binade (exp(100) has no float32 ULP,
    // and a finite observed value there is off by far more than a few of those).
    const int ulp = std::min(value_ulp_exponent(*this, f), max_exponent(f) - precision(f) + 1);
    return std::ldexp(allowed_ulps(op, input_format, f), ulp);
  }
  if (is_normalization(op) || is_gelu(op) || is_gelu_backward(op) || op == Op::kLogSoftmaxBackward) {
    // A stated allowance (normalization.h, gelu.h, softmax_backward.h), plus a few subnormal ULPs for values that underflow in f.
    const double subnormal = std::ldexp(kLibraryUlps + 2, min_normal_exponent(f) - precision(f) + 1);
    const double first_order = unit_roundoff(f) * unit_coefficient;
    return abs_sum == 0 ? first_order + subnormal : first_order + gamma_n(rounding_steps, f) * abs_sum + subnormal;
  }
  if (n == 0 || abs_sum == 0) return 0;  // every term zero (or below binary64): no rounding error
  return gamma_n(rounding_steps, f) * abs_sum;
}

std::string Evaluation::exact_decimal() const {
  if (kind != Kind::kFinite) return kind_name(kind);
  return divisor == 1 ? to_decimal(exact) : to_decimal(exact) + "/" + std::to_string(divisor);
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
