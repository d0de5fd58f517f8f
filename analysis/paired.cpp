// Paired comparisons and simulated detectable effects (stats.h, "Paired comparisons").
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include "saddlescope/analysis/stats.h"
#include "stats_detail.h"

namespace saddlescope::analysis {
namespace {

// A standard normal draw by Box–Muller from two 53-bit uniforms: the same numbers with every standard
// library (std::normal_distribution is not specified bit for bit).
double normal_draw(std::mt19937_64& rng) {
  const double u1 = (static_cast<double>(rng() >> 11) + 1) * 0x1p-53;  // (0, 1]
  const double u2 = static_cast<double>(rng() >> 11) * 0x1p-53;        // [0, 1)
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

}  // namespace

WilcoxonResult wilcoxon_signed_rank(const std::vector<double>& d, int exact_max) {
  detail::check_sample(d);
  SADDLESCOPE_CHECK(exact_max <= 60);
  std::vector<std::pair<double, bool>> magnitudes;  // (|d|, d > 0), zeros dropped
  for (double x : d)
    if (x != 0) magnitudes.emplace_back(std::fabs(x), x > 0);
  std::sort(magnitudes.begin(), magnitudes.end());
  const size_t n = magnitudes.size();
  WilcoxonResult r;
  r.n_nonzero = static_cast<int64_t>(n);
  if (n == 0) {  // nothing differs: no evidence either way
    r.w_plus = 0;
    r.p_value = 1;
    return r;
  }
  const auto [w, ties] = detail::flagged_rank_sum(magnitudes);  // ranks of |d|, summed over d > 0
  r.w_plus = w;
  const double dn = static_cast<double>(n);
  if (ties == 0 && n <= static_cast<size_t>(exact_max)) {
    // count[s]: sign assignments of ranks 1..k whose positive ranks sum to s, built up rank by rank.
    std::vector<double> count(1, 1.0);
    for (size_t k = 1; k <= n; ++k) {
      std::vector<double> next(count.size() + k, 0.0);
      for (size_t s = 0; s < count.size(); ++s) next[s] += count[s], next[s + k] += count[s];
      count = std::move(next);
    }
    r.exact = true;
    r.p_value = detail::two_sided_exact_p(count, w);
    return r;
  }
  const double var = dn * (dn + 1) * (2 * dn + 1) / 24 - ties / 48;
  if (!(var > 0)) {
    r.p_value = 1;
    return r;
  }
  r.z = std::max(0.0, std::fabs(w - dn * (dn + 1) / 4) - 0.5) / std::sqrt(var);
  r.p_value = std::min(1.0, 2 * boost::math::cdf(boost::math::complement(boost::math::normal(), r.z)));
  return r;
}

PermutationResult paired_permutation_test(const std::vector<double>& d, const PermutationOptions& options) {
  detail::check_sample(d);
  const size_t n = d.size();
  double scale = 0;
  for (double v : d) scale = std::max(scale, std::fabs(v));
  std::vector<double> work;
  auto statistic = [&](const std::vector<double>& v) { return detail::location(work = v, options.statistic); };
  PermutationResult r;
  r.observed = statistic(d);
  const double bar = std::fabs(r.observed) - 1e-12 * scale;
  std::vector<double> flipped(n);
  if (n < 63 && (int64_t{1} << n) <= options.max_exact) {
    const uint64_t all = uint64_t{1} << n;
    for (uint64_t signs = 0; signs < all; ++signs) {
      for (size_t i = 0; i < n; ++i) flipped[i] = (signs >> i & 1) ? -d[i] : d[i];
      r.as_extreme += std::fabs(statistic(flipped)) >= bar;
    }
    r.exact = true;
    r.splits = static_cast<int64_t>(all);
    r.p_value = static_cast<double>(r.as_extreme) / static_cast<double>(r.splits);
    return r;
  }
  SADDLESCOPE_CHECK(options.permutations >= 1);
  std::mt19937_64 rng(options.seed);
  for (int64_t m = 0; m < options.permutations; ++m) {
    for (size_t i = 0; i < n; ++i) flipped[i] = uniform_below(rng, 2) ? -d[i] : d[i];
    r.as_extreme += std::fabs(statistic(flipped)) >= bar;
  }
  r.splits = options.permutations;
  r.p_value = static_cast<double>(r.as_extreme + 1) / static_cast<double>(r.splits + 1);
  return r;
}

Interval bootstrap_paired(const std::vector<double>& d, Location statistic, const BootstrapOptions& options) {
  detail::check_sample(d);
  SADDLESCOPE_CHECK(options.resamples >= 1 && options.level > 0 && options.level < 1);
  std::vector<double> work(d);
  Interval r;
  r.estimate = detail::location(work, statistic);
  std::mt19937_64 rng(options.seed);
  std::vector<double> stats(static_cast<size_t>(options.resamples));
  for (double& s : stats) {
    for (double& w : work) w = d[uniform_below(rng, d.size())];
    s = detail::location(work, statistic);
  }
  std::sort(stats.begin(), stats.end());
  const double alpha = (1 - options.level) / 2;
  r.lower = quantile_sorted(stats, alpha);
  r.upper = quantile_sorted(stats, 1 - alpha);
  return r;
}

Interval t_interval(const std::vector<double>& v, double level) {
  detail::check_sample(v);
  SADDLESCOPE_CHECK(level > 0 && level < 1);
  const double n = static_cast<double>(v.size());
  Interval r;
  r.estimate = std::accumulate(v.begin(), v.end(), 0.0) / n;
  if (v.size() < 2) return r;
  double ss = 0;
  for (double x : v) ss += (x - r.estimate) * (x - r.estimate);
  const double half = boost::math::quantile(boost::math::students_t(n - 1), (1 + level) / 2) * std::sqrt(ss / (n - 1) / n);
  r.lower = r.estimate - half;
  r.upper = r.estimate + half;
  return r;
}

double smallest_p(RankTest test, int64_t n1, int64_t n2) {
  SADDLESCOPE_CHECK(n1 >= 1 && (test == RankTest::kWilcoxonSignedRank || n2 >= 1));
  if (test == RankTest::kWilcoxonSignedRank) return std::min(1.0, std::ldexp(2.0, -static_cast<int>(std::min<int64_t>(n1, 1100))));
  double inverse_choose = 1;  // 1/C(n1+n2, n1) as a running product, finite for large samples
  const int64_t k = std::min(n1, n2), n = n1 + n2;
  for (int64_t i = 1; i <= k; ++i) inverse_choose *= static_cast<double>(i) / static_cast<double>(n - k + i);
  return std::min(1.0, 2 * inverse_choose);
}

DetectableEffect detectable_by_simulation(RankTest test, int64_t n1, int64_t n2, double alpha, double power,
                                          int64_t simulations, uint64_t seed) {
  const bool paired = test == RankTest::kWilcoxonSignedRank;
  SADDLESCOPE_CHECK(n1 >= 1 && (paired || n2 >= 1));
  SADDLESCOPE_CHECK(alpha > 0 && alpha < 1 && power > 0 && power < 1 && simulations >= 1);
  DetectableEffect r;
  r.min_p = smallest_p(test, n1, n2);
  if (r.min_p > alpha) return r;
  const int exact_max = std::max(n1, n2) <= 20 ? 20 : 0;
  const size_t a = static_cast<size_t>(n1), b = paired ? 0 : static_cast<size_t>(n2);
  // Common random numbers: one set of draws for every shift tried, so that power rises with the shift.
  std::mt19937_64 rng(seed);
  std::vector<double> draws(static_cast<size_t>(simulations) * (a + b));
  for (double& z : draws) z = normal_draw(rng);
  std::vector<double> x(a), y(b);
  auto detects = [&](double shift) {
    int64_t rejected = 0;
    for (int64_t s = 0; s < simulations; ++s) {
      const double* z = draws.data() + static_cast<size_t>(s) * (a + b);
      for (size_t i = 0; i < a; ++i) x[i] = z[i] + (paired ? shift : 0);
      for (size_t i = 0; i < b; ++i) y[i] = z[a + i] + shift;
      const double p = paired ? wilcoxon_signed_rank(x, exact_max).p_value : mann_whitney(x, y, exact_max).p_value;
      rejected += p <= alpha;
    }
    return static_cast<double>(rejected) >= power * static_cast<double>(simulations);
  };
  double lo = 0, hi = 20;
  if (!detects(hi)) return r;
  while (hi - lo > 0.01) {
    const double mid = (lo + hi) / 2;
    (detects(mid) ? hi : lo) = mid;
  }
  r.shift_sd = hi;
  if (!paired) r.cliffs_delta = 2 * boost::math::cdf(boost::math::normal(), hi / std::sqrt(2.0)) - 1;
  return r;
}

}  // namespace saddlescope::analysis
