// Exact dot product and sum throughput, one core: the Superaccumulator fast path vs the MPFR oracle at
// 256 bits (the target: fast >= 20x). Items are input elements (pairs for a dot product).
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "saddlescope/reference/evaluation.h"
#include "saddlescope/reference/oracle.h"

namespace {

using saddlescope::reference::OracleOptions;

template <class T>
std::vector<T> random_vector(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(std::ldexp(unit(rng), exponent(rng)));
  return v;
}

template <class T>
void BM_FastDot(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto a = random_vector<T>(n, 1), b = random_vector<T>(n, 2);
  for (auto _ : state) {
    auto r = saddlescope::reference::evaluate_dot(a.data(), n, b.data(), n);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * n);
}

template <class T>
void BM_MpfrDot256(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto a = random_vector<T>(n, 1), b = random_vector<T>(n, 2);
  for (auto _ : state) {
    auto r = saddlescope::reference::oracle_dot(a.data(), n, b.data(), n, OracleOptions{256});
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * n);
}

template <class T>
void BM_FastSum(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto a = random_vector<T>(n, 1);
  for (auto _ : state) {
    auto r = saddlescope::reference::evaluate_sum(a.data(), n);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * n);
}

template <class T>
void BM_MpfrSum256(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto a = random_vector<T>(n, 1);
  for (auto _ : state) {
    auto r = saddlescope::reference::oracle_sum(a.data(), n, OracleOptions{256});
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * n);
}

// 64 elements: a sampled op element (a short reduction, fixed costs count); 16384: a long one.
BENCHMARK_TEMPLATE(BM_FastDot, float)->Arg(64)->Arg(16384);
BENCHMARK_TEMPLATE(BM_MpfrDot256, float)->Arg(64)->Arg(16384);
BENCHMARK_TEMPLATE(BM_FastDot, double)->Arg(64)->Arg(16384);
BENCHMARK_TEMPLATE(BM_MpfrDot256, double)->Arg(64)->Arg(16384);
BENCHMARK_TEMPLATE(BM_FastSum, float)->Arg(64)->Arg(16384);
BENCHMARK_TEMPLATE(BM_MpfrSum256, float)->Arg(64)->Arg(16384);
BENCHMARK_TEMPLATE(BM_FastSum, double)->Arg(64)->Arg(16384);
BENCHMARK_TEMPLATE(BM_MpfrSum256, double)->Arg(64)->Arg(16384);

}  // namespace

BENCHMARK_MAIN();
