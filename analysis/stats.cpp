// Two-sample statistics, Holm's correction and the fits (stats.h). Survival is in survival.cpp.
#include "saddlescope/analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <boost/math/distributions/normal.hpp>
#include <fmt/format.h>

#include "stats_detail.h"

namespace saddlescope::analysis {

using detail::check_sample;
using detail::location;
using detail::median_in_place;

namespace detail {

double median_in_place(std::vector<double>& v) {
  const size_t n = v.size(), h = n / 2;
  std::nth_element(v.begin(), v.begin() + h, v.end());
  const double upper = v[h];
  if (n % 2) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + h);
  return (lower + upper) / 2;
}

double location(std::vector<double>& v, Location which) {
  if (which == Location::kMedian) return median_in_place(v);
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

void check_sample(const std::vector<double>& v) {
  SADDLESCOPE_CHECK(!v.empty());
  for (double x : v) SADDLESCOPE_CHECK(std::isfinite(x));
}

double two_sided_exact_p(const std::vector<double>& counts, double observed) {
  const size_t at = static_cast<size_t>(std::llround(observed));
  double total = 0, le = 0, ge = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    total += counts[s];
    if (s <= at) le += counts[s];
    if (s >= at) ge += counts[s];
  }
  return std::min(1.0, 2 * std::min(le, ge) / total);
}

RankSums flagged_rank_sum(const std::vector<std::pair<double, bool>>& sorted) {
  RankSums r;
  const size_t n = sorted.size();
  for (size_t i = 0; i < n;) {
    size_t j = i;
    size_t flagged = 0;
    for (; j < n && sorted[j].first == sorted[i].first; ++j) flagged += sorted[j].second;
    const double t = static_cast<double>(j - i), midrank = (static_cast<double>(i + j) + 1) / 2;
    r.flagged += midrank * static_cast<double>(flagged);
    r.ties += t * t * t - t;
    i = j;
  }
  return r;
}

}  // namespace detail

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// C(n, k), or limit + 1 when it exceeds `limit`.
int64_t binomial_capped(int64_t n, int64_t k, int64_t limit) {
  k = std::min(k, n - k);
  double c = 1;
  for (int64_t i = 1; i <= k; ++i) {
    c = c * static_cast<double>(n - k + i) / static_cast<double>(i);
    if (c > static_cast<double>(limit)) return limit + 1;
  }
  return static_cast<int64_t>(std::llround(c));
}

}  // namespace

double quantile_sorted(const std::vector<double>& s, double q) {
  const double h = (static_cast<double>(s.size()) - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= s.size()) return s.back();
  return s[lo] + (h - static_cast<double>(lo)) * (s[lo + 1] - s[lo]);
}

uint64_t uniform_below(std::mt19937_64& rng, uint64_t n) {
  SADDLESCOPE_CHECK(n >= 1);
  const uint64_t threshold = (0 - n) % n;  // 2^64 mod n: [threshold, 2^64) holds a multiple of n values
  for (;;) {
    const uint64_t r = rng();
    if (r >= threshold) return r % n;
  }
}

MannWhitneyResult mann_whitney(const std::vector<double>& x, const std::vector<double>& y, int exact_max) {
  check_sample(x);
  check_sample(y);
  SADDLESCOPE_CHECK(exact_max <= 100);
  const size_t n1 = x.size(), n2 = y.size(), n = n1 + n2;
  // Midranks of the pooled sample; Σ(t³ − t) over tie groups.
  std::vector<std::pair<double, bool>> pooled;  // (value, from x)
  for (double v : x) pooled.emplace_back(v, true);
  for (double v : y) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end());
  const auto [rank_sum_x, ties] = detail::flagged_rank_sum(pooled);
  MannWhitneyResult r;
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2), dn = static_cast<double>(n);
  r.u = rank_sum_x - dn1 * (dn1 + 1) / 2;
  if (ties == 0 && n1 <= static_cast<size_t>(exact_max) && n2 <= static_cast<size_t>(exact_max)) {
    // count[j][u]: splits of i x-values and j y-values with U = u, for the current i. The largest value
    // is either an x (beating all j y-values: U gains j) or a y (U gains nothing).
    std::vector<std::vector<double>> count(n2 + 1, std::vector<double>(1, 1.0));
    for (size_t i = 1; i <= n1; ++i) {
      std::vector<std::vector<double>> next(n2 + 1);
      next[0] = {1.0};
      for (size_t j = 1; j <= n2; ++j) {
        next[j].assign(i * j + 1, 0.0);
        for (size_t u = 0; u < count[j].size(); ++u) next[j][u + j] += count[j][u];
        for (size_t u = 0; u < next[j - 1].size(); ++u) next[j][u] += next[j - 1][u];
      }
      count = std::move(next);
    }
    r.exact = true;
    r.p_value = detail::two_sided_exact_p(count[n2], r.u);
    return r;
  }
  const double var = dn1 * dn2 / 12 * ((dn + 1) - ties / (dn * (dn - 1)));
  if (!(var > 0)) {  // every value tied: no ranking, no evidence
    r.p_value = 1;
    return r;
  }
  r.z = std::max(0.0, std::fabs(r.u - dn1 * dn2 / 2) - 0.5) / std::sqrt(var);
  r.p_value = std::min(1.0, 2 * boost::math::cdf(boost::math::complement(boost::math::normal(), r.z)));
  return r;
}

PermutationResult permutation_test(const std::vector<double>& x, const std::vector<double>& y,
                                   const PermutationOptions& options) {
  check_sample(x);
  check_sample(y);
  const size_t n1 = x.size(), n = x.size() + y.size();
  std::vector<double> pooled(x);
  pooled.insert(pooled.end(), y.begin(), y.end());
  double scale = 0;
  for (double v : pooled) scale = std::max(scale, std::fabs(v));
  std::vector<double> a, b;
  // location(first n1 of `values`) − location(the rest)
  auto statistic = [&](const std::vector<double>& values) {
    a.assign(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n1));
    b.assign(values.begin() + static_cast<std::ptrdiff_t>(n1), values.end());
    return location(a, options.statistic) - location(b, options.statistic);
  };
  PermutationResult r;
  r.observed = statistic(pooled);
  const double bar = std::fabs(r.observed) - 1e-12 * scale;
  std::vector<double> split(n);
  const int64_t splits = binomial_capped(static_cast<int64_t>(n), static_cast<int64_t>(n1), options.max_exact);
  if (splits <= options.max_exact) {
    // Every choice of n1 positions for the first sample, as a bitmask walked by std::prev_permutation.
    std::vector<bool> in_first(n, false);
    std::fill(in_first.begin(), in_first.begin() + static_cast<std::ptrdiff_t>(n1), true);
    do {
      size_t ia = 0, ib = n1;
      for (size_t i = 0; i < n; ++i) split[in_first[i] ? ia++ : ib++] = pooled[i];
      r.as_extreme += std::fabs(statistic(split)) >= bar;
      ++r.splits;
    } while (std::prev_permutation(in_first.begin(), in_first.end()));
    r.exact = true;
    r.p_value = static_cast<double>(r.as_extreme) / static_cast<double>(r.splits);
    return r;
  }
  SADDLESCOPE_CHECK(options.permutations >= 1);
  std::mt19937_64 rng(options.seed);
  split = pooled;
  for (int64_t m = 0; m < options.permutations; ++m) {
    for (size_t i = 0; i < n1; ++i) std::swap(split[i], split[i + uniform_below(rng, n - i)]);  // Fisher–Yates
    r.as_extreme += std::fabs(statistic(split)) >= bar;
  }
  r.splits = options.permutations;
  r.p_value = static_cast<double>(r.as_extreme + 1) / static_cast<double>(r.splits + 1);
  return r;
}

BootstrapInterval bootstrap_median_difference(const std::vector<double>& x, const std::vector<double>& y,
                                              const BootstrapOptions& options) {
  check_sample(x);
  check_sample(y);
  SADDLESCOPE_CHECK(options.resamples >= 1 && options.level > 0 && options.level < 1);
  const std::vector<const std::vector<double>*> samples = {&x, &y};
  std::vector<double> work;
  auto median_of = [&](const std::vector<double>& v) { return median_in_place(work = v); };
  BootstrapInterval r;
  const double mx = median_of(x), my = median_of(y);
  r.estimate = mx - my;
  std::mt19937_64 rng(options.seed);
  std::vector<double> stats(static_cast<size_t>(options.resamples));
  double med[2];
  for (double& s : stats) {
    for (int k = 0; k < 2; ++k) {
      const std::vector<double>& v = *samples[k];
      work.resize(v.size());
      for (double& w : work) w = v[uniform_below(rng, v.size())];
      med[k] = median_in_place(work);
    }
    s = med[0] - med[1];
  }
  std::sort(stats.begin(), stats.end());
  const double alpha = (1 - options.level) / 2;
  r.lower = quantile_sorted(stats, alpha);
  r.upper = quantile_sorted(stats, 1 - alpha);
  if (!options.bca) return r;
  const boost::math::normal normal;
  const double below = static_cast<double>(std::lower_bound(stats.begin(), stats.end(), r.estimate) - stats.begin());
  const double at_or_below = static_cast<double>(std::upper_bound(stats.begin(), stats.end(), r.estimate) - stats.begin());
  const double share = (below + at_or_below) / (2 * static_cast<double>(stats.size()));
  // Acceleration from each sample's jackknife (a sample of one has no jackknife and adds nothing).
  double num = 0, den = 0;
  for (int k = 0; k < 2; ++k) {
    const std::vector<double>& v = *samples[k];
    const size_t nk = v.size();
    if (nk < 2) continue;
    std::vector<double> theta(nk);
    for (size_t i = 0; i < nk; ++i) {
      work = v;
      work.erase(work.begin() + static_cast<std::ptrdiff_t>(i));
      theta[i] = k == 0 ? median_in_place(work) - my : mx - median_in_place(work);
    }
    const double mean = std::accumulate(theta.begin(), theta.end(), 0.0) / static_cast<double>(nk);
    double s2 = 0, s3 = 0;
    for (double t : theta) {
      const double u = static_cast<double>(nk - 1) * (mean - t);
      s2 += u * u, s3 += u * u * u;
    }
    const double dk = static_cast<double>(nk);
    num += s3 / (dk * dk * dk), den += s2 / (dk * dk);
  }
  r.acceleration = den > 0 ? num / (6 * std::pow(den, 1.5)) : 0;
  if (share <= 0 || share >= 1) return r;  // z0 infinite: BCa undefined
  r.z0 = boost::math::quantile(normal, share);
  auto adjusted = [&](double q) {
    const double zq = boost::math::quantile(normal, q);
    const double w = r.z0 + zq;
    return boost::math::cdf(normal, r.z0 + w / (1 - r.acceleration * w));
  };
  r.bca_lower = quantile_sorted(stats, adjusted(alpha));
  r.bca_upper = quantile_sorted(stats, adjusted(1 - alpha));
  return r;
}

double cliffs_delta(const std::vector<double>& x, const std::vector<double>& y) {
  SADDLESCOPE_CHECK(!x.empty() && !y.empty());
  std::vector<double> sorted(y);
  for (double v : sorted) SADDLESCOPE_CHECK(!std::isnan(v));
  std::sort(sorted.begin(), sorted.end());
  int64_t net = 0;  // #{x > y} − #{x < y}
  for (double v : x) {
    SADDLESCOPE_CHECK(!std::isnan(v));
    const auto less = std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin();
    const auto greater = sorted.end() - std::upper_bound(sorted.begin(), sorted.end(), v);
    net += less - greater;
  }
  return static_cast<double>(net) / (static_cast<double>(x.size()) * static_cast<double>(y.size()));
}

std::string cliffs_delta_magnitude(double delta) {
  const double a = std::fabs(delta);
  if (a < 0.147) return "negligible";
  if (a < 0.33) return "small";
  if (a < 0.474) return "medium";
  return "large";
}

std::vector<double> holm_adjust(const std::vector<double>& p_values) {
  std::vector<size_t> order;
  for (size_t i = 0; i < p_values.size(); ++i) {
    if (std::isnan(p_values[i])) continue;
    SADDLESCOPE_CHECK(p_values[i] >= 0 && p_values[i] <= 1);
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p_values[a] < p_values[b]; });
  std::vector<double> adjusted(p_values.size(), kNaN);
  const double m = static_cast<double>(order.size());
  double running = 0;
  for (size_t j = 0; j < order.size(); ++j) {
    running = std::max(running, std::min(1.0, (m - static_cast<double>(j)) * p_values[order[j]]));
    adjusted[order[j]] = running;
  }
  return adjusted;
}

Result<LinearFit> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size())
    return Status::Error(fmt::format("fit_line: x has {} values, y has {}", x.size(), y.size()));
  if (x.size() < 2) return Status::Error(fmt::format("fit_line: needs at least 2 points, got {}", x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]))
      return Status::Error(fmt::format("fit_line: point {} is not finite (x = {}, y = {})", i, x[i], y[i]));
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n, my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double dx = x[i] - mx, dy = y[i] - my;
    sxx += dx * dx, sxy += dx * dy, syy += dy * dy;
  }
  if (!(sxx > 0)) return Status::Error(fmt::format("fit_line: every x equals {}: no slope", x[0]));
  LinearFit f;
  f.n = static_cast<int64_t>(x.size());
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  double ss_res = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = y[i] - (f.intercept + f.slope * x[i]);
    ss_res += e * e;
  }
  if (syy > 0) f.r_squared = 1 - ss_res / syy;
  if (f.n > 2) {
    const double s2 = ss_res / (n - 2);
    f.slope_std_error = std::sqrt(s2 / sxx);
    f.intercept_std_error = std::sqrt(s2 * (1 / n + mx * mx / sxx));
  }
  return f;
}

Result<LinearFit> fit_growth_rate(const std::vector<double>& x, const std::vector<double>& y, double from,
                                  double to) {
  if (x.size() != y.size())
    return Status::Error(fmt::format("fit_growth_rate: x has {} values, y has {}", x.size(), y.size()));
  std::vector<double> xs, logs;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] >= from && x[i] <= to)) continue;
    if (!(y[i] > 0))
      return Status::Error(fmt::format("fit_growth_rate: y at point {} (x = {}) is {}, not > 0", i, x[i], y[i]));
    xs.push_back(x[i]);
    logs.push_back(std::log(y[i]));
  }
  return fit_line(xs, logs);
}

DetectableEffect mann_whitney_detectable(int64_t n1, int64_t n2, double alpha, double power) {
  DetectableEffect r;
  // 2/C(n1+n2, n1), as a running product to stay finite for large samples.
  double inverse_choose = 1;
  const int64_t k = std::min(n1, n2), n = n1 + n2;
  for (int64_t i = 1; i <= k; ++i) inverse_choose *= static_cast<double>(i) / static_cast<double>(n - k + i);
  r.min_p = std::min(1.0, 2 * inverse_choose);
  if (r.min_p > alpha) return r;
  const boost::math::normal normal;
  const double z = boost::math::quantile(normal, 1 - alpha / 2) + boost::math::quantile(normal, power);
  const double c = static_cast<double>(n1) / static_cast<double>(n);
  const double delta = 2 * z / std::sqrt(12 * c * (1 - c) * static_cast<double>(n));
  if (delta >= 1) return r;
  r.cliffs_delta = delta;
  r.shift_sd = std::sqrt(2.0) * boost::math::quantile(normal, (1 + delta) / 2);
  return r;
}

}  // namespace saddlescope::analysis
