// PredNet (Lotter, Kreiman & Cox 2016, arXiv:1605.08104): a stack of L layers l = 0..L-1, each with
// targets A_l, predictions Â_l, errors E_l and representation units R_l (a convolutional LSTM).
// Per frame t (Algorithm 1 of the paper), first top-down, then bottom-up:
//   R_l  = ConvLSTM(E_l at t-1, R_l at t-1, upsample(R_{l+1} at t))   (no upsample input at the top)
//   Â_l  = ReLU(conv_ahat(R_l)), for l = 0 also clipped at pixel_max (the paper's SatLU)
//   A_0  = x_t;  A_l = maxpool2x2(ReLU(conv_a(E_{l-1})))  for l >= 1
//   E_l  = [ReLU(A_l - Â_l); ReLU(Â_l - A_l)]                          (2 * stack_sizes[l] channels)
// with E, R and the LSTM cells zero before frame 0. The ConvLSTM uses the standard sigmoid gates
// (the paper's ConvLSTM; the authors' Keras code defaults to hard_sigmoid):
//   z = [E_l(t-1); R_l(t-1); upsample(R_{l+1}(t))]
//   i = σ(conv_i(z)), f = σ(conv_f(z)), o = σ(conv_o(z)), g = tanh(conv_c(z))
//   C_l = f ⊙ C_l(t-1) + i ⊙ g,  R_l = o ⊙ tanh(C_l)
// So Â_0 at frame t is the prediction of x_t from x_0 .. x_{t-1}: "the next frame".
//
// Stable names. Parameters (named_parameters(), "<module>.weight" / "<module>.bias"):
//   l<l>.conv_a      E_{l-1} -> A_l, l >= 1 only (A_0 is the input frame)
//   l<l>.lstm.i      input gate        l<l>.lstm.f   forget gate
//   l<l>.lstm.o      output gate       l<l>.lstm.c   candidate cell input g
//   l<l>.conv_ahat   R_l -> Â_l
// Activations, passed to the tap (set_tap) per frame t, each (batch, channels, H_l, W_l) with
// H_l = height / 2^l: l<l>.lstm.i / .f / .o / .c (after their nonlinearity), l<l>.cell (C_l), l<l>.r,
// l<l>.ahat, l<l>.a, l<l>.e. Losses (prednet_loss): "L0", "Lall", "pixel_mse".
// Op taps (probes/op_taps.h, set_op_taps), each called once per frame: the convolutions l<l>.conv_a,
// l<l>.conv_ahat and l<l>.lstm — the four gate convolutions run as one, their filters stacked on the
// output channels in the order i, f, o, c (so its output channels [0, r) are gate i, [r, 2r) f, ...; its
// weight gradient is that of the stacked filters, whose slices are the gates' .grad exactly) — and the
// activations l<l>.lstm.ifo.sigmoid (gates i, f, o), l<l>.lstm.c.tanh, l<l>.cell.tanh,
// l<l>.conv_ahat.relu, l<l>.conv_a.relu. With options.fused the same ops but the two ReLUs, which the
// fused error units compute with Â's clamp and the fused pool with the max-pool: sigmoid and tanh are
// read from the fused cell's saved activations (ReLU, clamp and max round nothing, in any implementation).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>

#include "saddlescope/base/status.h"
#include "saddlescope/probes/op_taps.h"
#include "saddlescope/probes/symmetry.h"

namespace saddlescope::trainer {

class FrameConvolution;  // trainer/fused.h

struct PredNetOptions {
  std::vector<int64_t> stack_sizes = {1, 32, 64, 128};    // channels of A_l; [0] = image channels
  std::vector<int64_t> r_stack_sizes = {1, 32, 64, 128};  // channels of R_l, one per layer
  int64_t height = 64;                                    // frame height, divisible by 2^(L-1)
  int64_t width = 64;                                     // frame width, divisible by 2^(L-1)
  int64_t filter_size = 3;                                // odd side of every convolution ("same" padding)
  int64_t nt = 10;                                        // frames per training sequence, >= 2
  std::string loss = "L0";                                // L0 | Lall | pixel_mse
  double pixel_max = 1.0;                                 // Â_0 is clipped at this (inputs are in [0, 1])
  bool zero_bias = false;                                 // reset_parameters: biases 0 (the authors' Keras
                                                          // and the seed study's Chainer init), not PyTorch's
  bool fused = false;  // kernels = fused: the ConvLSTM cell after its gate convolution, and the error
                       // units with Â's ReLU and clamp, A's ReLU and max-pool, each one fused op;
                       // each convolution's weight gradients formed once over all frames
                       // (trainer/fused.h); on CUDA with channels-last activations
  bool channels_last_on_cpu = false;  // fused: channels-last on the CPU too (tests: CUDA's layout in CI)
};

// Errors name the option: "prednet.height must be divisible by 2^(layers-1) = 8 (4 layers), got 60",
// "prednet.nt must be >= 2, got 1", "prednet.loss must be one of L0, Lall, pixel_mse, got 'l2'".
Status validate(const PredNetOptions& options);

struct PredNetOutput {
  torch::Tensor prediction;  // (batch, T, C0, H, W): Â_0 per frame, frame t predicting x_t
  torch::Tensor errors;      // (batch, T, L): mean over E_l's units (channels, H_l, W_l), >= 0; with
                             // options.fused only the layers options.loss weighs carry a gradient
};

// Observes named activations during forward: (name, frame t, value). Values are live graph tensors;
// a tap that keeps them should detach() (or clone) them.
using PredNetTap = std::function<void(const std::string& name, int64_t t, const torch::Tensor& value)>;

class PredNetImpl : public torch::nn::Module {
 public:
  // REQUIRES: validate(options).ok() (aborts otherwise: check options at the boundary).
  explicit PredNetImpl(const PredNetOptions& options);

  // x: (batch, T, C0, H, W), T >= 1, values in [0, pixel_max], the model's dtype and device.
  // T need not equal options.nt (evaluation may run longer sequences).
  PredNetOutput forward(const torch::Tensor& x);

  // PyTorch's default Conv2d initialisation (weights and biases uniform in ±1/sqrt(fan_in), fan_in =
  // in_channels * k * k) drawn from `gen`, module by module in the order l0, l1, ... and within a layer
  // conv_a, lstm.i, lstm.f, lstm.o, lstm.c, conv_ahat (weight, then bias). With options.zero_bias the
  // biases are 0 and not drawn (the weights are the same as without it). Call on the CPU before moving
  // the model to a device: then every device starts bit-identical.
  // Why zero_bias exists: with one R_0 channel (grey defaults) conv_ahat of layer 0 is a 3x3, 1 -> 1
  // convolution whose PyTorch bias (±1/3) outweighs its input; when it is negative, Â_0 = ReLU(...) is 0
  // everywhere, E_0 is then constant and every gradient is exactly 0: the run never moves.
  void reset_parameters(at::Generator& gen);

  // Installs (or, with nullptr, removes) the activation observer.
  void set_tap(PredNetTap tap) { tap_ = std::move(tap); }
  // Routes forward()'s convolutions and activations through op taps (nullptr: none).
  void set_op_taps(std::shared_ptr<probes::OpTaps> taps) { op_taps_ = std::move(taps); }
  // The ops forward() runs through op taps for `batch` sequences of `frames` frames.
  std::vector<probes::TapOp> tap_ops(int64_t batch, int64_t frames) const;

  // The representation units R_l of each layer with at least two channels, named l<l>.r, for the
  // symmetry probe and init duplicate. Channel c's incoming weights are output channel c of the four
  // gate convolutions (weights, then biases, in the order i, f, o, c); its outgoing weights are input
  // channel c of every convolution that reads R_l: the layer's own gates (recurrent), its conv_ahat and,
  // through the upsampling, the gates of layer l-1. Copies, not views: write with duplicate_channels.
  std::vector<probes::LayerUnits> unit_layers() const;
  // R_l's channels[1..] made copies of channels[0]: rows of the gates first, then every column that
  // reads them (so a recurrent weight's four entries among two copies end equal).
  // REQUIRES: no grad mode, 0 <= l < layers(), channels within r_stack_sizes[l].
  void duplicate_channels(int64_t l, const std::vector<int64_t>& channels);

  const PredNetOptions& options() const { return options_; }
  int64_t layers() const { return static_cast<int64_t>(options_.stack_sizes.size()); }

 private:
  struct Layer {
    torch::nn::Conv2d conv_a{nullptr};  // absent (null) for l = 0
    torch::nn::Conv2d i{nullptr}, f{nullptr}, o{nullptr}, c{nullptr};
    torch::nn::Conv2d conv_ahat{nullptr};
  };
  // Views of every weight that reads R_l, each with R_l's channels on dim 1 (unit_layers).
  std::vector<torch::Tensor> readers_of_r(int64_t l) const;
  void tap(const char* what, int64_t l, int64_t t, const torch::Tensor& v) const;
  // c(in), through the op tap l<l>.<what> when taps are armed. Fused: without the bias, which the fused
  // op that reads the output adds (FrameConvolution::without_bias).
  torch::Tensor conv(const FrameConvolution& c, const torch::Tensor& in, int64_t l, const char* what) const;
  // f(in), through the op tap l<l>.<what> when taps are armed.
  enum class Activation { kSigmoid, kTanh, kRelu };
  torch::Tensor activate(Activation f, const torch::Tensor& in, int64_t l, const char* what) const;
  // y = f(in) elementwise, computed elsewhere, through the op tap l<l>.<what> when taps are armed.
  void tap_elementwise(int64_t l, const char* what, const torch::Tensor& in, const torch::Tensor& y) const;

  PredNetOptions options_;
  std::vector<Layer> layers_;
  PredNetTap tap_;
  std::shared_ptr<probes::OpTaps> op_taps_;
};
TORCH_MODULE(PredNet);

// Validates, then builds the model (weights still need reset_parameters).
Result<PredNet> make_prednet(const PredNetOptions& options);

// Per-layer weights of a loss over E: "L0" -> (1, 0, 0, ...), "Lall" -> (1, 0.1, 0.1, ...).
// REQUIRES: loss is "L0" or "Lall", layers >= 1.
std::vector<double> prednet_layer_weights(const std::string& loss, int64_t layers);

// The training loss, a scalar averaged over the batch; t = 0 has weight 0 (nothing has been seen yet),
// every later frame 1/(T-1):
//   "L0", "Lall": sum_t w_t sum_l λ_l errors[b, t, l]  (the original, weighted mean of E units)
//   "pixel_mse":  sum_t w_t mean((Â_0(t) - x_t)^2)     (the seed study's: prediction vs next frame)
// REQUIRES: T >= 2, x the forward's input, loss valid.
torch::Tensor prednet_loss(const PredNetOutput& out, const torch::Tensor& x, const std::string& loss);

// pixel_mse on frames 1..T-1 already cut out: mean((Â_0 - x)^2) as one torch::mse_loss, whose backward
// node the op taps hook for the loss's gradient (dgrad) — the same op the planted fault's loss runs.
torch::Tensor pixel_mse(const torch::Tensor& later_prediction, const torch::Tensor& later_frames);

// Held-out evaluation, per frame t = 1 .. T-1 (entry t-1), each a mean over batch and pixels.
struct FrameScores {
  std::vector<double> model_mse;     // mean((Â_0(t) - x_t)^2)
  std::vector<double> previous_mse;  // mean((x_{t-1} - x_t)^2): the copy-the-last-frame baseline
  double model_mean = 0;             // mean over t >= 1 of model_mse
  double previous_mean = 0;          // mean over t >= 1 of previous_mse
};
// REQUIRES: prediction and x (batch, T, C, H, W), T >= 2. Reads values back to the host (synchronises).
FrameScores score_predictions(const torch::Tensor& prediction, const torch::Tensor& x);

}  // namespace saddlescope::trainer
