// graph.h with LibTorch's CUDA graphs (at::cuda::CUDAGraph).
#include "saddlescope/gpu/graph.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "saddlescope/base/status.h"

namespace saddlescope::gpu {

bool cuda_graphs_available() { return true; }

struct SideStream::Impl {
  std::optional<c10::cuda::CUDAStreamGuard> guard;
};

SideStream::SideStream(torch::Device device) {
  if (!device.is_cuda()) return;
  // Work already queued on the default stream (the model's weights, the data) must be done first.
  c10::cuda::getCurrentCUDAStream(device.index()).synchronize();
  impl_ = std::make_unique<Impl>();
  impl_->guard.emplace(c10::cuda::getStreamFromPool(false, device.index()));
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
