// Exact evaluation of sums and dot products of binary floats, and how far an observed result is from it.
//
// evaluate_sum / evaluate_dot are the fast exact path (a Superaccumulator, no MPFR): the exact value, its
// correctly rounded float32 and float64, and sum|a_i b_i| for the a-priori bound. assess() then measures an
// observed result (e.g. what a CPU or GPU kernel returned) against the exact value:
//
//   error = observed - exact, ulp_error = error / ulp(exact), bound = gamma_k · sum|a_i b_i|  (DESIGN.md)
//
// The same Evaluation describes the other ops of a training step (ops.h: matmul and conv2d elements, the
// mean losses; elementwise.h: sigmoid, tanh, ReLU, exp; normalization.h: softmax, log_softmax, layer and
// batch norm; softmax_backward.h: softmax's input gradient; gelu.h: GELU); the fields below say where they
// differ.
//
// Inputs are plain spans (pointer + length). Non-finite inputs are not errors: the evaluation says which
// non-finite value IEEE 754 semantics give (NaN, +inf, -inf) and where the first such input is.
#pragma once

#include <cstdint>

#include "saddlescope/base/status.h"
#include "saddlescope/reference/dyadic.h"
#include "saddlescope/reference/rounding.h"

namespace saddlescope::reference {

enum class Op {
  kSum, kDot,                                   // evaluation.h
  kMatmul, kConv2d, kConv2dWeightGrad,          // ops.h: dot products in disguise
  kMseLoss, kMaeLoss,                           // ops.h: means of dyadic sums
  kMseLossGrad,                                 // ops.h: one element of the MSE loss's input gradient
  kNllLossGrad,                                 // ops.h: one element of nll_loss's input gradient
  kSigmoid, kTanh, kRelu, kExp,                 // elementwise.h: one input, bound in ULPs
  kSoftmax, kLogSoftmax, kLayerNorm, kBatchNorm,  // normalization.h: one element of a row, an allowance
  kSoftmaxBackward,                             // softmax_backward.h: exact, bound gamma_{n+2}
  kLogSoftmaxBackward,                          // softmax_backward.h: an allowance as normalization.h's
  kGelu, kGeluTanh,                             // gelu.h: one input, an allowance as normalization.h's
  kGeluBackward, kGeluTanhBackward,             // gelu.h: g·gelu'(x), an allowance likewise
  kCrossEntropy,                                // normalization.h: a mean over rows, an allowance
};

// True for the ops of elementwise.h, whose bound is a number of ULPs rather than gamma_k · abs_sum.
bool is_elementwise(Op op);

// What the exact (extended-real) result is. Finite sums of finite inputs are always kFinite, even when
// they round to ±inf in a format (that is overflow, reported by f32/f64).
enum class Kind { kFinite, kNaN, kPlusInf, kMinusInf };

const char* op_name(Op op);      // "sum", "dot", "matmul", "conv2d", "conv2d_wgrad", "mse_loss", ...,
                                 // "softmax", "log_softmax", "layer_norm", "batch_norm",
                                 // "softmax_backward", "log_softmax_backward", "gelu",
                                 // "gelu_tanh", "nll_loss_grad", "cross_entropy"
const char* kind_name(Kind k);   // "finite" / "nan" / "inf" / "-inf"

struct Evaluation {
  Op op = Op::kSum;
  Format input_format = Format::kFloat32;
  int64_t n = 0;                 // number of terms (1 for an elementwise op)
  Kind kind = Kind::kFinite;
  int64_t first_nonfinite = -1;  // smallest term index i with a NaN/Inf input; -1 if none
  // The exact value is exact / divisor. divisor is 1 except for the mean losses, where it is the odd part
  // of n (the power of two is folded into exact), so the value is a dyadic exactly when divisor == 1.
  Dyadic exact;                  // zero unless kind == kFinite
  int64_t divisor = 1;
  // False for an oracle run at a fixed precision too small (oracle.h), and for sigmoid/tanh/exp, whose
  // values are irrational: `exact` then holds the value correctly rounded to 128 bits (elementwise.h,
  // normalization.h).
  bool exact_is_exact = true;
  float f32 = 0;                 // the value rounded to nearest-even in binary32 (NaN/±inf when not finite)
  double f64 = 0;                // same in binary64
  double abs_sum = 0;            // sum |a_i b_i| (sum |a_i| for a sum), rounded to nearest binary64; for the
                                 // losses and elementwise ops |value| rounded likewise (normalization.h:
                                 // the factor of gamma_k in its allowance)
  int64_t rounding_steps = 0;    // k of gamma_k in the bound: n for a sum or dot product (ops.h: others)
  double unit_coefficient = 0;   // normalization.h only: the allowance's first-order term in units of u

  // Sums, dot products and ops.h: gamma_k(rounding_steps, f) · abs_sum, the largest error a recursive
  // (any order) evaluation in format f can make, barring underflow; 0 when abs_sum is 0; +inf when
  // gamma_k is. Elementwise ops: allowed_ulps(op, input_format, f) ULPs of the value in f (elementwise.h;
  // beyond f's range, ULPs of its largest binade). normalization.h, gelu.h and log_softmax_backward
  // (softmax_backward.h): u(f)·unit_coefficient +
  // gamma_k(rounding_steps, f)·abs_sum + (kLibraryUlps + 2) ULPs of f's subnormals, a stated allowance.
  double bound(Format f) const;
  // Every digit of `exact`, then "/divisor" when divisor != 1; or "nan" / "inf" / "-inf". For sigmoid,
  // tanh, exp and normalization.h's ops, every digit of the 128-bit rounding.
  std::string exact_decimal() const;
};

// Exact sum of a[0..n). An empty span gives the explicit result 0 (the empty sum), n == 0.
// Errors: n < 0; a == nullptr with n > 0.
Result<Evaluation> evaluate_sum(const float* a, int64_t n);
Result<Evaluation> evaluate_sum(const double* a, int64_t n);

// Exact sum of a[i]·b[i]. Errors: na != nb (the message gives both lengths), negative lengths, null
// pointers with non-zero lengths. Empty spans give the explicit result 0.
Result<Evaluation> evaluate_dot(const float* a, int64_t na, const float* b, int64_t nb);
Result<Evaluation> evaluate_dot(const double* a, int64_t na, const double* b, int64_t nb);

enum class Outcome {
  kMeasured,            // exact and observed finite: every field below is meaningful
  kNonFiniteInput,      // the exact result is NaN/±inf; `matches` says whether observed is the same
  kNonFiniteObserved,   // exact finite, observed NaN/±inf: an overflow only if f32/f64 overflowed too
};

struct ErrorReport {
  Outcome outcome = Outcome::kMeasured;
  Format format = Format::kFloat32;  // the observed value's format: ULPs and gamma_n are in this format
  double observed = 0;
  // When outcome != kMeasured the numbers below are NaN, never huge values posing as errors.
  double error = 0;        // observed - exact, rounded to nearest binary64 from the exact difference
  double ulp_error = 0;    // error / ulp(exact) in `format`, signed, one rounding; ulp(0) is the smallest
                           // subnormal
  double rel_error = 0;    // error / |exact|; 0 when both are 0, ±inf when only exact is 0
  double bound = 0;        // Evaluation::bound(format)
  double bound_ratio = 0;  // |error| / bound; 0 when error == 0, +inf when bound == 0 < |error|
  // kMeasured: |error| <= bound, i.e. rounding explains the deviation (DESIGN.md).
  // Otherwise: observed is exactly what the exact result gives in `format` (same NaN/inf, or an overflow
  // that correct rounding produces too).
  bool matches = true;
};

// Measures an observed float32 / float64 result against `e`.
ErrorReport assess(const Evaluation& e, float observed);
ErrorReport assess(const Evaluation& e, double observed);

}  // namespace saddlescope::reference
