// SHA-256 throughput (bytes/s), one core: what verifying the 55 MB MNIST cache and digesting .npy data on
// every load costs. Run: build/bench/bench_store [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "saddlescope/store/sha256.h"

namespace {

// sha256_hex over state.range(0) bytes held in memory.
void BM_Sha256(benchmark::State& state) {
  std::string bytes(static_cast<size_t>(state.range(0)), '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 + (i >> 9));
  for (auto _ : state) {
    std::string d = saddlescope::store::sha256_hex(bytes);
    benchmark::DoNotOptimize(d);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Sha256)->Arg(64 << 10)->Arg(55 << 20)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
