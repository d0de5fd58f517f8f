// Exact evaluation of single output elements of the ops a training step runs: a matmul element, a
// conv2d output element, a conv2d weight-gradient element, and the mean-squared and mean-absolute losses.
//
// The first three are dot products over gathered operands and share evaluate_dot's fast path, bound and
// non-finite rules: bound = gamma_k · sum|a_i b_i| with k the number of terms (evaluation.h). Inputs are
// plain contiguous spans with their lengths, checked against the shapes given; shapes in comments.
#pragma once

#include <cstdint>

#include "saddlescope/base/status.h"
#include "saddlescope/reference/evaluation.h"

namespace saddlescope::reference {

// C[i][j] = sum_k A[i][k] · B[k][j]: the row a_row[k · a_stride] times the column b_col[k · b_stride],
// k < depth (a_stride is 1 for a row-major A, b_stride is B's row length). n = rounding_steps = depth.
// Errors: depth < 0, strides < 1, null pointers with depth > 0.
Result<Evaluation> evaluate_matmul_element(const float* a_row, int64_t a_stride, const float* b_col,
                                           int64_t b_stride, int64_t depth);
Result<Evaluation> evaluate_matmul_element(const double* a_row, int64_t a_stride, const double* b_col,
                                           int64_t b_stride, int64_t depth);

// The geometry of a 2-D convolution (PyTorch's conv2d semantics, zero padding).
struct Conv2dGeometry {
  int64_t channels = 1;                 // C, input channels
  int64_t height = 1, width = 1;        // H, W of the input
  int64_t kernel_h = 1, kernel_w = 1;   // kh, kw
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;

  // floor((H + 2 pad - dilation (k - 1) - 1) / stride) + 1; may be <= 0 for a kernel larger than the
  // padded input (validate() refuses that).
  int64_t out_height() const;
  int64_t out_width() const;
};

// Ok, or "conv2d: <field> must be ..., got ..." for non-positive sizes, strides or dilations, negative
// padding, or an empty output.
Status validate(const Conv2dGeometry& g);

// out[oy][ox] = bias + sum_{c, ky, kx} weight[c][ky][kx] · input[c][oy·sh - ph + ky·dh][ox·sw - pw + kx·dw]
// for one batch item and one output channel. input: (C, H, W); weight: (C, kh, kw); bias: one value or
// nullptr. Terms that fall in the zero padding add exactly 0 and are left out: n = rounding_steps = the
// in-bounds terms, plus 1 for a bias (added as the term bias · 1, so first_nonfinite counts it last).
// Errors: validate(g), span lengths not C·H·W / C·kh·kw (named with both numbers), (oy, ox) outside
// out_height() × out_width().
Result<Evaluation> evaluate_conv2d_element(const float* input, int64_t input_len, const float* weight,
                                           int64_t weight_len, const float* bias, const Conv2dGeometry& g,
                                           int64_t oy, int64_t ox);
Result<Evaluation> evaluate_conv2d_element(const double* input, int64_t input_len, const double* weight,
                                           int64_t weight_len, const double* bias, const Conv2dGeometry& g,
                                           int64_t oy, int64_t ox);

// dL/dW[o][c][ky][kx] = sum_{b, oy, ox} grad_out[b][o][oy][ox] · input[b][c][oy·sh - ph + ky·dh][...]:
// the weight gradient where GPU atomics live. Takes the two planes a tap copies: input_plane (N, H, W)
// of input channel c and grad_plane (N, OH, OW) of output channel o (g.channels is not used).
// Padding terms are left out as for the forward element. Errors: validate(g), batch < 0, span lengths,
// (ky, kx) outside the kernel.
Result<Evaluation> evaluate_conv2d_weight_grad(const float* input_plane, int64_t input_len,
                                               const float* grad_plane, int64_t grad_len, int64_t batch,
                                               const Conv2dGeometry& g, int64_t ky, int64_t kx);
Result<Evaluation> evaluate_conv2d_weight_grad(const double* input_plane, int64_t input_len,
                                               const double* grad_plane, int64_t grad_len, int64_t batch,
                                               const Conv2dGeometry& g, int64_t ky, int64_t kx);

// mean((x - y)^2) and mean(|x - y|) over n = nx elements, exactly: sum (x_i - y_i)^2 is a dyadic, held
// in `exact` with `divisor` the odd part of n (evaluation.h), and f32/f64 round the quotient once.
// Bounds (a recursive evaluation in format f: x_i - y_i, squaring, n - 1 additions, the division):
//   MSE: gamma_{n+3} · value (rounding_steps = n + 3), MAE: gamma_{n+1} · value (rounding_steps = n + 1),
// with abs_sum = the value rounded to binary64 (every term is non-negative).
// Empty inputs give Kind::kNaN (0 / 0, as a framework's mean of nothing). NaN/Inf inputs: NaN if any
// input is NaN or some x_i and y_i are infinities of one sign, otherwise +inf.
// Errors: nx != ny (both lengths named), negative lengths, null pointers with length > 0.
Result<Evaluation> evaluate_mse_loss(const float* x, int64_t nx, const float* y, int64_t ny);
Result<Evaluation> evaluate_mse_loss(const double* x, int64_t nx, const double* y, int64_t ny);
Result<Evaluation> evaluate_mae_loss(const float* x, int64_t nx, const float* y, int64_t ny);
Result<Evaluation> evaluate_mae_loss(const double* x, int64_t nx, const double* y, int64_t ny);

// One element of the MSE loss's gradient with respect to its first input: g · 2(x − y)/n, where g is the
// gradient arriving at the loss (1 when the loss is the objective) and n the loss's element count; the
// exact value as exact / divisor (divisor the odd part of n). What a framework's backward computes: the
// difference, the constant 2/n (rounded itself, unless n is a power of two) and two products, so
// rounding_steps = 5 and the bound is gamma_5 · |value| (abs_sum = |value| rounded to binary64).
// A gradient computed against another target than the forward's lies far beyond it. NaN/Inf inputs give
// the IEEE outcome of (x − y)·g. Errors: n < 1.
Result<Evaluation> evaluate_mse_loss_grad(float x, float y, float g, int64_t n);
Result<Evaluation> evaluate_mse_loss_grad(double x, double y, double g, int64_t n);

// The target element of a row of nll_loss's gradient with respect to its input (log-probabilities):
// −g/n, where g is the gradient arriving at the loss and n the count of rows the mean divides by (1 for
// reduction 'sum'); every other element of the gradient is exactly 0. No class weights. The exact value
// as exact / divisor, as evaluate_mse_loss_grad's. What a backward computes: −g, then a division by n
// (or a product by its rounded reciprocal), so rounding_steps = 2 and the bound is gamma_2 · |value|.
// NaN/Inf g gives its IEEE outcome. Errors: n < 1.
Result<Evaluation> evaluate_nll_loss_grad(float g, int64_t n);
Result<Evaluation> evaluate_nll_loss_grad(double g, int64_t n);

}  // namespace saddlescope::reference
