// CUDA graphs for the training step and the curvature probe's HVPs: device work captured once and
// replayed, the same kernels on the same buffers (so the same bits as running it eagerly) without
// launching each kernel from the host — an eager PredNet step is thousands of tiny launches. In a build
// without CUDA these do nothing.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <torch/types.h>

namespace saddlescope::gpu {

// Whether this build can capture CUDA graphs.
bool cuda_graphs_available();

// LibTorch's current CUDA stream of `device` as a cudaStream_t, for kernels launched outside LibTorch
// (kernels/fused.h): inside a SideStream that is its stream, so a capture records them. The caller
// makes `device` the current device for the launch (c10::DeviceGuard). REQUIRES: a CUDA build (aborts
// otherwise) and a CUDA device.
void* current_cuda_stream(torch::Device device);

// Whether the current CUDA stream is being captured into a graph (work enqueued now runs at every
// replay, not now). False in a build without CUDA.
bool capturing();

// While alive, device work on `device` goes to its side stream, one stream for the whole process: a
// graph cannot be captured on the default stream, and warm-up, capture and replay must share a stream
// (cuBLAS keeps a workspace per stream). Waits for the device before and after. A no-op for the CPU.
class SideStream {
 public:
  explicit SideStream(torch::Device device);
  ~SideStream();
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// run(fn) calls fn eagerly the first `warmup` times — real work, during which cuDNN and cuBLAS pick
// algorithms and create handles and the allocator its blocks — then captures fn once and from then on
// replays the capture; fn is not called again. fn must only enqueue device work (no reads to the host,
// no host-side randomness) and must leave its results in tensors that outlive it (the capture writes
// the same ones on every replay). run(fn, true) calls fn eagerly whatever the state (steps that must
// observe the ops, such as op taps); it gives the same results as a replay.
// Disabled (the CPU, or graphs off) run() always calls fn. A capture that fails throws, naming the
// `off_switch` (the setting that turns the capture off, for the message).
class GraphedWork {
 public:
  // REQUIRES: !enabled || cuda_graphs_available(); when enabled, run() inside a SideStream.
  explicit GraphedWork(bool enabled, std::string off_switch = "cuda_graph = false", int warmup = 2);
  ~GraphedWork();
  GraphedWork(const GraphedWork&) = delete;
  GraphedWork& operator=(const GraphedWork&) = delete;

  void run(const std::function<void()>& fn, bool eager = false);
  bool captured() const { return graph_ != nullptr; }

 private:
  struct Graph;  // at::cuda::CUDAGraph, in the CUDA build
  std::unique_ptr<Graph> graph_;
  bool enabled_;
  std::string off_switch_;
  int warmup_, calls_ = 0;
};

}  // namespace saddlescope::gpu
