// The statistics against published worked examples and hand-derived small cases. Values marked
// "stats_reference.py" come from tests/analysis/stats_reference.py: the textbook formulas written
// again in Python (standard library only), by other algorithms where there is one (brute-force
// enumeration instead of the dynamic programme, a 2x2 solve for the log-rank quadratic form).
#include "saddlescope/analysis/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace saddlescope::analysis {
namespace {

// Freireich et al. (1963), Blood 21:699–716: weeks of remission, 6-MP and placebo arms; "+" censored.
// As tabulated in Kleinbaum & Klein, Survival Analysis: A Self-Learning Text (3rd ed., 2012), ch. 1–2.
std::vector<Observation> six_mp() {
  std::vector<Observation> g;
  for (double t : {6, 6, 6, 7, 10, 13, 16, 22, 23}) g.push_back({t, true});
  for (double t : {6, 9, 10, 11, 17, 19, 20, 25, 32, 32, 34, 35}) g.push_back({t, false});
  return g;
}
std::vector<Observation> placebo() {
  std::vector<Observation> g;
  for (double t : {1, 1, 2, 2, 3, 4, 4, 5, 5, 8, 8, 8, 8, 11, 11, 12, 12, 15, 17, 22, 23}) g.push_back({t, true});
  return g;
}

TEST(KaplanMeier, FreireichSixMpMatchesPublishedTable) {
  SurvivalCurve c = kaplan_meier(six_mp());
  // Kleinbaum & Klein, ch. 2 (KM table for the 6-MP group): S(t) to 4 decimals; Greenwood SEs
  // 0.076 … 0.135 as in Klein & Moeschberger, Survival Analysis (2nd ed., 2003), Table 4.1A;
  // both reproduced by stats_reference.py.
  const double t[] = {6, 7, 10, 13, 16, 22, 23};
  const int64_t n[] = {21, 17, 15, 12, 11, 7, 6}, d[] = {3, 1, 1, 1, 1, 1, 1};
  const double s[] = {0.8571, 0.8067, 0.7529, 0.6902, 0.6275, 0.5378, 0.4482};
  const double se[] = {0.076, 0.087, 0.096, 0.107, 0.114, 0.128, 0.135};
  ASSERT_EQ(c.steps.size(), 7u);
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(c.steps[i].time, t[i]);
    EXPECT_EQ(c.steps[i].at_risk, n[i]) << "t = " << t[i];
    EXPECT_EQ(c.steps[i].events, d[i]) << "t = " << t[i];
    EXPECT_NEAR(c.steps[i].survival, s[i], 5e-5) << "t = " << t[i];
    EXPECT_NEAR(c.steps[i].std_error, se[i], 5e-4) << "t = " << t[i];
  }
  EXPECT_EQ(c.steps[0].censored, 1);  // the 6+ is at risk at 6 and censored there
  EXPECT_EQ(c.n, 21);
  EXPECT_EQ(c.events, 9);
  EXPECT_EQ(c.censored, 12);
  // log(−log) band at t = 6 and the median with its interval: stats_reference.py.
  EXPECT_NEAR(c.steps[0].lower, 0.619718, 1e-6);
  EXPECT_NEAR(c.steps[0].upper, 0.951552, 1e-6);
  ASSERT_TRUE(c.median.has_value());
  EXPECT_EQ(*c.median, 23);
  ASSERT_TRUE(c.median_lower.has_value());
  EXPECT_EQ(*c.median_lower, 13);
  EXPECT_FALSE(c.median_upper.has_value());  // the upper band never falls to 0.5
  EXPECT_EQ(survival_at(c, 5.9), 1);
  EXPECT_NEAR(survival_at(c, 12), 0.7529, 5e-5);
  EXPECT_NEAR(survival_at(c, 100), 0.4482, 5e-5);
}

TEST(KaplanMeier, FreireichPlaceboMatchesStataLogLogBand) {
  SurvivalCurve c = kaplan_meier(placebo());
  // Stata's `sts list, by(group)` (log(−log) band) on these data, in G. Rodríguez's notes "Kaplan-Meier
  // Survival" (Princeton, data.princeton.edu/eco572/KaplanMeier.html): t = 1: 0.9048, 0.0641,
  // [0.6700, 0.9753]; t = 2: 0.8095, 0.0857, [0.5689, 0.9239].
  ASSERT_EQ(c.steps.size(), 12u);
  EXPECT_NEAR(c.steps[0].survival, 0.9048, 5e-5);
  EXPECT_NEAR(c.steps[0].std_error, 0.0641, 5e-5);
  EXPECT_NEAR(c.steps[0].lower, 0.6700, 5e-5);
  EXPECT_NEAR(c.steps[0].upper, 0.9753, 5e-5);
  EXPECT_NEAR(c.steps[1].survival, 0.8095, 5e-5);
  EXPECT_NEAR(c.steps[1].std_error, 0.0857, 5e-5);
  EXPECT_NEAR(c.steps[1].lower, 0.5689, 5e-5);
  EXPECT_NEAR(c.steps[1].upper, 0.9239, 5e-5);
  // Kleinbaum & Klein: S(8) = 0.381, the last step 0 at t = 23 (everyone relapsed).
  EXPECT_NEAR(c.steps[5].survival, 0.3810, 5e-5);
  EXPECT_EQ(c.steps.back().time, 23);
  EXPECT_EQ(c.steps.back().survival, 0);
  EXPECT_EQ(c.steps.back().lower, 0);
  EXPECT_EQ(c.steps.back().upper, 0);
  // Median 8 (R survfit prints 8, and 4–12 with its default log band); with the log(−log) band the
  // interval is 4–11 (stats_reference.py).
  EXPECT_EQ(c.median.value_or(-1), 8);
  EXPECT_EQ(c.median_lower.value_or(-1), 4);
  EXPECT_EQ(c.median_upper.value_or(-1), 11);
}

TEST(KaplanMeier, EdgeCases) {
  SurvivalCurve empty = kaplan_meier({});
  EXPECT_EQ(empty.n, 0);
  EXPECT_TRUE(empty.steps.empty());
  EXPECT_FALSE(empty.median.has_value());

  SurvivalCurve censored = kaplan_meier({{3, false}, {5, false}, {5, false}});
  EXPECT_TRUE(censored.steps.empty());
  EXPECT_EQ(censored.censored, 3);
  EXPECT_EQ(survival_at(censored, 10), 1);
  EXPECT_FALSE(censored.median.has_value());

  SurvivalCurve one = kaplan_meier({{4, true}});
  ASSERT_EQ(one.steps.size(), 1u);
  EXPECT_EQ(one.steps[0].at_risk, 1);
  EXPECT_EQ(one.steps[0].survival, 0);
  EXPECT_EQ(one.median.value_or(-1), 4);

  // Ties at t = 2: one event, one censoring; the censoring counts at risk at 2. By hand: S(2) = 1 − 1/4,
  // then at t = 3 two remain at risk, S(3) = 3/4 · 1/2; Greenwood at 2: S²·1/(4·3).
  SurvivalCurve ties = kaplan_meier({{2, true}, {2, false}, {3, true}, {5, false}});
  ASSERT_EQ(ties.steps.size(), 2u);
  EXPECT_EQ(ties.steps[0].at_risk, 4);
  EXPECT_EQ(ties.steps[0].censored, 1);
  EXPECT_DOUBLE_EQ(ties.steps[0].survival, 0.75);
  EXPECT_DOUBLE_EQ(ties.steps[0].std_error, 0.75 * std::sqrt(1.0 / 12));
  EXPECT_EQ(ties.steps[1].at_risk, 2);
  EXPECT_DOUBLE_EQ(ties.steps[1].survival, 0.375);
  EXPECT_EQ(ties.median.value_or(-1), 3);

  // S exactly 1/2 counts as reaching the median: 1 − 1/2 at t = 1.
  EXPECT_EQ(kaplan_meier({{1, true}, {2, false}}).median.value_or(-1), 1);
  // A 90% band is narrower than the 95% one.
  SurvivalCurve c90 = kaplan_meier(six_mp(), 0.90), c95 = kaplan_meier(six_mp());
  EXPECT_GT(c90.steps[0].lower, c95.steps[0].lower);
  EXPECT_LT(c90.steps[0].upper, c95.steps[0].upper);
}

TEST(LogRank, FreireichMatchesKleinbaumKlein) {
  // Kleinbaum & Klein, ch. 2: O = 9, E = 19.25 (6-MP); O = 21, E = 10.75 (placebo); log-rank
  // chi-square 16.79, 1 df, P < 0.0001. stats_reference.py: 16.7929409892, p = 4.168809e-05.
  LogRankResult r = log_rank({six_mp(), placebo()});
  ASSERT_TRUE(r.defined);
  EXPECT_EQ(r.df, 1);
  EXPECT_NEAR(r.chi_square, 16.79, 5e-3);
  EXPECT_NEAR(r.chi_square, 16.7929409892, 1e-9);
  EXPECT_NEAR(r.p_value, 4.168809e-05, 1e-10);
  EXPECT_EQ(r.observed[0], 9);
  EXPECT_EQ(r.observed[1], 21);
  EXPECT_NEAR(r.expected[0], 19.25, 5e-3);
  EXPECT_NEAR(r.expected[1], 10.75, 5e-3);
}

TEST(LogRank, ThreeGroups) {
  // The placebo arm cut after its 11th observation into two made-up groups: stats_reference.py
  // (2x2 solve of (O−E)ᵀV⁻¹(O−E) without the last group), chi2 = 46.4012498509, 2 df.
  std::vector<Observation> p = placebo();
  std::vector<Observation> early(p.begin(), p.begin() + 11), late(p.begin() + 11, p.end());
  LogRankResult r = log_rank({six_mp(), early, late});
  ASSERT_TRUE(r.defined);
  EXPECT_EQ(r.df, 2);
  EXPECT_NEAR(r.chi_square, 46.4012498509, 1e-8);
  EXPECT_NEAR(r.p_value, 8.3964676328e-11, 1e-18);
  EXPECT_NEAR(r.expected[1], 2.247413787794913, 1e-12);
  // An empty fourth group changes nothing and adds no degree of freedom.
  LogRankResult with_empty = log_rank({six_mp(), early, late, {}});
  EXPECT_EQ(with_empty.df, 2);
  EXPECT_NEAR(with_empty.chi_square, 46.4012498509, 1e-8);
}

TEST(LogRank, EdgeCases) {
  // Identical groups: O = E exactly, chi-square 0, p 1.
  LogRankResult same = log_rank({six_mp(), six_mp()});
  ASSERT_TRUE(same.defined);
  EXPECT_EQ(same.chi_square, 0);
  EXPECT_EQ(same.p_value, 1);
  // A group with no events is still a test. By hand: event times 1 and 2 in group a = {1, 2}, b = {3+, 4+}:
  // t=1: n=4, n_a=2, E_a=1/2, V=1·3/3·(1/2)(1/2)=1/4; t=2: n=3, n_a=1, E_a=1/3, V=1·2/2·(1/3)(2/3)=2/9.
  // O_a − E_a = 2 − 5/6 = 7/6; chi2 = (7/6)²/(1/4 + 2/9) = 49/36 · 36/17 = 49/17.
  LogRankResult no_events = log_rank({{{1, true}, {2, true}}, {{3, false}, {4, false}}});
  ASSERT_TRUE(no_events.defined);
  EXPECT_NEAR(no_events.chi_square, 49.0 / 17, 1e-12);
  EXPECT_EQ(no_events.observed[1], 0);
  // All censored in both: nothing to test.
  LogRankResult none = log_rank({{{1, false}, {2, false}}, {{3, false}}});
  EXPECT_FALSE(none.defined);
  EXPECT_TRUE(std::isnan(none.chi_square));
  EXPECT_TRUE(std::isnan(none.p_value));
  EXPECT_EQ(none.df, 0);
  // Events, but only one group ever at risk when they happen: undefined too.
  EXPECT_FALSE(log_rank({{{5, true}}, {{1, false}}}).defined);
}

TEST(MannWhitney, ExactSmallSamples) {
  // By hand: x = {3, 4}, y = {1, 2}: U = 4 is the largest of the 6 splits' U values {0,1,2,2,3,4}:
  // p = 2·1/6.
  MannWhitneyResult r = mann_whitney({3, 4}, {1, 2});
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.u, 4);
  EXPECT_NEAR(r.p_value, 1.0 / 3, 1e-15);
  // Three against three, fully separated: 2/C(6,3) = 0.1, the smallest two-sided p for 3 and 3
  // (critical-value tables give no 5% test there).
  EXPECT_NEAR(mann_whitney({4, 5, 6}, {1, 2, 3}).p_value, 0.1, 1e-15);
  EXPECT_EQ(mann_whitney({1, 2, 3}, {4, 5, 6}).u, 0);
  // stats_reference.py (all 462 splits enumerated): U = 24, p = 58/462.
  MannWhitneyResult five_six = mann_whitney({1.1, 2.3, 3.7, 5.2, 8.9}, {0.4, 0.9, 1.5, 2.0, 2.6, 3.1});
  EXPECT_TRUE(five_six.exact);
  EXPECT_EQ(five_six.u, 24);
  EXPECT_NEAR(five_six.p_value, 0.12554112554112554, 1e-14);
  // n = 1 each: U is 0 or 1 with probability 1/2: p = 1.
  EXPECT_EQ(mann_whitney({2}, {1}).p_value, 1);
  // Large exact: 50 vs 50 fully separated, p = 2/C(100,50) = 1.9808e-29 (C(100,50) = 1.00891344545564e29).
  std::vector<double> lo, hi;
  for (int i = 0; i < 50; ++i) lo.push_back(i), hi.push_back(100 + i);
  MannWhitneyResult big = mann_whitney(hi, lo);
  EXPECT_TRUE(big.exact);
  EXPECT_EQ(big.u, 2500);
  EXPECT_NEAR(big.p_value / (2 / 1.00891344545564e29), 1, 1e-12);
}

TEST(MannWhitney, NormalApproximationWithTies) {
  // Minitab's "Calculating Mann-Whitney statistics" (support.minitab.com): Samp1 = 22 24 25 29 30,
  // Samp2 = 16 21 22 23: 18 positive and 1 zero difference, so U = 18.5 (W = 33.5). Minitab's z = 1.9596
  // leaves out the tie term; with it (one pair tied, Σ(t³−t) = 6): z = 8/sqrt(20/12·(10 − 6/72)) =
  // 1.9678081480578906 (by hand; stats_reference.py), p = 2(1 − Φ(z)) = 0.0490901163.
  MannWhitneyResult r = mann_whitney({22, 24, 25, 29, 30}, {16, 21, 22, 23});
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.u, 18.5);
  EXPECT_NEAR(r.z, 1.9678081480578906, 1e-12);
  EXPECT_NEAR(r.p_value, 0.049090116322607624, 1e-12);
  // stats_reference.py: x = 3 5 5 7 9 9 9 12, y = 1 2 5 6 6 8: U = 36, z = 1.4995483874214384,
  // p = 0.1337314257168143.
  MannWhitneyResult s = mann_whitney({3, 5, 5, 7, 9, 9, 9, 12}, {1, 2, 5, 6, 6, 8});
  EXPECT_EQ(s.u, 36);
  EXPECT_NEAR(s.z, 1.4995483874214384, 1e-12);
  EXPECT_NEAR(s.p_value, 0.1337314257168143, 1e-12);
  // No ties but beyond exact_max: the normal approximation, said so.
  EXPECT_FALSE(mann_whitney({4, 5, 6}, {1, 2, 3}, /*exact_max=*/2).exact);
  // Everything tied, or identical samples: no evidence.
  MannWhitneyResult tied = mann_whitney({7, 7, 7}, {7, 7});
  EXPECT_EQ(tied.u, 3);
  EXPECT_EQ(tied.p_value, 1);
  EXPECT_TRUE(std::isnan(tied.z));
  MannWhitneyResult same = mann_whitney({1, 2, 3, 4}, {1, 2, 3, 4});
  EXPECT_EQ(same.u, 8);
  EXPECT_EQ(same.p_value, 1);
}

TEST(PermutationTest, ExactEnumeration) {
  // stats_reference.py, all C(11,5) = 462 splits: medians differ by 6.25, 9 splits as extreme;
  // means by 6.016666…, 7 splits.
  const std::vector<double> x = {12, 15, 9, 20, 17}, y = {8, 10, 7, 11, 6, 9.5};
  PermutationResult med = permutation_test(x, y);
  EXPECT_TRUE(med.exact);
  EXPECT_EQ(med.splits, 462);
  EXPECT_EQ(med.observed, 6.25);
  EXPECT_EQ(med.as_extreme, 9);
  EXPECT_NEAR(med.p_value, 9.0 / 462, 1e-15);
  PermutationOptions means;
  means.statistic = Location::kMean;
  PermutationResult mean = permutation_test(x, y, means);
  EXPECT_NEAR(mean.observed, 6.016666666666667, 1e-12);
  EXPECT_EQ(mean.as_extreme, 7);
  // By hand: {1} vs {2}: 2 splits, both |T| = 1: p = 1. Identical samples: T = 0, every split counts.
  EXPECT_EQ(permutation_test({1}, {2}).p_value, 1);
  EXPECT_EQ(permutation_test({1, 2, 3}, {1, 2, 3}).p_value, 1);
}

TEST(PermutationTest, RandomSplitsAreSeededAndPortable) {
  // C(30,15) > 20000: 999 random splits from mt19937_64(3). stats_reference.py, the same draws with
  // its own mt19937_64 and uniform_below: 5 as extreme, p = 6/1000.
  const std::vector<double> x = {11, 14, 9, 17, 12, 15, 10, 13, 16, 18, 12.5, 14.5, 9.5, 19, 11.5};
  const std::vector<double> y = {10, 8, 12, 9, 7, 11, 13, 6, 10.5, 8.5, 9.25, 7.5, 12.25, 5, 14};
  PermutationOptions o;
  o.permutations = 999;
  o.seed = 3;
  PermutationResult r = permutation_test(x, y, o);
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.observed, 3.75);
  EXPECT_EQ(r.as_extreme, 5);
  EXPECT_NEAR(r.p_value, 0.006, 1e-15);
}

TEST(Bootstrap, MatchesIndependentImplementation) {
  // stats_reference.py with the same draws (B = 2000, seed 7): estimate 1.75, percentile [0.9, 3.2],
  // BCa [0.45, 3], z0 = -0.2012539607, a = 0.0009803173649.
  const std::vector<double> x = {4.2, 5.1, 3.3, 6.8, 5.5, 4.9, 7.2, 5.0, 6.1};
  const std::vector<double> y = {3.1, 2.8, 4.0, 3.6, 2.2, 3.9, 4.4, 3.0};
  BootstrapOptions o;
  o.resamples = 2000;
  o.seed = 7;
  BootstrapInterval r = bootstrap_median_difference(x, y, o);
  EXPECT_NEAR(r.estimate, 1.75, 1e-12);
  EXPECT_NEAR(r.lower, 0.9, 1e-12);
  EXPECT_NEAR(r.upper, 3.2, 1e-12);
  EXPECT_NEAR(r.bca_lower, 0.45, 1e-12);
  EXPECT_NEAR(r.bca_upper, 3.0, 1e-12);
  EXPECT_NEAR(r.z0, -0.2012539607, 1e-9);
  EXPECT_NEAR(r.acceleration, 0.0009803173649, 1e-12);
  BootstrapInterval again = bootstrap_median_difference(x, y, o);
  EXPECT_EQ(again.lower, r.lower);
  EXPECT_EQ(again.bca_upper, r.bca_upper);
}

TEST(Bootstrap, HandDerivedCases) {
  // Constant samples: every resample gives 5 − 2.
  BootstrapInterval c = bootstrap_median_difference({5, 5, 5}, {2, 2});
  EXPECT_EQ(c.estimate, 3);
  EXPECT_EQ(c.lower, 3);
  EXPECT_EQ(c.upper, 3);
  EXPECT_EQ(c.bca_lower, 3);  // z0 = 0 (all resamples tie the estimate), a = 0 (no jackknife spread)
  EXPECT_EQ(c.bca_upper, 3);
  // x = {0, 1}, y = {0}: resampled medians 0, 1/2, 1 with probabilities 1/4, 1/2, 1/4, so the 2.5% and
  // 97.5% quantiles of 9999 resamples are 0 and 1 (failing would need under 250 zeros where 2500 are
  // expected).
  BootstrapInterval two = bootstrap_median_difference({0, 1}, {0});
  EXPECT_EQ(two.estimate, 0.5);
  EXPECT_EQ(two.lower, 0);
  EXPECT_EQ(two.upper, 1);
  // A BCa interval not asked for is NaN.
  BootstrapOptions no_bca;
  no_bca.bca = false;
  EXPECT_TRUE(std::isnan(bootstrap_median_difference({0, 1}, {0}, no_bca).bca_lower));
}

TEST(CliffsDelta, HandDerivedAndThresholds) {
  // By hand: x = {1, 2, 3}, y = {2, 4}: the six pairs are 1<2, 1<4, 2=2, 2<4, 3>2, 3<4, so
  // (#> − #<)/6 = (1 − 4)/6 = −0.5.
  EXPECT_DOUBLE_EQ(cliffs_delta({1, 2, 3}, {2, 4}), -0.5);
  EXPECT_EQ(cliffs_delta({5, 6}, {1, 2, 3}), 1);
  EXPECT_EQ(cliffs_delta({1, 2, 3}, {1, 2, 3}), 0);
  // delta = 2U/(n1 n2) − 1 with the Minitab example's U = 18.5: 2·18.5/20 − 1 = 0.85.
  EXPECT_DOUBLE_EQ(cliffs_delta({22, 24, 25, 29, 30}, {16, 21, 22, 23}), 0.85);
  // Romano et al. (2006): negligible < 0.147 <= small < 0.33 <= medium < 0.474 <= large.
  EXPECT_EQ(cliffs_delta_magnitude(0.146), "negligible");
  EXPECT_EQ(cliffs_delta_magnitude(-0.147), "small");
  EXPECT_EQ(cliffs_delta_magnitude(0.33), "medium");
  EXPECT_EQ(cliffs_delta_magnitude(0.473), "medium");
  EXPECT_EQ(cliffs_delta_magnitude(-0.474), "large");
}

TEST(Holm, WorkedExample) {
  // The four hypotheses of the Holm–Bonferroni worked example (Wikipedia "Holm–Bonferroni method";
  // also GeeksforGeeks): p = 0.01, 0.04, 0.03, 0.005; at α = 0.05 H4 and H1 are rejected, H3 and H2
  // not. Adjusted by hand: sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, max(0.04·1, 0.06) = 0.06.
  std::vector<double> adj = holm_adjust({0.01, 0.04, 0.03, 0.005});
  ASSERT_EQ(adj.size(), 4u);
  EXPECT_NEAR(adj[0], 0.03, 1e-15);
  EXPECT_NEAR(adj[1], 0.06, 1e-15);
  EXPECT_NEAR(adj[2], 0.06, 1e-15);
  EXPECT_NEAR(adj[3], 0.02, 1e-15);
  // NaN (an undefined test) stays NaN and is not counted, so m = 3 here: 0.02·3 = 0.06, 0.6·2 capped
  // at 1, and 0.7·1 raised to 1 to stay monotone.
  std::vector<double> capped = holm_adjust({0.6, NAN, 0.02, 0.7});
  EXPECT_EQ(capped[0], 1);
  EXPECT_TRUE(std::isnan(capped[1]));
  EXPECT_NEAR(capped[2], 0.06, 1e-15);
  EXPECT_EQ(capped[3], 1);
  EXPECT_TRUE(holm_adjust({}).empty());
}

TEST(FitLine, AnscombeQuartetI) {
  // Anscombe (1973), "Graphs in Statistical Analysis", Am. Stat. 27(1):17–21, data set I: fitted line
  // y = 3.00 + 0.500 x, standard error of the slope 0.118, r² = 0.667. stats_reference.py: a =
  // 3.0000909091, b = 0.5000909091, r² = 0.6665424595, SE(b) = 0.1179055006, SE(a) = 1.1247467908.
  const std::vector<double> x = {10, 8, 13, 9, 11, 14, 6, 4, 12, 7, 5};
  const std::vector<double> y = {8.04, 6.95, 7.58, 8.81, 8.33, 9.96, 7.24, 4.26, 10.84, 4.82, 5.68};
  Result<LinearFit> f = fit_line(x, y);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->n, 11);
  EXPECT_NEAR(f->intercept, 3.00, 5e-3);
  EXPECT_NEAR(f->slope, 0.500, 5e-4);
  EXPECT_NEAR(f->slope_std_error, 0.118, 5e-4);
  EXPECT_NEAR(f->r_squared, 0.667, 5e-4);
  EXPECT_NEAR(f->intercept, 3.0000909091, 1e-9);
  EXPECT_NEAR(f->slope, 0.5000909091, 1e-9);
  EXPECT_NEAR(f->r_squared, 0.6665424595, 1e-9);
  EXPECT_NEAR(f->slope_std_error, 0.1179055006, 1e-9);
  EXPECT_NEAR(f->intercept_std_error, 1.1247467908, 1e-9);
}

TEST(FitLine, EdgeCasesAreErrorsOrNaN) {
  EXPECT_FALSE(fit_line({1, 2}, {1}).ok());
  EXPECT_FALSE(fit_line({1}, {1}).ok());
  EXPECT_FALSE(fit_line({2, 2, 2}, {1, 2, 3}).ok());
  Result<LinearFit> bad = fit_line({1, NAN}, {1, 2});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("point 1"), std::string::npos) << bad.status().message();
  // Two points: the line through them, no standard errors.
  Result<LinearFit> two = fit_line({0, 2}, {1, 5});
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->slope, 2);
  EXPECT_EQ(two->intercept, 1);
  EXPECT_TRUE(std::isnan(two->slope_std_error));
  // Flat y: slope 0, R² undefined.
  EXPECT_TRUE(std::isnan(fit_line({0, 1, 2}, {4, 4, 4})->r_squared));
}

TEST(FitGrowthRate, RecoversExactExponential) {
  // y = 0.5·e^{0.3 x} exactly, plus points outside the range that would spoil it.
  std::vector<double> x, y;
  for (int i = 0; i <= 10; ++i) x.push_back(i), y.push_back(0.5 * std::exp(0.3 * i));
  x.push_back(11), y.push_back(-1);  // outside [0, 10]: ignored
  Result<LinearFit> f = fit_growth_rate(x, y, 0, 10);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_NEAR(f->slope, 0.3, 1e-12);
  EXPECT_NEAR(std::exp(f->intercept), 0.5, 1e-12);
  EXPECT_NEAR(f->r_squared, 1, 1e-12);
  Result<LinearFit> all = fit_growth_rate(x, y);
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("point 11"), std::string::npos) << all.status().message();
}

TEST(UniformBelow, SameDrawsAsTheReferenceEngine) {
  // The standard fixes mt19937_64: its 10000th output from the default seed is 9981545732273789042
  // ([rand.predef]). stats_reference.py's own mt19937_64 and mapping give these draws from seed 42.
  std::mt19937_64 standard;
  standard.discard(9999);
  EXPECT_EQ(standard(), 9981545732273789042ull);
  std::mt19937_64 rng(42);
  const uint64_t n[] = {1, 2, 3, 10, 1000, (uint64_t{1} << 63) + 1, 6};
  const uint64_t want[] = {0, 0, 1, 2, 381, 1375579315383837727ull, 0};
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(uniform_below(rng, n[i]), want[i]) << "n = " << n[i];
}

// Noether's sample size for the Mann–Whitney test, solved for the effect (the values from Python's
// statistics.NormalDist: z_0.975 + z_0.8 = 2.8015852, δ = 2z/√(12·n1·n2/N), d = √2·Φ⁻¹((1+δ)/2)).
TEST(MannWhitneyDetectable, NoetherEffectAndTheSmallestPossibleP) {
  DetectableEffect e = mann_whitney_detectable(8, 8);
  EXPECT_NEAR(e.min_p, 2.0 / 12870, 1e-15);
  EXPECT_NEAR(e.cliffs_delta, 0.8087479899175992, 1e-9);
  EXPECT_NEAR(e.shift_sd, 1.8482134968570678, 1e-8);
  // Unequal groups with the same n1·n2/N detect the same effect.
  EXPECT_NEAR(mann_whitney_detectable(5, 20).cliffs_delta, e.cliffs_delta, 1e-12);
  // Larger samples see smaller effects.
  EXPECT_LT(mann_whitney_detectable(32, 32).cliffs_delta, e.cliffs_delta / 1.9);
  // 3 vs 3: the exact test cannot go below p = 0.1, so nothing is detectable at alpha = 0.05.
  DetectableEffect small = mann_whitney_detectable(3, 3);
  EXPECT_NEAR(small.min_p, 0.1, 1e-15);
  EXPECT_TRUE(std::isnan(small.cliffs_delta));
  EXPECT_TRUE(std::isnan(small.shift_sd));
  // 4 vs 4 can reach p = 2/70 < 0.05, yet 80% power would need |δ| > 1: nothing is detectable either.
  DetectableEffect four = mann_whitney_detectable(4, 4);
  EXPECT_NEAR(four.min_p, 2.0 / 70, 1e-15);
  EXPECT_TRUE(std::isnan(four.cliffs_delta));
}

// Hollander & Wolfe (1973), p. 29: Hamilton depression scale before (x) and after (y) a tranquiliser,
// nine patients; R's wilcox.test(x, y, paired = TRUE) gives V = 40, p = 0.03906 (stats_reference.py
// enumerates the 2^9 signs: exactly 0.0390625).
TEST(Wilcoxon, HollanderWolfeDepressionExample) {
  const std::vector<double> x = {1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30};
  const std::vector<double> y = {0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29};
  std::vector<double> d;
  for (size_t i = 0; i < x.size(); ++i) d.push_back(x[i] - y[i]);
  WilcoxonResult r = wilcoxon_signed_rank(d);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.n_nonzero, 9);
  EXPECT_DOUBLE_EQ(r.w_plus, 40);
  EXPECT_DOUBLE_EQ(r.p_value, 0.0390625);
  // The signs swapped give the other tail: the same p.
  for (double& v : d) v = -v;
  EXPECT_DOUBLE_EQ(wilcoxon_signed_rank(d).w_plus, 5);
  EXPECT_DOUBLE_EQ(wilcoxon_signed_rank(d).p_value, 0.0390625);
}

TEST(Wilcoxon, TiesAndZerosUseTheNormalApproximation) {
  // stats_reference.py: zero dropped, midranks, tie-corrected variance, continuity correction.
  WilcoxonResult r = wilcoxon_signed_rank({1, -1, 2, 2, 3, -3, 4, 5, 0, 6, -0.5, 7});
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.n_nonzero, 11);
  EXPECT_DOUBLE_EQ(r.w_plus, 56);
  EXPECT_NEAR(r.z, 2.0034657780668566, 1e-12);
  EXPECT_NEAR(r.p_value, 0.0451273172726252, 1e-9);
}

TEST(Wilcoxon, EdgeCases) {
  WilcoxonResult none = wilcoxon_signed_rank({0, 0, 0});
  EXPECT_EQ(none.n_nonzero, 0);
  EXPECT_EQ(none.p_value, 1);
  // Eight pairs all on one side: the smallest p eight pairs can give, 2/2^8.
  EXPECT_DOUBLE_EQ(wilcoxon_signed_rank({1, 2, 3, 4, 5, 6, 7, 8}).p_value, 2.0 / 256);
  EXPECT_DOUBLE_EQ(wilcoxon_signed_rank({5}).p_value, 1);  // one pair: both tails are 1/2
}

TEST(Wilcoxon, PairedTestSeesWhatTheUnpairedTestMisses) {
  // Seeds spread the losses widely; the second config is 1% lower in every seed.
  const std::vector<double> a = {0.10, 0.25, 0.41, 0.55, 0.72, 0.88, 1.03, 1.20};
  std::vector<double> b, d;
  for (double v : a) b.push_back(v * 0.99), d.push_back(v - v * 0.99);
  EXPECT_GT(mann_whitney(a, b).p_value, 0.5);
  EXPECT_LT(wilcoxon_signed_rank(d).p_value, 0.01);
  PermutationOptions mean;
  mean.statistic = Location::kMean;
  EXPECT_LT(paired_permutation_test(d, mean).p_value, 0.01);
  const Interval ci = t_interval(d);
  EXPECT_GT(ci.lower, 0);
}

TEST(PairedPermutation, ExactSignFlipsMatchTheReference) {
  PermutationOptions o;
  o.statistic = Location::kMean;
  PermutationResult r = paired_permutation_test({0.3, -0.1, 0.4, 0.2, 0.5, -0.2, 0.6}, o);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.splits, 128);
  EXPECT_NEAR(r.observed, 0.24285714285714288, 1e-15);
  EXPECT_DOUBLE_EQ(r.p_value, 0.109375);  // stats_reference.py: 14 of 128
  // Random sign flips past max_exact: seeded, (b+1)/(m+1), close to the exact p.
  o.max_exact = 10;
  o.permutations = 20000;
  o.seed = 7;
  PermutationResult random = paired_permutation_test({0.3, -0.1, 0.4, 0.2, 0.5, -0.2, 0.6}, o);
  EXPECT_FALSE(random.exact);
  EXPECT_NEAR(random.p_value, 0.109375, 0.01);
  EXPECT_EQ(random.as_extreme, paired_permutation_test({0.3, -0.1, 0.4, 0.2, 0.5, -0.2, 0.6}, o).as_extreme);
}

TEST(TInterval, HandDerived) {
  // mean 3, s = √2.5, t(4, 0.975) = 2.7764451051977987: half-width 2.7764451051977987·√(2.5/5).
  Interval r = t_interval({1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(r.estimate, 3);
  EXPECT_NEAR(r.upper - 3, 2.7764451051977987 * std::sqrt(0.5), 1e-12);
  EXPECT_NEAR(3 - r.lower, 2.7764451051977987 * std::sqrt(0.5), 1e-12);
  EXPECT_TRUE(std::isnan(t_interval({4}).lower));
  Interval constant = t_interval({2, 2, 2});
  EXPECT_EQ(constant.lower, 2);
  EXPECT_EQ(constant.upper, 2);
}

TEST(BootstrapPaired, PercentileIntervalOfPairs) {
  BootstrapOptions o;
  o.resamples = 4999;
  o.seed = 1;
  Interval r = bootstrap_paired({1, 2, 3, 4, 100}, Location::kMedian, o);
  EXPECT_EQ(r.estimate, 3);
  EXPECT_GE(r.lower, 1);
  EXPECT_LE(r.upper, 100);
  EXPECT_LT(r.lower, r.estimate);
  Interval same = bootstrap_paired({1, 2, 3, 4, 100}, Location::kMedian, o);
  EXPECT_EQ(same.lower, r.lower);  // seeded
  EXPECT_EQ(bootstrap_paired({0.5, 0.5}, Location::kMean, o).lower, 0.5);
}

TEST(DetectableBySimulation, SmallestPossiblePAndShiftsOfTheRightSize) {
  // Eight pairs: the smallest p is 2/2^8 = 0.0078; after Holm over 12 tests (α/m = 0.0042) no shift of
  // any size can be significant.
  DetectableEffect holm12 = detectable_by_simulation(RankTest::kWilcoxonSignedRank, 8, 0, 0.05 / 12);
  EXPECT_DOUBLE_EQ(holm12.min_p, 2.0 / 256);
  EXPECT_TRUE(std::isnan(holm12.shift_sd));
  // At α = 0.05 the signed-rank test at 8 pairs needs about 1.1–1.3 SD of the differences (the paired t
  // test needs 1.13 at power 0.8); Mann–Whitney at 8 vs 8 about 1.4–1.7 SD (the t test needs 1.50).
  DetectableEffect paired = detectable_by_simulation(RankTest::kWilcoxonSignedRank, 8, 0, 0.05);
  EXPECT_GT(paired.shift_sd, 1.0);
  EXPECT_LT(paired.shift_sd, 1.45);
  EXPECT_TRUE(std::isnan(paired.cliffs_delta));
  DetectableEffect unpaired = detectable_by_simulation(RankTest::kMannWhitney, 8, 8, 0.05);
  EXPECT_DOUBLE_EQ(unpaired.min_p, 2.0 / 12870);
  EXPECT_GT(unpaired.shift_sd, 1.35);
  EXPECT_LT(unpaired.shift_sd, 1.8);
  EXPECT_NEAR(unpaired.cliffs_delta, 2 * 0.5 * std::erfc(-unpaired.shift_sd / 2) - 1, 1e-12);
  // More pairs, smaller detectable shifts; the same seed, the same answer.
  EXPECT_LT(detectable_by_simulation(RankTest::kWilcoxonSignedRank, 30, 0, 0.05).shift_sd, paired.shift_sd);
  EXPECT_EQ(detectable_by_simulation(RankTest::kWilcoxonSignedRank, 8, 0, 0.05).shift_sd, paired.shift_sd);
}

}  // namespace
}  // namespace saddlescope::analysis
