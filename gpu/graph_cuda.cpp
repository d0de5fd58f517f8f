// graph.h with LibTorch's CUDA graphs (at::cuda::CUDAGraph).
#include "saddlescope/gpu/graph.h"

#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "saddlescope/base/status.h"

namespace saddlescope::gpu {

bool cuda_graphs_available() { return true; }

void* current_cuda_stream(torch::Device device) { return c10::cuda::getCurrentCUDAStream(device.index()).stream(); }

bool capturing() { return c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None; }

struct SideStream::Impl {
  std::optional<c10::cuda::CUDAStreamGuard> guard;
};

namespace {

// The side stream of `device`: drawn from LibTorch's pool once, then the same for the whole process.
// A fresh pool stream per SideStream made every training after the first in a process slow: on the
// H200 the second and third train() of one process replayed PredNet's step graph at 9.39 and 9.36
// ms/step against 8.20 for the first, and at 8.19 and 8.20 when they got the first one's stream back
// (2026-12-03; why a stream matters was not found).
c10::cuda::CUDAStream side_stream(c10::DeviceIndex device) {
  static std::mutex mutex;
  static std::map<c10::DeviceIndex, c10::cuda::CUDAStream> streams;
  std::lock_guard<std::mutex> lock(mutex);
  if (device < 0) device = c10::cuda::current_device();  // "cuda" and "cuda:0" are one device
  auto it = streams.find(device);
  if (it == streams.end()) it = streams.emplace(device, c10::cuda::getStreamFromPool(false, device)).first;
  return it->second;
}

}  // namespace

SideStream::SideStream(torch::Device device) {
  if (!device.is_cuda()) return;
  // Work already queued on the default stream (the model's weights, the data) must be done first.
  c10::cuda::getCurrentCUDAStream(device.index()).synchronize();
  impl_ = std::make_unique<Impl>();
  impl_->guard.emplace(side_stream(device.index()));
}

SideStream::~SideStream() {
  // What follows runs on the default stream again, which does not wait for this one by itself.
  if (impl_) impl_->guard->current_stream().synchronize();
}

struct GraphedWork::Graph {
  at::cuda::CUDAGraph graph;
};

GraphedWork::GraphedWork(bool enabled, std::string off_switch, int warmup)
    : enabled_(enabled), off_switch_(std::move(off_switch)), warmup_(warmup) {}
GraphedWork::~GraphedWork() = default;

void GraphedWork::run(const std::function<void()>& fn, bool eager) {
  if (!enabled_ || eager || (!graph_ && calls_++ < warmup_)) {
    fn();
    return;
  }
  if (!graph_) {
    SADDLESCOPE_CHECK(c10::cuda::getCurrentCUDAStream() != c10::cuda::getDefaultCUDAStream());
    auto g = std::make_unique<Graph>();
    try {
      g->graph.capture_begin();
      fn();
      g->graph.capture_end();
    } catch (const std::exception& e) {
      std::string what = e.what();
      throw std::runtime_error("CUDA graph capture failed (" + off_switch_ + " runs it eagerly): " +
                               what.substr(0, what.find('\n')));
    }
    graph_ = std::move(g);
  }
  graph_->graph.replay();
}

}  // namespace saddlescope::gpu
