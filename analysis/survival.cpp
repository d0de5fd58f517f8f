// Kaplan–Meier and the log-rank test (stats.h). Kept apart from the two-sample statistics in stats.cpp:
// these two share the walk over distinct times and nothing else there.
#include <algorithm>
#include <cmath>

#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>

#include "saddlescope/analysis/stats.h"

namespace saddlescope::analysis {

namespace {

// S(t) <= 0.5 "to rounding": a product of fractions that is 1/2 exactly may land a few ulps above it.
constexpr double kHalf = 0.5 + 1e-12;

// Indices of `observations` ordered by time. REQUIRES: every time finite.
std::vector<size_t> by_time(const std::vector<Observation>& observations) {
  std::vector<size_t> order(observations.size());
  for (size_t i = 0; i < order.size(); ++i) {
    SADDLESCOPE_CHECK(std::isfinite(observations[i].time));
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return observations[a].time < observations[b].time; });
  return order;
}

}  // namespace

double survival_at(const SurvivalCurve& curve, double time) {
  double s = 1;
  for (const SurvivalStep& step : curve.steps) {
    if (step.time > time) break;
    s = step.survival;
  }
  return s;
}

SurvivalCurve kaplan_meier(const std::vector<Observation>& observations, double level) {
  SADDLESCOPE_CHECK(level > 0 && level < 1);
  SurvivalCurve curve;
  curve.level = level;
  curve.n = static_cast<int64_t>(observations.size());
  const double z = boost::math::quantile(boost::math::normal(), (1 + level) / 2);
  std::vector<size_t> order = by_time(observations);
  int64_t at_risk = curve.n;
  double s = 1, greenwood = 0;  // greenwood: Σ d/(n(n−d))
  for (size_t i = 0; i < order.size();) {
    const double t = observations[order[i]].time;
    int64_t d = 0, c = 0;
    for (; i < order.size() && observations[order[i]].time == t; ++i) (observations[order[i]].event ? d : c) += 1;
    curve.events += d;
    curve.censored += c;
    if (d > 0) {
      SurvivalStep step;
      step.time = t;
      step.at_risk = at_risk;
      step.events = d;
      step.censored = c;
      s *= 1 - static_cast<double>(d) / static_cast<double>(at_risk);
      if (d == at_risk) s = 0;  // exactly, whatever the rounding of 1 − d/n
      step.survival = s;
      if (s > 0) {
        greenwood += static_cast<double>(d) / (static_cast<double>(at_risk) * static_cast<double>(at_risk - d));
        step.std_error = s * std::sqrt(greenwood);
        const double sigma = std::sqrt(greenwood) / std::fabs(std::log(s));  // SE of log(−log S)
        step.lower = std::pow(s, std::exp(z * sigma));
        step.upper = std::pow(s, std::exp(-z * sigma));
      } else {
        step.std_error = step.lower = step.upper = 0;
      }
      curve.steps.push_back(step);
    }
    at_risk -= d + c;
  }
  for (const SurvivalStep& step : curve.steps) {
    if (!curve.median && step.survival <= kHalf) curve.median = step.time;
    if (!curve.median_lower && step.lower <= kHalf) curve.median_lower = step.time;
    if (!curve.median_upper && step.upper <= kHalf) curve.median_upper = step.time;
  }
  return curve;
}

LogRankResult log_rank(const std::vector<std::vector<Observation>>& groups) {
  const size_t k = groups.size();
  SADDLESCOPE_CHECK(k >= 2);
  LogRankResult r;
  r.observed.assign(k, 0);
  r.expected.assign(k, 0);
  // All observations, tagged with their group, in time order.
  std::vector<Observation> pooled;
  std::vector<size_t> group_of;
  std::vector<double> at_risk(k, 0);
  for (size_t g = 0; g < k; ++g) {
    for (const Observation& o : groups[g]) {
      pooled.push_back(o);
      group_of.push_back(g);
    }
    at_risk[g] = static_cast<double>(groups[g].size());
  }
  std::vector<size_t> order = by_time(pooled);
  std::vector<std::vector<double>> v(k, std::vector<double>(k, 0));  // hypergeometric covariance
  std::vector<double> d_g(k), left(k);
  for (size_t i = 0; i < order.size();) {
    const double t = pooled[order[i]].time;
    std::fill(d_g.begin(), d_g.end(), 0);
    std::fill(left.begin(), left.end(), 0);
    for (; i < order.size() && pooled[order[i]].time == t; ++i) {
      const size_t g = group_of[order[i]];
      d_g[g] += pooled[order[i]].event;
      left[g] += 1;
    }
    double n = 0, d = 0;
    for (size_t g = 0; g < k; ++g) n += at_risk[g], d += d_g[g];
    if (d > 0) {
      const double w = n > 1 ? d * (n - d) / (n * n * (n - 1)) : 0;
      for (size_t g = 0; g < k; ++g) {
        r.observed[g] += d_g[g];
        r.expected[g] += d * at_risk[g] / n;
        for (size_t h = 0; h < k; ++h) v[g][h] += w * at_risk[g] * ((g == h ? n : 0) - at_risk[h]);
      }
    }
    for (size_t g = 0; g < k; ++g) at_risk[g] -= left[g];
  }
  // (O−E)ᵀ V⁻ (O−E) by a symmetric LDLᵀ elimination that skips (near-)zero pivots, as the survival
  // package's cholesky2 does: V has rank k−1 at most (its rows sum to zero), less with empty groups.
  double max_diag = 0;
  for (size_t g = 0; g < k; ++g) max_diag = std::max(max_diag, v[g][g]);
  if (max_diag <= 0) return r;  // no events, or never two groups at risk at an event time
  const double tol = 1e-9 * max_diag;
  std::vector<double> y(k);
  for (size_t g = 0; g < k; ++g) y[g] = r.observed[g] - r.expected[g];
  double chi2 = 0;
  for (size_t i = 0; i < k; ++i) {
    const double pivot = v[i][i];
    if (pivot <= tol) continue;  // a direction with no variance: no degree of freedom
    ++r.df;
    chi2 += y[i] * y[i] / pivot;
    for (size_t j = i + 1; j < k; ++j) {
      const double l = v[j][i] / pivot;
      y[j] -= l * y[i];
      for (size_t m = j; m < k; ++m) v[m][j] -= l * v[m][i];
    }
  }
  r.defined = true;
  r.chi_square = chi2;
  r.p_value = chi2 <= 0 ? 1.0 : boost::math::cdf(boost::math::complement(boost::math::chi_squared(r.df), chi2));
  return r;
}

}  // namespace saddlescope::analysis
