// graph.h for a LibTorch without CUDA: nothing to capture, every run is eager.
#include "saddlescope/gpu/graph.h"

#include <utility>

#include "saddlescope/base/status.h"

namespace saddlescope::gpu {

bool cuda_graphs_available() { return false; }

void* current_cuda_stream(torch::Device) {
  SADDLESCOPE_CHECK(!"a CUDA stream in a build without CUDA");
  return nullptr;
}

bool capturing() { return false; }

struct SideStream::Impl {};
SideStream::SideStream(torch::Device device) { SADDLESCOPE_CHECK(!device.is_cuda()); }
SideStream::~SideStream() = default;

struct GraphedWork::Graph {};
GraphedWork::GraphedWork(bool enabled, std::string off_switch, int warmup)
    : enabled_(enabled), off_switch_(std::move(off_switch)), warmup_(warmup) {
  SADDLESCOPE_CHECK(!enabled);
}
GraphedWork::~GraphedWork() = default;
void GraphedWork::run(const std::function<void()>& fn, bool) { fn(); }

}  // namespace saddlescope::gpu
