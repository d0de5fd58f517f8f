// graph.h for a LibTorch without CUDA: nothing to capture, every run is eager.
#include "saddlescope/trainer/graph.h"

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

bool cuda_graphs_available() { return false; }

struct SideStream::Impl {};
SideStream::SideStream(torch::Device device) { SADDLESCOPE_CHECK(!device.is_cuda()); }
SideStream::~SideStream() = default;

struct GraphedWork::Graph {};
GraphedWork::GraphedWork(bool enabled, int warmup) : enabled_(enabled), warmup_(warmup) {
  SADDLESCOPE_CHECK(!enabled);
}
GraphedWork::~GraphedWork() = default;
void GraphedWork::run(const std::function<void()>& fn, bool) { fn(); }

}  // namespace saddlescope::trainer
