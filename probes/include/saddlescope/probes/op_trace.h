// An op trace: what every op a piece of code runs computed, in the order it ran, so that two runs of the
// same code (one example alone and inside a batch; two devices) can be compared op by op.
//
// Recorded through LibTorch's own observer of every dispatched op (RecordFunction), while a trace is
// started: each outermost op — one a model calls, not the kernels below it (aten::linear, not the
// addmm inside it) — that computes floating values, with copies of its floating outputs. Ops that only
// create, copy or move values and views of an input are left out. Backward ops are traced too, on any
// thread, under the autograd node that runs them.
//
// Names follow the op taps (op_taps.h): a forward op that reads a parameter is named by the parameter's
// module and its ATen name ("encoder.fc1:linear"); any other by the TorchScript module that called it
// ("blocks.0:softmax") or by its ATen name alone ("relu"). A backward op is named by its autograd node
// and its ATen name ("AddmmBackward0:mm"), after the module of the forward op that made the node when
// it has one ("encoder.fc1:AddmmBackward0:mm"): which layer's gradient it computes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace saddlescope::probes {

struct TracedOp {
  std::string name;                 // see above
  std::string phase;                // fwd | bwd
  std::vector<at::Tensor> outputs;  // detached copies of its floating outputs, on the op's device (kCopies)
  std::vector<std::string> inner;   // the ATen ops that ran inside it ("mm" in "linear"), sorted
  // kDigests: a 64-bit digest of its tensor arguments as they were when it began (shapes, dtypes and
  // bytes, in order); one per tensor result, in the op's order ("" for a result that is undefined or
  // not floating, e.g. convolution_backward's bias gradient without a bias), so that a comparison can
  // say which result parted; the shape of each ("64x256", "scalar"; "-" for those left out) and the
  // dtype of the first floating one.
  uint64_t inputs_digest = 0;
  std::vector<std::string> output_digests;  // 16 hex digits each, or ""
  std::vector<std::string> output_shapes;
  std::string dtype;
};

// The digest of `tensors` (shape, dtype and bytes of each, in order; undefined ones count as a marker):
// equal tensors give equal digests on any device; other bytes give another digest but with probability
// about 2⁻³² (kernels/digest.h). Reads CUDA tensors back to the host; a trace sums theirs on the device.
uint64_t tensor_digest(const std::vector<at::Tensor>& tensors);

class OpTrace {
 public:
  enum class Mode { kCopies, kDigests };
  // `parameters` name the ops that read them (a model's named parameters). kCopies keeps copies of every
  // traced op's outputs; kDigests keeps only digests of its inputs and outputs (the ophash probe).
  explicit OpTrace(const std::vector<std::pair<std::string, at::Tensor>>& parameters, Mode mode = Mode::kCopies);
  ~OpTrace();
  OpTrace(const OpTrace&) = delete;
  OpTrace& operator=(const OpTrace&) = delete;

  // Starts recording (one trace per process at a time). REQUIRES: not started.
  //
  // kDigests sums a CUDA tensor's digest on its device, on the op's stream, and reads them all back at
  // stop(): no wait per tensor. Inside a CUDA graph's capture the digest kernels are captured with the
  // ops, and every replay of the graph sums them again, while no op is seen; so a recording that sees
  // no op after one under the same `tag` that captured a graph is taken to be that graph's replay: its
  // ops are the capture's, with the digests the replay computed. A graph captured while not tracing
  // has no digests to replay: its replays must not be recorded.
  void start(const std::string& tag = "");
  // Stops recording. kCopies: on CUDA the copies may still be in flight, synchronise before reading
  // them. kDigests: waits for the devices and fills in the recorded ops' digests.
  void stop();
  // The ops recorded, in the order they ended (an op ends after the ops it calls).
  const std::vector<TracedOp>& ops() const;
  // Forgets the ops recorded so far. REQUIRES: not started.
  void clear();
  // Seconds the trace itself has spent copying or hashing, not the traced ops' own time.
  double seconds() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace saddlescope::probes
