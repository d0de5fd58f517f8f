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

#include <utility>
#include <vector>

#include <ATen/core/List.h>
#include <torch/types.h>

namespace saddlescope::trainer {

// Frame t's place in one buffer that holds a sequence's frames side by side, (frames·B, …), for a
// FrameConvolution (below): an op given a slot writes that frame's result there, so that the
// convolution's weight gradient reads all frames as one tensor where it would otherwise concatenate
// them (a copy of every convolution's inputs and output gradients over all frames: 715 MB at batch 16
// in a default PredNet step; docs/benchmarks.md for its time). Copies of a slot share the buffer; the
// first frame that asks makes it. The default slot is none: the op makes a tensor of its own.
struct FrameSlot {
  FrameSlot() {}  // none
  FrameSlot(c10::List<torch::Tensor> buffer, int64_t index, int64_t frames)
      : buffer(std::move(buffer)), index(index), frames(frames) {}

  c10::List<torch::Tensor> buffer;  // empty until a frame asks, then the one buffer
  int64_t index = 0, frames = 0;    // this frame's place in it, of `frames`; frames == 0: no slot

  bool defined() const { return frames > 0; }
  // An uninitialised tensor of `sizes` (B, …), `like`'s dtype and device and `format`, at this frame's
  // place; a tensor of its own without a slot or if the buffer was made for other sizes or options. It
  // shares the buffer's memory but not its version counter: autograd must not see one frame's write as
  // an in-place change of the others.
  torch::Tensor get(torch::IntArrayRef sizes, const torch::Tensor& like, torch::MemoryFormat format) const;
};

// The tensors as one, along dim 0 in the list's order: a view of their memory when they lie side by
// side in it in that order (each dense, with dim 0 outermost, as frames written to FrameSlots are), else
// torch::cat.
torch::Tensor join_frames(const std::vector<torch::Tensor>& parts);
// How many times join_frames has concatenated (process-wide): the test that PredNet's fused path
// writes every frame to its slot, which a slot handing out tensors of their own would break silently.
int64_t frames_concatenated();

// The ConvLSTM cell (prednet.h) after the gate convolution.
struct FusedCell {
  torch::Tensor c;    // (B, U, H, W) the new cell C = f·C_prev + i·g
  torch::Tensor h;    // (B, U, H, W) R = o·tanh(C)
  torch::Tensor act;  // (B, 4U, H, W) σ(zi), σ(zf), σ(zo), tanh(zg): no gradient (for taps and observers)
  torch::Tensor tc;   // (B, U, H, W) tanh(C): no gradient (for taps)
};
// pre: (B, 4U, H, W) the gates' pre-activations in the order i, f, o, g, or without the gate
// convolution's bias (4U), which the cell then adds (FrameConvolution::without_bias); c_prev (B, U, H, W).
// h_slot: where R goes; pre_grad_slot: where the backward puts pre's gradient. The bias gets no
// gradient here: its convolution forms it.
// REQUIRES: float32 or float64, one device, those shapes.
FusedCell fused_lstm_cell(const torch::Tensor& pre, const torch::Tensor& c_prev, const torch::Tensor& bias = {},
                          const FrameSlot& h_slot = {}, const FrameSlot& pre_grad_slot = {});

// PredNet's error units from the prediction's convolution output.
struct FusedError {
  torch::Tensor e;     // (B, 2U, H, W) [ReLU(A − Â); ReLU(Â − A)]
  torch::Tensor ahat;  // (B, U, H, W) Â = min(ReLU(y), pixel_max)
};
// y, a: (B, U, H, W); pixel_max: Â's clamp, +inf for none; bias (U): Â's convolution's, if y lacks it
// (as fused_lstm_cell's); e_slot: where E goes; y_grad_slot: where the backward puts y's gradient.
// REQUIRES: as fused_lstm_cell.
FusedError fused_error_units(const torch::Tensor& y, const torch::Tensor& a, double pixel_max,
                             const torch::Tensor& bias = {}, const FrameSlot& e_slot = {},
                             const FrameSlot& y_grad_slot = {});

// PredNet's A_l above layer 0 from conv_a's output y: maxpool2x2(ReLU(y)) with LibTorch's semantics
// (kernels/fused.h: the first maximum of a window wins, its gradient passes where y > 0). Exact: max
// and ReLU round nothing, so the result and y's gradient are LibTorch's bits.
// y: (B, U, H, W), H and W even; bias (U): conv_a's, if y lacks it (as fused_lstm_cell's);
// y_grad_slot: where the backward puts y's gradient. REQUIRES: float32 or float64.
torch::Tensor fused_relu_pool(const torch::Tensor& y, const torch::Tensor& bias = {},
                              const FrameSlot& y_grad_slot = {});

// y (B, C, H, W) + bias (C) over the channels in LibTorch ops: the sum a fused op forms as it reads a
// convolution's output made without_bias (FrameConvolution), the same bits; y itself without a bias.
torch::Tensor plus_bias(const torch::Tensor& y, const torch::Tensor& bias);

// torch::cat({e, r, above}, 1) (above optional: the top layer has none) written to `slot`, with cat's
// gradients: PredNet's gate input, the first frame-slotted input of its gate convolution.
torch::Tensor assemble_channels(const torch::Tensor& e, const torch::Tensor& r, const torch::Tensor& above,
                                const FrameSlot& slot);

// One Adam step (adam.h's formula) of param from its .grad, moments m and v, and float64 0-dim scalars
// lr, beta1_power, beta2_power (already advanced to this step), all on one device. One kernel.
// REQUIRES: param, its grad, m and v contiguous, of one shape and dtype (float32 or float64).
void fused_adam(const torch::Tensor& param, const torch::Tensor& m, const torch::Tensor& v, const torch::Tensor& lr,
                const torch::Tensor& beta1_power, const torch::Tensor& beta2_power, double beta1, double beta2,
                double eps);

// One convolution's weights applied to each frame of a sequence (stride 1, "same" zero padding). With
// `batched` its weight and bias gradients are formed once per backward, over all frames together, when
// the last frame's backward has run: one weight-gradient convolution and one bias reduction over
// frames × batch samples, instead of one of each per frame plus the adds that sum them (a PredNet step's
// largest share of kernels after the fusions, docs/benchmarks.md). The sum over frames then lies inside
// the convolution's reduction and rounds differently from LibTorch's frame-by-frame sum. A backward with
// grad mode on (create_graph: the HVPs) forms every gradient per frame with LibTorch's differentiable
// convolution backward. Without `batched` each call is torch::conv2d.
// Frames whose inputs and output gradients were written to this convolution's slots are read in place;
// others are concatenated. Slots lie in the order the frames' backward runs (last frame first), so the
// weight gradient's sum runs in the order of the concatenation: the same bits either way.
// One object per forward: it collects its frames' gradients until that forward's backward.
class FrameConvolution {
 public:
  FrameConvolution() = default;
  // weight (O, C, k, k), k odd; bias (O); frames: how many the sequence has (for the slots).
  FrameConvolution(const torch::Tensor& weight, const torch::Tensor& bias, bool batched, int64_t frames);
  // x (B, C, H, W) -> (B, O, H, W).
  torch::Tensor operator()(const torch::Tensor& x) const;
  // The same without the bias, for a fused op that adds bias_seen() as it reads the output: one kernel
  // fewer per frame (LibTorch adds a cuDNN convolution's bias in a kernel of its own), the same bits.
  // The bias's gradient is formed here as with operator(). REQUIRES: `batched`.
  torch::Tensor without_bias(const torch::Tensor& x) const;
  // The bias as the frames see it: the tensor to give that op. REQUIRES: `batched`.
  const torch::Tensor& bias_seen() const { return gathered_bias_; }
  // Where frame t's input and output gradient go (none without `batched`).
  FrameSlot input_slot(int64_t t) const { return slot(inputs_, t); }
  FrameSlot output_gradient_slot(int64_t t) const { return slot(output_gradients_, t); }
  // The weight and bias as given: their gradients are the sums over the frames.
  const torch::Tensor& weight() const { return weight_; }
  const torch::Tensor& bias() const { return bias_; }
  int64_t padding() const { return weight_.size(2) / 2; }

 private:
  FrameSlot slot(const c10::List<torch::Tensor>& buffer, int64_t t) const;
  torch::Tensor convolve(const torch::Tensor& x, bool add_bias) const;

  torch::Tensor weight_, bias_;
  torch::Tensor gathered_weight_, gathered_bias_;  // batched: what the frames see, whose backward adds
  c10::List<torch::Tensor> frames_;               // batched: each frame's input and output gradient
  c10::List<torch::Tensor> inputs_, output_gradients_;  // batched: the slots' buffers
  int64_t frames_in_sequence_ = 0;
};

}  // namespace saddlescope::trainer
