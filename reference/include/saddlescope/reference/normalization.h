// Correctly rounded softmax, log_softmax and normalisation (layer norm, batch norm) elements.
//
// Each is one output element of a row or group of n inputs. The values are irrational except in a few
// cases named below, so the Evaluation carries, as elementwise.h's sigmoid does, the value correctly
// rounded to 128 bits in `exact` (exact_is_exact = false) and to binary32 / binary64 in f32 / f64: MPFR
// at a working precision w with a rigorous error estimate, doubled until mpfr_can_round proves the
// 129-bit rounding (Ziv's strategy). Rational values (a uniform row's 1/c, a normalisation whose σ² + ε
// is a square) are rounded from GMP rationals exactly, through a round-to-odd step.
//
// Bounds. These are not sums, so there is no a-priori bound in the sense of DESIGN.md; bound(f) is a
// stated *allowance* from a first-order error analysis (second-order terms, O(u²), dropped), computed
// in binary64 from the data:  bound(f) = u·unit_coefficient + γ_k·abs_sum + (kLibraryUlps + 2) ULPs of
// f's subnormals (for values that underflow), with u = unit_roundoff(f), k = rounding_steps. A library
// function (exp, log, rsqrt) is allowed kLibraryUlps ULPs (elementwise.h), a relative error of at most
// L = 2·kLibraryUlps·u (an ULP is at most 2u relative). Write d_j = x_j − m, m = max x, s_j = e^{d_j}/S,
// S = Σ_j e^{d_j}; sums are in any order (γ_n of their absolute terms).
//
//   softmax, relative to s_i: each e^{d_j} is off by 3u|d_j| + L relative (u|d_j| from rounding
//     x_j − m; 2u|d_j| more for a kernel that evaluates exp2(d·log2 e): the product's rounding and that
//     of the constant log2 e) — so S by Σ_j s_j(3u|d_j| + L) + γ_n (the sum of n positive terms), and
//     s_i = e^{d_i}/S by those two plus 2u (a division, or a reciprocal and a product):
//       bound = s_i·[u(3|d_i| + 3Σ_j s_j|d_j| + 2 + 2L/u) + γ_n]
//     unit_coefficient = s_i(3|d_i| + 3Σ s_j|d_j| + 2 + 4·kLibraryUlps), abs_sum = s_i, k = n.
//   log_softmax ℓ_i = d_i − log S, absolute: u|d_i| (x_i − m), the relative error of S as above
//     (it enters log S absolutely), L|log S| (the library's log), u|ℓ_i| (the final subtraction) and
//     u|log S| more for a kernel that rounds log S before subtracting it:
//       bound = u(|d_i| + |ℓ_i| + (1 + L/u)|log S| + 3Σ_j s_j|d_j| + L/u) + γ_n
//     unit_coefficient = the bracket, abs_sum = 1, k = n.
//   layer_norm / batch_norm y = z·w + b, z = (x_i − μ)·r, r = 1/sqrt(v), v = σ² + ε, over the group's n
//     values (μ the mean, σ² the biased variance, M1 = mean|x|):
//     μ̂ is off by γ_n·M1 (a sum and a division); σ̂² by A_v = γ_{2n+3}(σ² + 2·M1·σ), which covers a
//     two-pass variance (γ_{n+3}σ² + (μ̂ − μ)²) and Welford's (the running means' errors, γ_n·M1 each,
//     times |x_j − μ_j| ≤ σ-sized deviations, twice); r̂ by A_v/(2v) + u (v's sum, ε rounded to f) + L
//     (rsqrt, or a sqrt and a division); the centring and scaling, in any of the kernels' forms
//     ((x − μ)r, x·r − μ·r, or batch norm's x·(r w) + (b − μ·r w)), by u·r|w|(2|x_i| + 3|μ|); the product
//     by w, the addition of b and z's own rounding by u(2|z w| + |b| + |y|). Altogether
//       bound = γ_{2n+3}·[r|w|M1 + |z w|(σ² + 2M1σ)/(2v)]
//             + u·[|z w|(1 + L/u) + r|w|(2|x_i| + 3|μ|) + 2|z w| + |b| + |y|]
//     (γ_n ≤ γ_{2n+3} folds the mean's term in), k = 2n + 3. A one-pass E[x²] − μ² variance, whose error
//     grows with μ²/σ², is not covered: rows of such a kernel on offset data are flagged beyond it.
//
//   cross_entropy over N rows of C logits with targets t_r (aten::cross_entropy_loss, no class weights,
//     no label smoothing; the caller leaves out rows whose target is ignore_index): the mean (or sum)
//     of v_r = −ℓ_{r,t_r} = log S_r − d_{r,t_r} >= 0. A kernel computes log_softmax and then nll_loss's
//     mean, so each row carries the log_softmax allowance above (unit part and γ_C·1), the sum of the
//     N picked values γ_N·Σ|ℓ|, and the division one u|y|; with k = max(N, C) both γ terms fold into
//       bound = u·[(Σ_r uc_r)/N + |y|] + γ_k·(N + Σ_r|ℓ_{r,t_r}|)/N          (the sum: without /N).
//     The value: MPFR in Ziv's loop, each v_r as log_softmax's, summed by mpfr_sum (the terms have one
//     sign: no cancellation) and divided by N; exactly 0 when every row's target is its only kept term.
// Non-finite inputs: NaN anywhere, or +inf anywhere in a softmax row, gives Kind::kNaN (x − m is NaN
// there; for cross_entropy in any row, as is a row of only −inf; else a −inf target logit gives +inf); −inf entries of a softmax row (a causal mask) are valid terms e^{−inf} = 0, and at i give
// softmax 0 (exactly) and log_softmax −inf; a row of only −inf gives kNaN. Normalisation: a non-finite
// x_j, ε, or v = σ² + ε ≤ 0 (0/0 for a constant group with ε = 0) gives kNaN; a non-finite w or b gives
// the IEEE outcome of (z·w + b) (NaN, ±inf), with first_nonfinite = n for w and n + 1 for b.
//
// Range: a softmax term e^{d_j} with d_j < −1386 (below 2^−1999) is left out of the working sum, its
// at most n·2^−1999 relative part carried in the error estimate; a value below 2^−1990 in magnitude is
// flushed to 0 (exact_is_exact = false): far below binary64's subnormals, f32 and f64 are unaffected. Only
// a row whose value lies within ~2^−1900 of a 129-bit breakpoint *and* has such left-out terms could
// defeat the proof; there the rounding at 4096 bits is taken as is (stated, as elementwise.h's
// saturation is).
#pragma once

#include <cstdint>

#include "saddlescope/base/status.h"
#include "saddlescope/reference/evaluation.h"

namespace saddlescope::reference {

// True for kSoftmax, kLogSoftmax, kLayerNorm, kBatchNorm and kCrossEntropy.
bool is_normalization(Op op);

// softmax(row)_i = e^{x_i − m} / Σ_j e^{x_j − m} over row[0..n); n = rounding_steps = n. Exact cases: a
// row whose finite entries all equal x_i gives 1/c (c of them; exact_is_exact when c is a power of two
// and no term was left out), x_i = −inf gives 0. Errors (one line, naming the op): n < 1, row null,
// i outside [0, n).
Result<Evaluation> evaluate_softmax(const float* row, int64_t n, int64_t i);
Result<Evaluation> evaluate_softmax(const double* row, int64_t n, int64_t i);

// log_softmax(row)_i = (x_i − m) − log Σ_j e^{x_j − m}; n = rounding_steps = n. Exactly 0 when x_i is
// the only finite entry. Errors as evaluate_softmax.
Result<Evaluation> evaluate_log_softmax(const float* row, int64_t n, int64_t i);
Result<Evaluation> evaluate_log_softmax(const double* row, int64_t n, int64_t i);

// The cross entropy of rows[0..rows) of `classes` logits each (row-major) against targets[0..rows), each
// in [0, classes): the mean over rows (mean = true, reduction 'mean') or the sum. op = kCrossEntropy,
// n = rows·classes, rounding_steps = max(rows, classes). Errors (one line, naming "cross_entropy"): no
// rows or classes, a null span, a target outside [0, classes).
Result<Evaluation> evaluate_cross_entropy(const float* logits, int64_t rows, int64_t classes, const int64_t* targets,
                                          bool mean);
Result<Evaluation> evaluate_cross_entropy(const double* logits, int64_t rows, int64_t classes, const int64_t* targets,
                                          bool mean);

// One normalised element y = (x_i − μ)/sqrt(σ² + eps)·w + b over group[0..n), μ = Σx/n, σ² =
// Σ(x − μ)²/n (biased), w = *weight or 1, b = *bias or 0 (nullptr: absent); `op` (kLayerNorm for a row's
// normalised trailing dims, kBatchNorm for a channel's N·H·W values in training mode) only names it.
// eps is taken exactly as given (binary64, as ATen passes it). n = n, rounding_steps = 2n + 3. Exact
// cases: y = b when x_i = μ or w = 0; a rational y when σ² + eps is the square of a rational.
// Errors (one line): op not kLayerNorm / kBatchNorm, n < 1, group null, i outside [0, n).
Result<Evaluation> evaluate_normalization(Op op, const float* group, int64_t n, int64_t i, const float* weight,
                                          const float* bias, double eps);
Result<Evaluation> evaluate_normalization(Op op, const double* group, int64_t n, int64_t i, const double* weight,
                                          const double* bias, double eps);

}  // namespace saddlescope::reference
