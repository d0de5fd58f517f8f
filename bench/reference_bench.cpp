// Exact dot product and sum throughput, one core: the Superaccumulator fast path vs the MPFR oracle at
// 256 bits (the target: fast >= 20x). Items are input elements (pairs for a dot product).
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "saddlescope/reference/elementwise.h"
#include "saddlescope/reference/evaluation.h"
#include "saddlescope/reference/ops.h"
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

// Throughput of fn(a, n, b, n) on two random vectors of n = state.range(0) elements.
template <class T, class Fn>
void run_pair(benchmark::State& state, Fn fn) {
  const int64_t n = state.range(0);
  const auto a = random_vector<T>(n, 1), b = random_vector<T>(n, 2);
  for (auto _ : state) {
    auto r = fn(a.data(), n, b.data(), n);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * n);
}

template <class T>
void BM_FastDot(benchmark::State& state) {
  run_pair<T>(state, [](const T* a, int64_t na, const T* b, int64_t nb) {
    return saddlescope::reference::evaluate_dot(a, na, b, nb);
  });
}

template <class T>
void BM_MpfrDot256(benchmark::State& state) {
  run_pair<T>(state, [](const T* a, int64_t na, const T* b, int64_t nb) {
    return saddlescope::reference::oracle_dot(a, na, b, nb, OracleOptions{256});
  });
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

// One output element of a 3x3 convolution over 64 channels (576 terms, padding 1, an interior position).
void BM_Conv2dElement(benchmark::State& state) {
  const saddlescope::reference::Conv2dGeometry g{64, 16, 16, 3, 3, 1, 1, 1, 1};
  const auto x = random_vector<float>(64 * 16 * 16, 1), w = random_vector<float>(64 * 9, 2);
  const float bias = 0.5f;
  for (auto _ : state) {
    auto r = saddlescope::reference::evaluate_conv2d_element(x.data(), 64 * 16 * 16, w.data(), 64 * 9, &bias, g,
                                                             7, 7);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * 577);
}

// Correctly rounded sigmoid / exp of one float32 (MPFR, Ziv's loop): items are elements.
template <saddlescope::reference::Op kOp>
void BM_Elementwise(benchmark::State& state) {
  const auto x = random_vector<float>(256, 3);
  size_t i = 0;
  for (auto _ : state) {
    auto r = saddlescope::reference::evaluate_elementwise(kOp, x[i++ % x.size()]);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_MseLoss(benchmark::State& state) {
  run_pair<float>(state, [](const float* a, int64_t na, const float* b, int64_t nb) {
    return saddlescope::reference::evaluate_mse_loss(a, na, b, nb);
  });
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
BENCHMARK(BM_Conv2dElement);
BENCHMARK_TEMPLATE(BM_Elementwise, saddlescope::reference::Op::kSigmoid);
BENCHMARK_TEMPLATE(BM_Elementwise, saddlescope::reference::Op::kExp);
BENCHMARK(BM_MseLoss)->Arg(64)->Arg(16384);

}  // namespace

BENCHMARK_MAIN();
