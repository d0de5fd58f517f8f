// What a PredNet training step holds between its forward and its backward — the saved activations, the
// fused path's frame slots, the loss's inputs — for the memory-traffic floor in docs/benchmarks.md.
// Measured on the CPU as the growth of glibc's in-use heap over one forward pass (one thread, so every
// allocation is the main arena's); the tensors and their sizes are those the same code saves on CUDA,
// where cuDNN's workspaces come on top.
// Usage: bench_prednet_memory BATCH libtorch|fused
// Prints one markdown table row: batch, kernels, MB held (min / median / max of 5 forwards), and the
// loss's step-0 value as a check that the model ran. Needs MNIST in $SADDLESCOPE_DATA_DIR or data/.
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "prednet_setup.h"
#include "saddlescope/trainer/model.h"
#include "saddlescope/trainer/moving_mnist.h"

using namespace saddlescope;

namespace {

int fail(const std::string& m) {
  std::fprintf(stderr, "bench_prednet_memory: %s\n", m.c_str());
  return 1;
}

// Bytes malloc has handed out and not had back: the main arena's and the mmapped blocks'.
double heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks) + static_cast<double>(m.hblkhd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return fail("usage: bench_prednet_memory BATCH libtorch|fused");
  const std::string batch = argv[1], kernels = argv[2];
  const auto setup = bench::prednet_setup({{"model", "prednet"}, {"data", "moving-mnist"}, {"device", "cpu"},
                                           {"batch_size", batch}, {"threads", "1"}, {"steps", "1"},
                                           {"eval_sequences", "8"}, {"seed", "1"},
                                           {"out", "/tmp/bench-prednet-memory"}, {"kernels", kernels}});
  if (!setup) return fail(setup.status().message());
  const trainer::RunConfig& cfg = setup->cfg;
  auto model = trainer::make_model(cfg, setup->data);
  if (!model) return fail(model.status().message());
  auto gen = at::detail::createCPUGenerator(1);
  if (Status s = (*model)->initialise(gen, "default"); !s.ok()) return fail(s.message());
  const torch::Tensor input = trainer::frames_to_input(setup->data.sequences->batch(0, cfg.batch_size));

  std::vector<double> held;
  double loss0 = 0;
  for (int i = 0; i < 6; ++i) {  // the first forward and backward make what persists (gradients)
    const double before = heap_in_use();
    torch::Tensor loss = (*model)->loss(input);
    const double after = heap_in_use();
    loss.backward();
    if (i == 0) loss0 = loss.item<double>();
    else held.push_back((after - before) / 1e6);
  }
  std::sort(held.begin(), held.end());
  std::printf("| %s | %s | %.1f / %.1f / %.1f | %.6f |\n", batch.c_str(), kernels.c_str(), held.front(),
              held[held.size() / 2], held.back(), loss0);
  return 0;
}
