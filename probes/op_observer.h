// Internal to op_taps.cpp: op taps for any model, through LibTorch's own observer of every dispatched op
// (a global at::RecordFunction callback with inputs and outputs), armed only for one tap step.
//
// Every op the step runs is seen, on every thread (CUDA backwards run on the engine's device threads).
// An op whose arithmetic reference/ evaluates exactly is tapped where it is outermost (aten::linear's
// aten::addmm, the aten::convolution a conv2d reaches, not the backend kernels below them): k of its
// output elements are sampled (seeded by the tap seed, step, op name and call) and the operands those
// elements read are copied to the host. Evaluated now:
//   mm, addmm (β = α = 1), bmm, mul, add and sub (α = 1)     dot products and sums, bound γ_n·Σ|terms|
//   convolution (2-D, any groups), convolution_backward    fwd; dgrad (grad_input), wgrad (grad_weight,
//                                                          grad_bias)
//   relu, sigmoid, tanh, exp                               elementwise, bound in ULPs
//   gelu (approximate 'none' and 'tanh'), and its         correctly rounded, a stated allowance (gelu.h)
//   gelu_backward (dgrad)
//   sum (over all or some dims), mse_loss (mean)           exact sums and means
//   softmax, log_softmax (the op's dim), layer_norm,       correctly rounded, bound a stated allowance
//   batch_norm (training mode), forward, where outermost   (reference/normalization.h)
//   _softmax_backward_data, _log_softmax_backward_data     exact, bound γ_{n+2}; correctly rounded, an
//   (where their autograd node runs them: dgrad)           allowance (reference/softmax_backward.h)
//   cross_entropy_loss (mean or sum; no class weights,      correctly rounded, an allowance
//   no label smoothing), whole                              (reference/normalization.h)
//   nll_loss_backward (no class weights): dgrad, sampled    −g/N, correctly rounded, bound γ_2 (ops.h)
//   among the rows' target elements
//   native_layer_norm_backward, native_batch_norm_backward: exact sums, bound γ_n·Σ|terms|; their input
//   the bias gradient (wgrad, kernel "….grad_bias")         and weight gradients are listed, not evaluated
// Every other op that computes floating values and that nothing tapped covers — layer and batch norm's
// input and weight gradients, batch norm in eval mode, a weighted or smoothed loss, in-place ops among
// them — is counted as "not evaluated" under its name, never dropped. Ops inside an evaluated one are
// not looked at, but those that make an autograd node still name its backward (cross_entropy_loss's
// log_softmax and nll_loss).
// Views (outputs that alias an input) move no values and are not counted.
//
// Names: a forward op that reads a parameter is named by the parameter's module and its ATen name
// ("encoder.fc1:addmm", "layer1.0.conv1:convolution"); any other by the TorchScript module that called
// it ("blocks.0:softmax", "relu" at the top); `call` counts its calls in the step. A backward op
// takes the name of the forward op whose autograd node runs it (linked by sequence number) and its own
// ATen name as the kernel; its phase is dgrad or wgrad when its output has the shape (or, for a matrix,
// the transposed shape) of exactly one of the forward op's inputs (wgrad when that input is a parameter
// or a view of one), else bwd.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>

#include "saddlescope/base/status.h"
#include "op_context.h"
#include "tap_capture.h"

namespace saddlescope::probes::internal {

// One evaluated ops.csv row, with the columns the op gives.
struct ObservedRow {
  std::string op, kernel;
  TapRow row;
};

// An op that ran but was not evaluated: its name, phase, ATen kernel and dtype, and its calls.
struct UnevaluatedOp {
  std::string op, phase, kernel, dtype;
  int64_t calls = 0;
};


class OpObserver {
 public:
  OpObserver(uint64_t seed, int64_t k, int64_t step, ParameterNames parameters);
  ~OpObserver();

  // Starts observing (one observer per process at a time). REQUIRES: not started.
  void start();
  // Stops observing; the copies may still be in flight on a CUDA device.
  void stop();

  // After stop() and the device's synchronisation: the evaluated rows, in the order the ops ran, and
  // the ops not evaluated, in the order they first ran. Errors: a reference evaluation that failed.
  Status evaluate(std::vector<ObservedRow>* rows, std::vector<UnevaluatedOp>* unevaluated);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace saddlescope::probes::internal
