// The fused ops of `kernels = fused` (kernels/fused.h) as autograd functions: forward and backward are
// one kernel each on a CUDA tensor's stream, or one loop split over LibTorch's intra-op threads on the
// CPU. Their arithmetic (kernels/fused_math.h) is LibTorch's formula per element, with products feeding
// sums as fma and the device's own expf/tanhf: the results differ from the LibTorch ops' by rounding,
// which is what `kernels` compares.
//
// Double backward (the curvature probe's HVPs): a backward run with grad mode on (create_graph) forms
// its gradient from LibTorch ops on the saved inputs instead of the kernel, so that it is
// differentiable; an HVP of a fused model is the fused forward with LibTorch's derivatives.
#pragma once

#include <torch/types.h>

namespace saddlescope::trainer {

// The ConvLSTM cell (prednet.h) after the gate convolution.
struct FusedCell {
  torch::Tensor c;    // (B, U, H, W) the new cell C = f·C_prev + i·g
  torch::Tensor h;    // (B, U, H, W) R = o·tanh(C)
  torch::Tensor act;  // (B, 4U, H, W) σ(zi), σ(zf), σ(zo), tanh(zg): no gradient (for taps and observers)
  torch::Tensor tc;   // (B, U, H, W) tanh(C): no gradient (for taps)
};
// pre: (B, 4U, H, W) the gates' pre-activations in the order i, f, o, g; c_prev (B, U, H, W).
// REQUIRES: float32 or float64, one device, those shapes.
FusedCell fused_lstm_cell(const torch::Tensor& pre, const torch::Tensor& c_prev);

// PredNet's error units from the prediction's convolution output.
struct FusedError {
  torch::Tensor e;     // (B, 2U, H, W) [ReLU(A − Â); ReLU(Â − A)]
  torch::Tensor ahat;  // (B, U, H, W) Â = min(ReLU(y), pixel_max)
};
// y, a: (B, U, H, W); pixel_max: Â's clamp, +inf for none. REQUIRES: as fused_lstm_cell.
FusedError fused_error_units(const torch::Tensor& y, const torch::Tensor& a, double pixel_max);

// One Adam step (adam.h's formula) of param from its .grad, moments m and v, and float64 0-dim scalars
// lr, beta1_power, beta2_power (already advanced to this step), all on one device. One kernel.
// REQUIRES: param, its grad, m and v contiguous, of one shape and dtype (float32 or float64).
void fused_adam(const torch::Tensor& param, const torch::Tensor& m, const torch::Tensor& v, const torch::Tensor& lr,
                const torch::Tensor& beta1_power, const torch::Tensor& beta2_power, double beta1, double beta2,
                double eps);

}  // namespace saddlescope::trainer
