// Correctly rounded elementwise activations: sigmoid, tanh, exp (through MPFR) and ReLU (exact).
//
// sigmoid(x) = 1 / (1 + e^-x), tanh and exp are irrational at every input but a few (0, ±inf), so the
// Evaluation carries the value correctly rounded to 128 bits in `exact` (exact_is_exact = false) and the
// value correctly rounded to binary32 and binary64 in f32 / f64 (Ziv's strategy: MPFR at a growing working
// precision until mpfr_can_round proves the rounding). ReLU is exact: max(x, 0).
//
// These are not sums, so there is no gamma_k bound. The bound is the error a math library may make, in
// ULPs of the value in the observed format (allowed_ulps). assess() reports the signed ULP error exactly
// as for a dot product; `matches` says whether it is within that allowance.
//
// Range: values beyond 2^±2000 do not fit the exact accumulators. exp(x) for x > 1386 is reported as
// Kind::kPlusInf (it overflows every format by ~900 binades); exp(x) and sigmoid(x) for x < -1386 have
// `exact` flushed to 0 (they are below 2^-2000, far under binary64's smallest subnormal 2^-1074, so f32,
// f64 and every ULP error are unaffected; only rel_error is then measured against 0).
#pragma once

#include "saddlescope/base/status.h"
#include "saddlescope/reference/evaluation.h"

namespace saddlescope::reference {

// The library error allowed in ULPs (of the exact value in format `observed`):
//   exp, tanh: 4 ULP. CUDA documents 2 ULP for expf/tanhf/exp/tanh (full precision, not --use_fast_math),
//     glibc documents at most 1-2 ULP; 4 leaves room for a vendor's vectorised variant (MKL/SLEEF
//     class, <= 4 ULP). A fast-math intrinsic (__expf: 2 + 1.16·|x| ULP) is flagged, as it should be.
//   sigmoid: 4 ULP. Kernels compose it as 1/(1 + exp(-x)): <= 2 ULP from exp (damped, since
//     d(log sigmoid)/d(log e^-x) < 1), 0.5 from the addition, 0.5 from the division, and rounding.
//   relu: 0, the IEEE max is exact; 0.5 when the observed format is narrower than the input (one rounding).
// These are stated allowances, not proofs: a value beyond them is reported, not necessarily wrong.
inline constexpr double kLibraryUlps = 4;
// REQUIRES: is_elementwise(op).
double allowed_ulps(Op op, Format input, Format observed);

// The Evaluation of op(x), n = 1. NaN gives Kind::kNaN; exp(+inf) Kind::kPlusInf; the other infinities
// give their finite limits (sigmoid(-inf) = 0, tanh(+inf) = 1, relu(-inf) = 0), exactly, with
// first_nonfinite = 0; relu(+inf) is Kind::kPlusInf. Error: op is not elementwise (is_elementwise).
Result<Evaluation> evaluate_elementwise(Op op, float x);
Result<Evaluation> evaluate_elementwise(Op op, double x);

}  // namespace saddlescope::reference
