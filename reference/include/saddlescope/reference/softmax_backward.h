// One element of softmax's and log_softmax's input gradients, as autograd computes them from the forward's
// output: aten::_softmax_backward_data / _log_softmax_backward_data(grad_output, output, dim).
//
//   grad_input_i = y_i · (g_i − D),  D = Σ_j g_j y_j  over the row along dim,
//
// with y the softmax output and g the gradient arriving at it. Given the binary floats y and g the value
// is rational, a dyadic: D exactly (the Superaccumulator, as evaluate_dot), then the difference and the
// product exactly, so `exact` is the value itself (exact_is_exact = true) and f32 / f64 its correct
// roundings, as for a dot product.
//
// Bound (a-priori, as ops.h's; any order of the sum, fused or not). Write A = Σ_j |g_j y_j| and u the
// unit roundoff of format f. A kernel evaluates D̂ with |D̂ − D| <= γ_n·A (a recursive sum of n rounded
// products), then either
//   (a) r̂ = fl(y_i · fl(g_i − D̂)):  r̂ − r = y_i[(g_i − D)((1+δ1)(1+δ2) − 1) + (D − D̂)(1+δ1)(1+δ2)], or
//   (b) r̂ = fl(fl(y_i g_i) − fl(y_i D̂)) (PyTorch's CUDA form, the products y·g reused for D):
//       r̂ − r = y_i g_i((1+ε1)(1+ε3) − 1) − y_i[(D̂ − D)(1+ε2)(1+ε3) + D((1+ε2)(1+ε3) − 1)],
// with |δ|, |ε| <= u. In both, (1+u)² − 1 <= γ_2 and |D| <= A, so
//   |r̂ − r| <= |y_i|·[γ_2|g_i| + (γ_n(1 + γ_2) + γ_2)·A] <= γ_{n+2}·|y_i|·(|g_i| + A)
// (γ_n + γ_2 + γ_n γ_2 <= γ_{n+2}, Higham's Lemma 3.3). So rounding_steps = n + 2 and abs_sum =
// |y_i|·(|g_i| + A), rounded to nearest binary64; the bound is γ_{n+2}·abs_sum (evaluation.h), barring
// underflow, as for a dot product.
//
// Non-finite inputs: any NaN/Inf among g and y makes D non-finite (a product inf·0 is NaN); the result is
// the IEEE outcome of y_i·(g_i − D) (NaN, ±inf), with first_nonfinite the smallest j whose g_j or y_j is
// not finite.
// log_softmax's input gradient (kLogSoftmaxBackward), from the forward's output ℓ and the gradient g:
//
//   grad_input_i = g_i − e^{ℓ_i}·G,  G = Σ_j g_j,
//
// irrational unless G = 0, ℓ_i = 0 or ℓ_i = −inf (then exactly g_i, g_i − G, g_i): G exactly (a dyadic),
// then MPFR at a growing precision in Ziv's loop as normalization.h's (e^{ℓ_i} and the product within
// 2^-p relative each, the subtraction within 2^-p|value|), correctly rounded to 128 bits in `exact`
// (exact_is_exact = false) and to f32 / f64. Allowance, first order as normalization.h's (L = 2·
// kLibraryUlps·u, exp's relative error): a kernel's Ĝ is off by γ_n·Σ|g_j|, which e^{ℓ_i} carries;
// exp's L and the product's u make e^{ℓ_i}·Ĝ off by (L + u)·|e^{ℓ_i} G|; the subtraction rounds once more:
//   bound = u·[(1 + L/u)·|e^{ℓ_i}G| + |value|] + γ_n·e^{ℓ_i}Σ|g_j|
//   unit_coefficient = (1 + 2·kLibraryUlps)·|e^{ℓ_i}G| + |value|, abs_sum = e^{ℓ_i}Σ_j|g_j|, k = n.
// Non-finite inputs: a NaN/Inf g_j, or ℓ_i NaN or +inf, give the IEEE outcome of g_i − e^{ℓ_i}·G, with
// first_nonfinite the first such g_j, else n (for ℓ_i); ℓ_i = −inf (a masked entry) is valid: g_i.
#pragma once

#include <cstdint>

#include "saddlescope/base/status.h"
#include "saddlescope/reference/evaluation.h"

namespace saddlescope::reference {

// y_i·(g_i − Σ_j g_j y_j) over grad_output[0..n) and output[0..n) (one row along the softmax's dim);
// op = kSoftmaxBackward, n = n, rounding_steps = n + 2, exact_is_exact = true for finite inputs.
// Errors (one line, naming "softmax_backward"): n < 1, a null span, i outside [0, n).
Result<Evaluation> evaluate_softmax_backward(const float* grad_output, const float* output, int64_t n, int64_t i);
Result<Evaluation> evaluate_softmax_backward(const double* grad_output, const double* output, int64_t n, int64_t i);

// g_i − e^{ℓ_i}·Σ_j g_j over grad_output[0..n), reading output[i] = ℓ_i only; op = kLogSoftmaxBackward,
// n = rounding_steps = n. Errors (one line, naming "log_softmax_backward") as evaluate_softmax_backward.
Result<Evaluation> evaluate_log_softmax_backward(const float* grad_output, const float* output, int64_t n,
                                                 int64_t i);
Result<Evaluation> evaluate_log_softmax_backward(const double* grad_output, const double* output, int64_t n,
                                                 int64_t i);

}  // namespace saddlescope::reference
