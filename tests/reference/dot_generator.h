// Test inputs: random and ill-conditioned dot products.
//
// gen_ill_conditioned_dot follows the construction of Ogita, Rump and Oishi, "Accurate sum and dot
// product" (SIAM J. Sci. Comput. 26(6), 2005, Algorithm 6.1): the first half of the terms has random
// exponents up to b/2 = log2(cond)/2, the second half is chosen so that each new term cancels the running
// exact dot product down to a random residue of decreasing magnitude. The condition number
// cond = 2 sum|x_i y_i| / |sum x_i y_i| of the result is then roughly the one asked for.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "saddlescope/reference/evaluation.h"

namespace saddlescope::reference::testing {

template <class T>
struct DotInput {
  std::vector<T> x, y;
};

// Uniform in (-1, 1) times 2^e, e uniform in [-spread, spread] (capped so that the value stays finite in
// T; small values round to subnormals or 0); about one x in `zero_every` is 0.
template <class T>
DotInput<T> gen_random_dot(int64_t n, int spread, int zero_every, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-spread,
                                              std::min(spread, std::numeric_limits<T>::max_exponent));
  std::uniform_int_distribution<int> zero(0, std::max(zero_every, 1) - 1);
  DotInput<T> in;
  for (int64_t i = 0; i < n; ++i) {
    const bool z = zero_every > 0 && zero(rng) == 0;
    in.x.push_back(z ? T(0) : static_cast<T>(std::ldexp(unit(rng), exponent(rng))));
    in.y.push_back(static_cast<T>(std::ldexp(unit(rng), exponent(rng))));
  }
  return in;
}

// REQUIRES: n >= 6, cond >= 2. Each cancelling step removes at most about p bits (p = 24 or 53), so
// n / 2 must exceed log2(cond) / (2p) steps by a margin: n >= 20 reaches 1e40 in float32, n >= 6 in
// float64.
template <class T>
DotInput<T> gen_ill_conditioned_dot(int64_t n, double cond, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0), u01(0.0, 1.0);
  const double b = std::log2(cond);
  const int64_t half = n / 2;
  DotInput<T> in;
  in.x.resize(static_cast<size_t>(n));
  in.y.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < half; ++i) {
    int e = static_cast<int>(std::lround(u01(rng) * b / 2));
    if (i == 0) e = static_cast<int>(std::lround(b / 2)) + 1;  // the largest term sets the scale
    if (i == half - 1) e = 0;
    in.x[i] = static_cast<T>(std::ldexp(unit(rng), e));
    in.y[i] = static_cast<T>(std::ldexp(unit(rng), e));
  }
  for (int64_t i = half; i < n; ++i) {
    const double t = static_cast<double>(i - half) / static_cast<double>(std::max<int64_t>(n - half - 1, 1));
    const int e = static_cast<int>(std::lround(b / 2 * (1 - t)));  // linearly from b/2 down to 0
    in.x[i] = static_cast<T>(std::ldexp(unit(rng), e));
    if (in.x[i] == 0) in.x[i] = T(1);
    // The running dot product, exactly and then rounded: cancelling it leaves the random residue.
    const double running = evaluate_dot(in.x.data(), i, in.y.data(), i).value().f64;
    in.y[i] = static_cast<T>((std::ldexp(unit(rng), e) - running) / static_cast<double>(in.x[i]));
  }
  std::vector<size_t> order(static_cast<size_t>(n));
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  DotInput<T> shuffled;
  for (size_t i : order) {
    shuffled.x.push_back(in.x[i]);
    shuffled.y.push_back(in.y[i]);
  }
  return shuffled;
}

// 2 sum|x_i y_i| / |sum x_i y_i| from an exact evaluation; +inf for an exactly zero dot product.
inline double condition_number(const Evaluation& e) {
  return e.f64 == 0 ? INFINITY : 2 * e.abs_sum / std::fabs(e.f64);
}

}  // namespace saddlescope::reference::testing
