// The statistics the group comparisons use (DESIGN.md, "Definitions the analysis uses"): survival of
// right-censored escape times (Kaplan–Meier, log-rank), two-sample tests and effect sizes (Mann–Whitney
// U, permutation tests, bootstrap intervals, Cliff's delta), Holm's correction across comparisons, and
// the least-squares fits of the theory check. Torch-free; distributions from Boost.Math.
//
// Conventions: times and sample values are plain doubles in the caller's units (escape times are step
// counts; integers up to 2^53 are exact). Every function is deterministic: randomness comes only from
// an explicit `seed` driving std::mt19937_64 (a generator the standard specifies bit for bit) through
// uniform_below below, never std::*_distribution, so results are the same with every standard library.
// "Undefined" results are NaN (or an absent optional) and say so in a flag; never a default dressed as a
// value.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::analysis {

// ---- Survival of right-censored times -------------------------------------------------------------

struct Observation {
  double time = 0;     // when the episode escaped or was last seen (same units throughout)
  bool event = false;  // true: escaped at `time`; false: censored at `time` (still in the saddle)
};

// One step of the Kaplan–Meier curve, at a distinct event time.
struct SurvivalStep {
  double time = 0;
  int64_t at_risk = 0;   // observations with time >= this time (censorings at this time count)
  int64_t events = 0;    // escapes at exactly this time
  int64_t censored = 0;  // censorings at exactly this time (censorings between steps are in no step)
  double survival = 1;   // S(t): the probability of no escape up to and including t
  // Greenwood: SE(S) = S·sqrt(Σ d/(n(n−d))) over event times <= t. 0 when S = 0 (no one is left;
  // the formula's last term d/(n(n−d)) is undefined there).
  double std_error = 0;
  // Pointwise confidence band by the log(−log) transform (Kalbfleisch & Prentice; R survfit's
  // conf.type = "log-log"): S^exp(±z·σ/|log S|), σ² = Σ d/(n(n−d)); always inside [0, 1].
  // [0, 0] when S = 0.
  double lower = 1, upper = 1;
};

struct SurvivalCurve {
  std::vector<SurvivalStep> steps;  // one per distinct event time, ascending; empty when no events
  int64_t n = 0, events = 0, censored = 0;
  double level = 0.95;
  // Median: the smallest step time with S <= 0.5 (absent when S never reaches 0.5; note R's survfit
  // takes the midpoint when S is exactly 0.5 over a stretch, this does not). Its confidence interval
  // is the set of times whose band holds 0.5 (Brookmeyer & Crowley 1982 style, as R's survfit):
  // lower = the smallest step time with lower band <= 0.5, upper = the smallest with upper band <= 0.5;
  // each absent when never reached (an open-ended interval).
  std::optional<double> median, median_lower, median_upper;
};

// S(t) of a curve at any time t (a step function, right-continuous): 1 before the first step.
double survival_at(const SurvivalCurve& curve, double time);

// Kaplan–Meier estimate of survival (here: still in the saddle) from right-censored observations.
// Empty input gives an empty curve (n = 0, no median); all censored gives no steps (S = 1 throughout).
// REQUIRES: 0 < level < 1; every time finite.
SurvivalCurve kaplan_meier(const std::vector<Observation>& observations, double level = 0.95);

struct LogRankResult {
  bool defined = false;    // false when there is nothing to test: no events at all, or fewer than two
                           // groups ever at risk at an event time. chi_square and p_value are NaN then.
  double chi_square = NAN;
  int df = 0;              // the rank of the variance matrix: k − 1 with k groups that have observations
  double p_value = NAN;    // upper tail of chi-square(df)
  std::vector<double> observed, expected;  // events per group, and expected under equal hazards
};

// Log-rank (Mantel–Haenszel) test that k >= 2 groups share one survival curve. At each distinct event
// time, events are shared out by the numbers at risk; ties use the hypergeometric variance
// d(n−d)/(n−1)·(n_j/n)(1 − n_j/n) (Peto & Peto; R survdiff with rho = 0). The statistic is
// (O−E)ᵀ V⁻ (O−E) with a generalised inverse (a group with no observations adds no degree of freedom).
// Identical groups give chi_square 0, p 1. REQUIRES: groups.size() >= 2; every time finite.
LogRankResult log_rank(const std::vector<std::vector<Observation>>& groups);

// ---- Two-sample comparisons -----------------------------------------------------------------------

struct MannWhitneyResult {
  double u = NAN;        // U of the first sample: #{x_i > y_j} + ½ #{x_i = y_j}
  double p_value = NAN;  // two-sided
  bool exact = false;    // true: the exact permutation distribution of U; false: normal approximation
                         // with tie and continuity corrections (z below)
  double z = NAN;        // the normal approximation's z (NaN when exact, or when every value is tied)
};

// Mann–Whitney U (Wilcoxon rank-sum) test. Exact (the distribution of U over all C(n1+n2, n1) splits,
// by dynamic programming; p = 2·min(P(U <= u), P(U >= u)), at most 1) when both samples have at most
// `exact_max` values and there are no ties; otherwise z = (|u − n1n2/2| − ½)/σ with
// σ² = n1n2/12·((n+1) − Σ(t³−t)/(n(n−1))). All values tied: p = 1 (σ = 0; nothing to rank).
// REQUIRES: both samples non-empty, every value finite, exact_max <= 100 (the table costs (n1·n2)²).
MannWhitneyResult mann_whitney(const std::vector<double>& x, const std::vector<double>& y, int exact_max = 50);

enum class Location { kMedian, kMean };

struct PermutationOptions {
  Location statistic = Location::kMedian;  // the test statistic: location(x) − location(y)
  int64_t max_exact = 20000;  // enumerate every split when C(n1+n2, n1) <= this
  int64_t permutations = 9999;  // otherwise this many random splits (m)
  uint64_t seed = 0;            // for the random splits
};

struct PermutationResult {
  double observed = NAN;  // location(x) − location(y)
  // Two-sided: splits with |T| >= |observed| − 1e-12·max|value| (so that a split equal to the observed
  // one but for rounding counts). Exact: b/C(n1+n2, n1), the observed split among them; random: (b+1)/(m+1).
  double p_value = NAN;
  bool exact = false;
  int64_t splits = 0;      // splits evaluated: C(n1+n2, n1) when exact, m otherwise
  int64_t as_extreme = 0;  // b
};

// Permutation test for a difference in medians or means. REQUIRES: both samples non-empty, finite.
PermutationResult permutation_test(const std::vector<double>& x, const std::vector<double>& y,
                                   const PermutationOptions& options = {});

struct BootstrapOptions {
  int64_t resamples = 9999;  // B
  double level = 0.95;
  uint64_t seed = 0;
  bool bca = true;  // also the BCa interval (costs n1 + n2 jackknife medians)
};

struct BootstrapInterval {
  double estimate = NAN;  // median(x) − median(y)
  // Percentile interval: the (1−level)/2 and (1+level)/2 quantiles of B stratified resamples (each
  // sample resampled on its own), quantiles by linear interpolation between order statistics.
  double lower = NAN, upper = NAN;
  // BCa (Efron 1987; the two-sample form of scipy.stats.bootstrap): bias z0 from the share of resamples
  // below the estimate (ties count half), acceleration from each sample's jackknife. NaN when not asked
  // for or undefined (every resample on one side of the estimate, or a zero jackknife spread with
  // z0 infinite).
  double bca_lower = NAN, bca_upper = NAN;
  double z0 = NAN, acceleration = NAN;
};

// Bootstrap confidence interval of median(x) − median(y). REQUIRES: both non-empty, finite values,
// resamples >= 1, 0 < level < 1.
BootstrapInterval bootstrap_median_difference(const std::vector<double>& x, const std::vector<double>& y,
                                              const BootstrapOptions& options = {});

// Cliff's delta: (#{x_i > y_j} − #{x_i < y_j}) / (n1·n2), in [−1, 1]; O((n1+n2) log n2).
// REQUIRES: both non-empty; values not NaN.
double cliffs_delta(const std::vector<double>& x, const std::vector<double>& y);

// The usual reading of |delta| (Romano, Kromrey, Coraggio & Skowronek 2006): negligible below 0.147,
// small below 0.33, medium below 0.474, large from there. Returns "negligible", "small", "medium" or
// "large".
std::string cliffs_delta_magnitude(double delta);

// ---- Power: what a comparison could have seen --------------------------------------------------------

struct DetectableEffect {
  // The smallest two-sided p the exact Mann–Whitney test can give at these sizes, 2/C(n1+n2, n1) (no
  // ties): above alpha, no effect of any size can be significant.
  double min_p = NAN;
  // The |Cliff's delta| detected with probability `power` at two-sided level alpha, by Noether's (1987)
  // sample size for the Wilcoxon–Mann–Whitney test, N = (z_{1−α/2} + z_power)² / (12·c(1−c)·(p − ½)²)
  // with c = n1/N and p = P(X > Y) = (1 + δ)/2, solved for δ. Distribution-free; NaN when above 1 (no
  // effect is that likely to be seen) or when min_p > alpha.
  double cliffs_delta = NAN;
  // The same effect as a shift of two normal samples in units of their standard deviation,
  // d = √2·Φ⁻¹((1 + δ)/2) (for normal samples δ = 2Φ(d/√2) − 1). NaN with cliffs_delta.
  double shift_sd = NAN;
};

// REQUIRES: n1, n2 >= 1; 0 < alpha < 1; 0 < power < 1.
DetectableEffect mann_whitney_detectable(int64_t n1, int64_t n2, double alpha = 0.05, double power = 0.8);

// ---- Paired comparisons ------------------------------------------------------------------------------
// A paired design (every config shares seeds, initial weights and data order with the baseline) is
// compared through the per-pair differences d_i = a_i − b_i: the seed-to-seed spread that both runs of a
// pair share cancels, which is why a paired test sees effects an unpaired one misses.

struct WilcoxonResult {
  double w_plus = NAN;    // Σ of the ranks of |d_i| over the d_i > 0 (midranks for ties)
  int64_t n_nonzero = 0;  // pairs that differ: zeros are dropped (Wilcoxon's convention, scipy's default)
  double p_value = NAN;   // two-sided
  bool exact = false;     // true: the exact distribution of W+ over the 2^n signs; false: normal approximation
  double z = NAN;         // with tie and continuity corrections; NaN when exact or nothing differs
};

// Wilcoxon signed-rank test that the differences are symmetric about 0. Exact (p = 2·min(P(W+ <= w),
// P(W+ >= w)), at most 1) when no |d_i| are tied and n_nonzero <= exact_max; otherwise
// z = (|w − n(n+1)/4| − ½)/σ, σ² = n(n+1)(2n+1)/24 − Σ(t³−t)/48. Nothing differs: p = 1.
// REQUIRES: d non-empty, finite; exact_max <= 60.
WilcoxonResult wilcoxon_signed_rank(const std::vector<double>& d, int exact_max = 50);

// Sign-flip permutation test of location(d) = 0: every assignment of signs to the |d_i| when
// 2^n <= max_exact (p = b/2^n, the observed one among them), else `permutations` random ones
// ((b+1)/(m+1)). `observed` is location(d). REQUIRES: d non-empty, finite.
PermutationResult paired_permutation_test(const std::vector<double>& d, const PermutationOptions& options = {});

struct Interval {
  double estimate = NAN, lower = NAN, upper = NAN;
};

// Percentile bootstrap interval of location(d), resampling the pairs (B = options.resamples; options.bca
// is ignored). REQUIRES: d non-empty, finite; resamples >= 1; 0 < level < 1.
Interval bootstrap_paired(const std::vector<double>& d, Location statistic, const BootstrapOptions& options = {});

// Student's t interval of the mean, mean ± t_{n−1, (1+level)/2}·s/√n (exact for normal differences; the
// bootstrap's percentile interval is too narrow at n < 10). Bounds NaN when n < 2.
// REQUIRES: v non-empty, finite; 0 < level < 1.
Interval t_interval(const std::vector<double>& v, double level = 0.95);

enum class RankTest { kMannWhitney, kWilcoxonSignedRank };

// The smallest two-sided p the exact test can give (no ties): 2/C(n1+n2, n1) for Mann–Whitney, 2/2^n1
// for the signed-rank test over n1 pairs (n2 ignored); at most 1. REQUIRES: n1 >= 1 (and n2 >= 1).
double smallest_p(RankTest test, int64_t n1, int64_t n2);

// The smallest normal shift (in standard deviations: of each sample for Mann–Whitney, of the
// differences for the signed-rank test) that `test` detects at two-sided level alpha with probability
// `power`, by simulation: `simulations` normal samples of sizes n1, n2 (n1 pairs for the signed-rank
// test), common to every shift tried, and bisection on the shift to 0.01 SD. `alpha` is the level
// the verdict applies: after Holm's correction over m tests, α/m (what the smallest p of the family
// must reach). Sizes above 20 per sample use the normal approximation in the simulation (the exact
// table is recomputed per call). Fields as DetectableEffect: min_p is the test's smallest possible p
// at these sizes (2/C(n1+n2, n1), 2/2^n); shift_sd NaN when min_p > alpha or beyond 20 SD;
// cliffs_delta = 2Φ(d/√2) − 1 for Mann–Whitney, NaN for the signed-rank test.
// REQUIRES: n1 >= 1 (and n2 >= 1 for Mann–Whitney); 0 < alpha, power < 1; simulations >= 1.
DetectableEffect detectable_by_simulation(RankTest test, int64_t n1, int64_t n2, double alpha, double power = 0.8,
                                          int64_t simulations = 2000, uint64_t seed = 0);

// ---- Multiple comparisons -------------------------------------------------------------------------

// Holm–Bonferroni adjusted p-values, in the order given: the i-th smallest of m gets
// max over j <= i of min(1, (m − j + 1)·p_(j)). NaN entries (tests that were undefined) stay NaN and do
// not count in m. REQUIRES: every other entry in [0, 1].
std::vector<double> holm_adjust(const std::vector<double>& p_values);

// ---- Fits -----------------------------------------------------------------------------------------

struct LinearFit {
  double intercept = NAN, slope = NAN;  // y ≈ intercept + slope·x
  double r_squared = NAN;               // 1 − SS_res/SS_tot; NaN when every y is equal
  int64_t n = 0;
  double slope_std_error = NAN;      // sqrt(SS_res/(n−2) / Σ(x−x̄)²); NaN when n = 2
  double intercept_std_error = NAN;  // sqrt(SS_res/(n−2) · (1/n + x̄²/Σ(x−x̄)²)); NaN when n = 2
};

// Ordinary least squares. Errors: sizes differ, fewer than two points, a non-finite value (names the
// index), every x equal.
Result<LinearFit> fit_line(const std::vector<double>& x, const std::vector<double>& y);

// Exponential growth y ≈ A·exp(rate·x): fit_line of log y against x over the points with
// from <= x <= to; the slope is the rate (per unit of x) and its standard error that of the rate.
// Errors: fit_line's, and a y <= 0 in the range (names the index).
Result<LinearFit> fit_growth_rate(const std::vector<double>& x, const std::vector<double>& y,
                                  double from = -INFINITY, double to = INFINITY);

// The q-quantile (0 <= q <= 1) of ascending values by linear interpolation between order statistics
// (Hyndman & Fan type 7, numpy's default). REQUIRES: `sorted` non-empty and ascending.
double quantile_sorted(const std::vector<double>& sorted, double q);

// ---- Randomness -----------------------------------------------------------------------------------

// A uniform integer in [0, n) from `rng`: draws r = rng() until r >= 2^64 mod n, returns r mod n (so the
// same seed gives the same draws everywhere, unlike std::uniform_int_distribution). REQUIRES: n >= 1.
uint64_t uniform_below(std::mt19937_64& rng, uint64_t n);

}  // namespace saddlescope::analysis
