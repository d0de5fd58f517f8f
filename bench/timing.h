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
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2], t.back()};
}

}  // namespace saddlescope::bench
