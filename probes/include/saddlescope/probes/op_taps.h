// Op taps: sampled output elements of the ops a training step runs, and sampled elements of their
// weight gradients, measured against the exact values of reference/ (ops.csv: store/schema.h; summaries: analysis/op_summary.h).
//
// A model calls its ops through named taps ("encoder.fc1", "l0.lstm.i", "l0.lstm.i.sigmoid", "loss").
// The training loop, for the `ops` probe (probe_spec.h):
//
//   bool tap = taps.due(step);
//   if (tap) taps.arm(step);          before the forward
//   loss = model.loss(x); loss.backward();
//   if (tap) taps.record(step);       after backward, before anything changes the gradients
//   ...
//
// While armed, each tap call samples k output elements of its op (seeded by seed, step and op name;
// over every call of an op that runs several times per forward, e.g. once per PredNet frame) and copies
// to the host only what those elements need: a Linear's input row, weight row and bias; a conv's input
// patch, filter and bias; an activation's input; a loss's two operands. With wgrad it also samples k
// weight elements and, through a hook on the op output's gradient, copies the gradient columns/planes
// and the input columns/planes that dW needs (dW = Σ over calls, batch and positions of grad_out ·
// input); the observed value is the parameter's .grad after backward, so every call's contribution
// (every frame) is in it. With wgrad an mse_loss also samples k elements of its own gradient with
// respect to the prediction (phase dgrad, from a hook on its backward node), against g·2(p − t)/n from
// the operands the forward saw: a backward that reads a changed target is flagged beyond the bound.
// Copies from a CUDA device go to pinned memory without blocking; record()
// synchronises once. Between tap steps nothing is armed and no hook is registered: a model's cost is
// one test of armed() per op.
//
// Bounds are for the data's dtype: a TF32 run of a float32 model is measured against float32's bound,
// and its rows are flagged beyond it (not hidden).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "saddlescope/base/status.h"
#include "saddlescope/probes/probe_spec.h"

namespace saddlescope::probes {

// One op a model runs through a tap, described for a batch size before training starts.
struct TapOp {
  std::string name;     // "encoder.fc1", "l0.lstm.i", "l0.lstm.i.sigmoid", "loss", ...
  std::string kernel;   // linear | conv2d | sigmoid | tanh | relu | mse_loss
  int64_t outputs = 0;  // output elements per forward, summed over its calls
  int64_t weights = 0;  // weight elements; 0 for an op without weights (no wgrad phase)
  int64_t calls = 1;    // calls per forward (PredNet: one per frame)
};

// Stride, zero padding and dilation of a conv2d, the same along both axes.
struct ConvOptions {
  int64_t stride = 1, padding = 0, dilation = 1;
};

// Checks an `ops` spec against a model's ops: every name in only= must be one of them; k may not exceed
// an op's output elements (nor, with wgrad, its weight elements), except for a one-element op (the
// loss), which is tapped whole — or, with clamp=true, any op with fewer elements than k is sampled whole.
// Errors name the spec, the op and the numbers. Ok when `spec` is not ops.
Status check_op_taps(const ProbeSpec& spec, const std::vector<TapOp>& ops);

class OpTaps {
 public:
  // The taps of the `ops` spec among `specs` (none: taps that are never due) over `ops`, writing
  // <run_dir>/ops.csv (store::kOps). With `resume_from` >= 0, a resumed run: the rows of steps before
  // it are kept, later ones dropped. Errors: those of check_op_taps, and a CSV that cannot be written.
  // `generic`: a model that names no ops (`ops` empty, a TorchScript module): every ATen op the step
  // runs is observed through LibTorch's RecordFunction (op_observer.h says which are evaluated and how
  // they are named); k is clamped to each op's elements, only= selects by name or prefix after the
  // fact, wgrad=false keeps the forward rows only. Ops not evaluated get one row per (op, phase,
  // kernel) per tap step, flagged not_evaluated, with `terms` holding how often they ran.
  static Result<std::shared_ptr<OpTaps>> create(const std::vector<ProbeSpec>& specs, const std::vector<TapOp>& ops,
                                                const std::string& run_dir, int64_t resume_from = -1,
                                                bool generic = false);
  ~OpTaps();

  // Whether optimiser step `step` is a tap step.
  bool due(int64_t step) const;
  // Arms the taps for one forward and backward. REQUIRES: due(step), not armed.
  void arm(int64_t step);
  bool armed() const { return armed_; }

  // The taps models call while armed(). They return at once for ops that only= leaves out. Tensors are
  // the live graph tensors; the taps copy what they need and never change a value or a gradient.
  // x (N, in), weight (out, in), bias (out) or undefined, y (N, out) = x weightᵀ + bias.
  void linear(const std::string& name, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
              const at::Tensor& y);
  // x (N, C, H, W), weight (O, C, kh, kw), bias (O) or undefined, y (N, O, OH, OW). y_graph: where y's
  // gradient arrives (the weight-gradient phase hooks it), when y is a copy outside the graph — the
  // fused PredNet's convolutions run without their bias and y is their output plus it; default y.
  void conv2d(const std::string& name, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
              const ConvOptions& options, const at::Tensor& y, const at::Tensor& y_graph = {});
  // y = f(x) elementwise, f the op's kernel (sigmoid, tanh, relu); any equal shapes.
  void elementwise(const std::string& name, const at::Tensor& x, const at::Tensor& y);
  // loss = mean((prediction - target)^2), a scalar.
  void mse_loss(const std::string& name, const at::Tensor& prediction, const at::Tensor& target,
                const at::Tensor& loss);

  // Generic taps: the model's parameters by name, which name the ops that read them.
  void name_parameters(const std::vector<std::pair<std::string, at::Tensor>>& named);

  // Waits for the copies, evaluates every sample exactly, appends the rows to ops.csv and disarms.
  // REQUIRES: armed at `step`, backward done. Errors: an op that ran differently from its TapOp
  // (shape, calls), an unsupported dtype (float32 and float64 are), a weight without a gradient
  // though its output had one, a write error.
  Status record(int64_t step);
  // Seconds spent in arm, the tap calls and record.
  double seconds() const { return seconds_; }

  struct Impl;

 private:
  OpTaps();
  std::unique_ptr<Impl> impl_;
  bool armed_ = false;
  double seconds_ = 0;
};

}  // namespace saddlescope::probes
