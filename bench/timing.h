// Timing helpers shared by the benchmarks: min / median / max over repeats, the device drained first.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

#include <torch/torch.h>

namespace saddlescope::bench {

inline void sync(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize();
}

struct Spread {
  double min, median, max;
};

// min / median (the upper one of an even count) / max of `values`. REQUIRES: non-empty.
inline Spread spread(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {values.front(), values[values.size() / 2], values.back()};
}

// `repeats` timings of f() in milliseconds (each divided by `per`), the device drained around each.
template <class F>
Spread time_ms(F f, int repeats, const torch::Device& d, double per = 1) {
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    sync(d);
    auto t0 = std::chrono::steady_clock::now();
    f();
    sync(d);
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / per);
  }
  return spread(std::move(t));
}

}  // namespace saddlescope::bench
