// Internal to op_taps.cpp: what one tapped op copies during one tap step, and its exact evaluation.
//
// A capture is created at the op's first call of a tap step, is given every call (on_call), receives
// gradient planes from hooks during backward, and after record()'s synchronisation turns its copies
// into rows (evaluate). A Linear is a 1x1 convolution of a 1x1 image, so ConvCapture serves both.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "saddlescope/base/status.h"
#include "saddlescope/probes/op_taps.h"
#include "saddlescope/reference/evaluation.h"
#include "saddlescope/reference/ops.h"

namespace saddlescope::probes::internal {

// One ops.csv row, less the columns the op gives (step, op, kernel, dtype).
struct TapRow {
  std::string phase;  // fwd | wgrad | dgrad
  std::string index;  // coordinates joined by ':'
  int64_t call = -1;  // the call of the op (-1: every call, for wgrad)
  double observed = 0;
  double exact = 0;   // correctly rounded to binary64 (NaN/±inf when the exact result is)
  int64_t terms = 0;
  reference::ErrorReport report;
};

// A detached, contiguous host copy of t: pinned and without blocking from a CUDA device (valid after
// the device is synchronised), a plain copy on the CPU.
at::Tensor to_host(const at::Tensor& t);

// The seed of one op's samples at one step: the same for every platform and every run of the spec.
uint64_t op_seed(uint64_t seed, int64_t step, const std::string& name, const char* phase);

// One row of `observed` against `e` (its report from reference::assess).
template <class T>
TapRow tap_row(std::string phase, std::string index, int64_t call, const reference::Evaluation& e, T observed);

// The flat index `flat` as coordinates in `shape`, joined by ':'.
std::string coordinates(int64_t flat, const std::vector<int64_t>& shape);

// k distinct indices in [0, n), ascending, drawn from `seed` (platform-independent). REQUIRES: k <= n.
std::vector<int64_t> sample_indices(uint64_t seed, int64_t k, int64_t n);

// The part of a (C, H, W) input that output element (oy, ox) of a convolution reads: rows [y0, y0 + h)
// and columns [x0, x0 + w), and a geometry over just that patch in which (oy, ox) becomes
// (patch_oy, patch_ox) and which leaves out the same padding terms as the full geometry.
struct Patch {
  int64_t y0 = 0, x0 = 0;
  reference::Conv2dGeometry geometry;
  int64_t oy = 0, ox = 0;
};
Patch conv_patch(const reference::Conv2dGeometry& g, int64_t oy, int64_t ox);

class Capture : public std::enable_shared_from_this<Capture> {
 public:
  virtual ~Capture() = default;
  // Appends the rows of this step's samples. REQUIRES: the device synchronised, backward done.
  virtual Status evaluate(std::vector<TapRow>* rows) = 0;
};

// A conv2d (or a Linear as a 1x1 conv): forward samples and, with weight samples, wgrad samples.
class ConvCapture : public Capture {
 public:
  // `linear`: index columns as (b:j) / (j:i) rather than (b:o:y:x) / (o:c:ky:kx).
  ConvCapture(bool linear, std::vector<int64_t> fwd_samples, int64_t per_call, std::vector<int64_t> weight_samples);
  // One call: x (N, C, H, W), weight (O, C, kh, kw) the 4-D view of `parameter` (whose .grad is the
  // observed weight gradient), bias (O) or undefined, y (N, O, OH, OW) the 4-D view of `y_graph` (the
  // graph tensor whose gradient the hook observes). Errors: shapes differ from the first call's.
  Status on_call(int64_t call, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                 const ConvOptions& o, const at::Tensor& y, const at::Tensor& y_graph, const at::Tensor& parameter);
  Status evaluate(std::vector<TapRow>* rows) override;

 private:
  struct Fwd {
    int64_t call, b, o, oy, ox;
    Patch patch;
    at::Tensor input, filter, bias, observed;  // host: (C, h, w), (C, kh, kw), () or undefined, ()
  };
  Status evaluate_wgrad(std::vector<TapRow>* rows);

  bool linear_;
  bool started_ = false;  // the first call sets the geometry
  std::vector<int64_t> fwd_samples_;  // over every call: call * per_call_ + flat
  int64_t per_call_;
  std::vector<int64_t> weight_samples_;
  reference::Conv2dGeometry g_;
  int64_t batch_ = 0, out_channels_ = 0;
  std::vector<Fwd> fwd_;
  // wgrad: the input channels and output channels the samples need, and per call their planes.
  at::Tensor weight_;  // the parameter, for .grad
  std::vector<int64_t> in_channels_, out_channels_needed_;
  std::vector<at::Tensor> in_planes_;    // per call: (N, |in_channels_|, H, W), host
  std::mutex mutex_;                     // grad_planes_ is written from autograd's thread
  std::vector<at::Tensor> grad_planes_;  // per call: (N, |out_channels_needed_|, OH, OW), host, or undefined
};

// An activation y = f(x): sigmoid, tanh or relu.
class ElementwiseCapture : public Capture {
 public:
  ElementwiseCapture(reference::Op op, std::vector<int64_t> samples, int64_t per_call);
  Status on_call(int64_t call, const at::Tensor& x, const at::Tensor& y);
  Status evaluate(std::vector<TapRow>* rows) override;

 private:
  reference::Op op_;
  std::vector<int64_t> samples_;
  int64_t per_call_;
  std::vector<int64_t> shape_;
  struct Call {
    int64_t call;
    std::vector<int64_t> flat;
    at::Tensor x, y;  // host, (|flat|)
  };
  std::vector<Call> calls_;
};

// loss = mean((prediction - target)^2): one element, every input copied. With gradient samples, also
// dgrad: sampled elements of the loss's own gradient with respect to the prediction (what its backward
// node returns, before other uses of the prediction add theirs), against g·2(p − t)/n computed from the
// operands as the forward saw them — a backward that reads another target lies far beyond the bound.
// They need the loss to be torch's mse_loss node (a post hook on MseLossBackward); for any other node
// the dgrad rows are left out.
class MseCapture : public Capture {
 public:
  explicit MseCapture(std::vector<int64_t> grad_samples) : grad_samples_(std::move(grad_samples)) {}
  Status on_call(int64_t call, const at::Tensor& prediction, const at::Tensor& target, const at::Tensor& loss);
  Status evaluate(std::vector<TapRow>* rows) override;

 private:
  struct Call {
    int64_t call;
    at::Tensor prediction, target, loss;  // host
    std::vector<int64_t> shape;           // the prediction's
  };
  struct Grad {
    at::Tensor upstream, samples;  // host: the gradient arriving at the loss, and the sampled dL/dprediction
  };
  std::vector<int64_t> grad_samples_;  // flat indices into the prediction
  std::vector<Call> calls_;
  std::mutex mutex_;         // grads_ is written from autograd's thread
  std::vector<Grad> grads_;  // per call, or undefined when backward did not reach it
};

}  // namespace saddlescope::probes::internal
