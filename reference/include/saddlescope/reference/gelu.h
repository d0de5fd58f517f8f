// Correctly rounded GELU elements: aten::gelu(x, approximate = 'none' | 'tanh').
//
//   gelu(x)      = x·Φ(x) = x/2·(1 + erf(x/√2))                               (Op::kGelu, "gelu")
//   gelu_tanh(x) = x/2·(1 + tanh(k(x + c·x³))), k = √(2/π), c = 0.044715     (Op::kGeluTanh, "gelu_tanh")
//
// Both are irrational at every finite x ≠ 0, so the Evaluation carries, as elementwise.h's sigmoid does,
// the value correctly rounded to 128 bits in `exact` (exact_is_exact = false) and to binary32/binary64 in
// f32 / f64 (Ziv's strategy: MPFR at a growing precision, with a rigorous error estimate, until
// mpfr_can_round proves the 129-bit rounding). MPFR evaluates the forms without cancellation:
// x/2·erfc(−x/√2) and x/(1 + e^{−2k(x + c·x³)}).
//
// Bound. Not a fixed number of ULPs: kernels evaluate the formulas above literally (PyTorch's CPU and
// CUDA: x·0.5·(1 + erf(x·M_SQRT1_2))), and for x < 0 the sum 1 + erf (or 1 + tanh) cancels, so their
// errors are absolute, of order u·|x|, while the value decays like e^{−x²/2}. bound(f) is therefore a
// stated first-order allowance in the form of normalization.h's, u·unit_coefficient plus
// (kLibraryUlps + 2) ULPs of f's subnormals (rounding_steps = 0, so no γ term). With F = erf(x/√2) (or
// T = tanh(k(x + c·x³))) and L = 2·kLibraryUlps·u the library's relative error (elementwise.h's
// kLibraryUlps = 4 ULPs: CUDA documents 2 ULP for erff/tanhf, glibc 1-2; an ULP is at most 2u relative):
//   - the argument: x·(1/√2) rounds twice (the constant, the product), 2u relative; erf's conditioning
//     |z·erf'(z)| = (2/√π)|z|e^{−z²} <= 0.484 turns that into <= 0.97u absolute in F. For tanh the inner
//     k(x + c·x³) rounds at most 7 times (x³ twice, the constants k and c, c·x³, the sum of two terms of
//     one sign, the product by k), 7u relative, and |w·tanh'(w)| <= 0.449 turns it into <= 3.2u in T;
//   - the library: L·max(|F|, |1 + F|) (erf's error, or erfc's for a kernel that computes Φ by erfc);
//   - 1 + F rounds: u·|1 + F|; the products by x and 0.5: 2u·|value|.
//   unit_coefficient = |x|/2·(C + 2·kLibraryUlps·max(|F|, |1 + F|) + |1 + F|) + 2|value|,
//   C = 1 (erf) or 3.2 (tanh), computed in binary64.
// A fast-math variant (__expf-based tanh: 2 + 1.16|x| ULP) can exceed it and is flagged, as it should be.
//
// Range and non-finite inputs: NaN gives Kind::kNaN, +inf Kind::kPlusInf, −inf the limit 0 (exactly,
// first_nonfinite = 0; a kernel's literal −inf·0 = NaN is then reported as a non-finite observation).
// For x >= 20 the value is x·(1 − δ) with δ < 2^-288, which rounds to x at 128 bits and in every format
// (stated, as elementwise.h's saturation). For x < 0 with |value| certainly below 2^-2000 (|x|/2·e^{−x²/2},
// or |x|·e^{2w}) `exact` is flushed to 0, far under binary64's subnormals.
// Backward (Op::kGeluBackward, kGeluTanhBackward: "gelu_backward", "gelu_tanh_backward"), g·gelu'(x):
//   gelu'(x)      = Φ(x) + x·φ(x)
//   gelu_tanh'(x) = (1 + T)/2 + x/2·(1 − T²)·k(1 + 3c·x²),  T = tanh(k(x + c·x³))
// correctly rounded as the forward (MPFR without cancellation in each term: erfc for Φ, 1/(1 + e^{−2w})
// for (1 + T)/2, sech² for 1 − T²; the two terms of a sum may cancel near gelu's minimum, x ≈ −0.75,
// which Ziv's loop absorbs: the error estimate is absolute). Allowance, first order, for PyTorch's CPU
// and CUDA forms (cdf = ½(1 + erf(x/√2)), pdf = e^{−x²/2}/√(2π), dy·(cdf + x·pdf); and the tanh form's
// left_derivative ½(1 + T) + ½x·(1 − T·T)·k(1 + 3c·x²)):
//   erf:  |g|·[½(1 + L·max(|F|, |1 + F|) + |1 + F|) + |xφ|(x²/2 + 3 + L) + |d|] + |value|
//         (cdf as the forward's; x·pdf: x² rounds, exp's conditioning x²/2, the library, the constant
//         and two products; the sum; the product by g)
//   tanh: |g|·[½(δT + |1 + T|) + ½|x|k(1 + 3cx²)·(2|T|δT + T² + |1 − T²|) + 9|R| + |d|] + |value|,
//         δT = 3.2 + L|T| (the forward's T error in units of u), R the second term
// in units of u (unit_coefficient, L = 2·kLibraryUlps), abs_sum = |value|, rounding_steps = 0. g = 0
// gives 0 and x = 0 gives g/2, exactly; a value certainly below 2^-2000 is flushed to 0. Non-finite
// inputs: the IEEE outcome of g·gelu'(x) with gelu'(+inf) = 1, gelu'(−inf) = 0, first_nonfinite 0 for
// g, 1 for x.
#pragma once

#include "saddlescope/base/status.h"
#include "saddlescope/reference/evaluation.h"

namespace saddlescope::reference {

// True for kGelu and kGeluTanh.
bool is_gelu(Op op);
// True for kGeluBackward and kGeluTanhBackward.
bool is_gelu_backward(Op op);

// The Evaluation of gelu(x) (op = kGelu) or its tanh approximation (op = kGeluTanh), n = 1.
// Error (one line): op is not kGelu / kGeluTanh.
Result<Evaluation> evaluate_gelu(Op op, float x);
Result<Evaluation> evaluate_gelu(Op op, double x);

// One element of gelu's input gradient, aten::gelu_backward(grad, x, approximate): g·gelu'(x) with
// `form` kGelu or kGeluTanh naming the forward (op = kGeluBackward / kGeluTanhBackward), n = 1.
// Error (one line): form is not kGelu / kGeluTanh.
Result<Evaluation> evaluate_gelu_backward(Op form, float grad, float x);
Result<Evaluation> evaluate_gelu_backward(Op form, double grad, double x);

}  // namespace saddlescope::reference
