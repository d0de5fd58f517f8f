// Saddle episodes on synthetic curvature and metrics series with planted answers: entry, escape by the
// loss and by the curvature rule, censoring, a run that starts at the saddle, cascades, resolution,
// unusable rows, loss-level crossings and bad inputs.
#include "saddlescope/analysis/episodes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace saddlescope::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

store::CurvatureRow probe(int64_t step, double loss, double grad, double lambda_min, double lambda_max) {
  store::CurvatureRow r;
  r.step = step;
  r.probe_loss = loss;
  r.probe_grad_norm = grad;
  r.lambda_min = lambda_min;
  r.lambda_max = lambda_max;
  r.negative_mass = kNaN;
  r.g_dot_vmin = grad / 2;
  return r;
}

std::vector<store::MetricsRow> flat_metrics(int64_t steps, double loss = 1.0, double lr = 0.01) {
  std::vector<store::MetricsRow> m;
  for (int64_t s = 0; s < steps; ++s) m.push_back({s, loss, 0.5, lr, 0.0});
  return m;
}

Result<RunEpisodes> find(const std::vector<store::CurvatureRow>& c, const EpisodeOptions& o = {}) {
  return find_episodes(c, flat_metrics(c.empty() ? 1 : c.back().step + 1), o);
}

// Descending (away from saddles) until step 40, a plateau with negative curvature from 50 (entered at
// 60: the loss still fell from 40 to 50), the loss 5% lower at 110, a minimum afterwards.
std::vector<store::CurvatureRow> planted() {
  std::vector<store::CurvatureRow> c;
  for (int64_t s = 0; s <= 40; s += 10) c.push_back(probe(s, 3.0 - 0.04 * static_cast<double>(s), 5.0, 0.1, 10));
  for (int64_t s = 50; s <= 100; s += 10) c.push_back(probe(s, 1.0, 0.1, -1.0, 10));
  for (int64_t s = 110; s <= 200; s += 10) c.push_back(probe(s, 0.95, 0.2, 0.5, 10));
  return c;
}

TEST(Episodes, PlantedEpisodeEscapesByTheLoss) {
  auto r = find(planted());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->gradient_scale, 5.0);
  EXPECT_EQ(r->probe_interval, 10);
  EXPECT_EQ(r->probe_count, 21);
  ASSERT_EQ(r->episodes.size(), 1u);
  const Episode& e = r->episodes[0];
  EXPECT_EQ(e.entry_step, 60);
  EXPECT_EQ(e.entry_resolution, 10);
  ASSERT_TRUE(e.exit_step.has_value());
  EXPECT_EQ(*e.exit_step, 110);
  EXPECT_EQ(e.exit_resolution, 10);
  EXPECT_EQ(e.exit_rule, "loss");
  EXPECT_FALSE(e.censored);
  EXPECT_EQ(e.escape_steps, 50);
  EXPECT_EQ(e.probe_steps, 5);  // 60 .. 100
  EXPECT_EQ(e.loss_entry, 1.0);
  EXPECT_EQ(e.loss_exit, 0.95);
  EXPECT_EQ(e.lambda_min_entry, -1.0);
  EXPECT_EQ(e.lambda_max_entry, 10.0);
  EXPECT_EQ(e.lr_entry, 0.01);
  EXPECT_EQ(r->time_in_saddle, 50);
}

TEST(Episodes, AnEpisodeOpenAtTheEndIsCensoredNotDropped) {
  auto c = planted();
  c.resize(11);  // the run ends at step 100, still on the plateau
  auto r = find(c);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 1u);
  const Episode& e = r->episodes[0];
  EXPECT_TRUE(e.censored);
  EXPECT_FALSE(e.exit_step.has_value());
  EXPECT_EQ(e.exit_rule, "");
  EXPECT_EQ(e.escape_steps, 40);  // censored at the last probe step
  EXPECT_TRUE(std::isnan(e.loss_exit));
  EXPECT_EQ(r->last_probe_step, 100);
}

TEST(Episodes, EscapeByCurvatureWhenTheLossHasNotYetFallen) {
  auto c = planted();
  c[11] = probe(110, 0.999, 0.2, -0.004, 10);  // λmin = −0.4e-3·λmax > −γ/2·λmax
  auto r = find(c);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 1u);
  EXPECT_EQ(r->episodes[0].exit_rule, "curvature");
  EXPECT_EQ(*r->episodes[0].exit_step, 110);
  // Still below −γ/2·λmax: not an escape; the run stalls to the end.
  c[11] = probe(110, 0.999, 0.2, -0.006, 10);
  for (size_t i = 12; i < c.size(); ++i) c[i] = probe(c[i].step, 0.999, 0.1, -1.0, 10);
  r = find(c);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 1u);
  EXPECT_TRUE(r->episodes[0].censored);
  EXPECT_EQ(r->episodes[0].escape_steps, 140);
}

// A run that starts at the saddle: ‖g_0‖ is tiny, so DESIGN.md's ε·‖g_0‖ rule could never fire; against
// the run's gradient scale G it does.
TEST(Episodes, ARunStartingAtTheSaddleIsInAnEpisodeFromStepZero) {
  std::vector<store::CurvatureRow> c = {probe(0, 10.0, 1e-6, -4, 4), probe(10, 10.0, 2e-6, -4, 4),
                                        probe(20, 9.99999, 1e-4, -4, 4), probe(30, 7.0, 4.0, -2, 7),
                                        probe(40, 1.0, 0.5, 0.1, 9)};
  auto r = find(c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->gradient_scale, 4.0);
  ASSERT_EQ(r->episodes.size(), 1u);
  EXPECT_EQ(r->episodes[0].entry_step, 0);
  EXPECT_EQ(r->episodes[0].entry_resolution, 0);
  EXPECT_EQ(*r->episodes[0].exit_step, 30);
  EXPECT_EQ(r->episodes[0].exit_rule, "loss");
  // The exact saddle (g = 0 exactly, a deterministic run that never moves): detected and censored.
  std::vector<store::CurvatureRow> exact = {probe(0, 10, 0, -4, 4), probe(10, 10, 0, -4, 4), probe(20, 10, 0, -4, 4)};
  r = find(exact);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 1u);
  EXPECT_TRUE(r->episodes[0].censored);
  EXPECT_EQ(r->episodes[0].escape_steps, 20);
}

TEST(Episodes, TheLossPlateauRuleUsesTheAdjacentProbeInterval) {
  // Small gradient and negative curvature, but the loss falls 0.5% per interval: descending, not a saddle.
  std::vector<store::CurvatureRow> c;
  for (int64_t s = 0; s <= 50; s += 10) c.push_back(probe(s, std::pow(0.995, static_cast<double>(s) / 10), 0.1, -1, 10));
  c.push_back(probe(60, 0.5, 5.0, 1, 10));
  auto r = find(c);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->episodes.empty());
  EpisodeOptions no_plateau;
  no_plateau.delta = std::numeric_limits<double>::infinity();
  r = find(c, no_plateau);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 2u);
  EXPECT_EQ(r->episodes[0].entry_step, 0);
  EXPECT_EQ(*r->episodes[0].exit_step, 30);  // 0.995³ = 0.985: more than 1% below the entry's 1.0
  EXPECT_EQ(r->episodes[1].entry_step, 30);  // still in the region without the plateau rule
  EXPECT_EQ(*r->episodes[1].exit_step, 60);
  EXPECT_EQ(r->episodes[1].exit_rule, "loss");
}

TEST(Episodes, CascadesOpenTheNextEpisodeOnTheNextPlateau) {
  // Two plateaus, the second 2% below the first, each with negative curvature; the second is entered at
  // 30, when the loss has stopped falling.
  std::vector<store::CurvatureRow> c = {probe(0, 1.0, 0.1, -1, 10), probe(10, 1.0, 0.1, -1, 10),
                                        probe(20, 0.98, 0.1, -1, 10), probe(30, 0.98, 0.1, -1, 10),
                                        probe(40, 0.5, 5.0, 1, 10)};
  auto r = find(c);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 2u);
  EXPECT_EQ(r->episodes[0].entry_step, 0);
  EXPECT_EQ(*r->episodes[0].exit_step, 20);
  EXPECT_EQ(r->episodes[1].entry_step, 30);
  EXPECT_EQ(*r->episodes[1].exit_step, 40);
  EXPECT_EQ(r->time_in_saddle, 30);
}

TEST(Episodes, UnusableRowsAreNeverInTheRegionNorEscapes) {
  auto c = planted();
  c[6].lambda_min = kNaN;   // step 60: the entry moves to 70, whose plateau rule looks back to 50
  c[11].probe_loss = kNaN;  // step 110: no escape there; 120 escapes
  auto r = find(c);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 1u);
  EXPECT_EQ(r->episodes[0].entry_step, 70);
  EXPECT_EQ(r->episodes[0].entry_resolution, 10);
  EXPECT_EQ(*r->episodes[0].exit_step, 120);
  EXPECT_EQ(r->episodes[0].exit_resolution, 10);
}

TEST(Episodes, RowsInAnyOrderAndUnevenCadence) {
  auto c = planted();
  c.erase(c.begin() + 12, c.begin() + 15);  // probes at ..., 110, 150, ...
  c.erase(c.begin() + 6, c.begin() + 10);   // probes at 40, 50, 100, 110, 150
  std::reverse(c.begin(), c.end());
  auto r = find(c);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 1u);
  EXPECT_EQ(r->episodes[0].entry_step, 100);
  EXPECT_EQ(r->episodes[0].entry_resolution, 50);
  EXPECT_EQ(*r->episodes[0].exit_step, 110);
  EXPECT_EQ(r->episodes[0].probe_steps, 1);
  EXPECT_EQ(r->probe_interval, 10);
}

TEST(Episodes, NoCurvatureRowsNoEpisodes) {
  auto r = find_episodes({}, flat_metrics(10), {});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->episodes.empty());
  EXPECT_EQ(r->probe_count, 0);
  EXPECT_EQ(r->gradient_scale, 0);
}

TEST(Episodes, LossLevelCrossingsUseATrailingMean) {
  std::vector<store::MetricsRow> m;
  for (int64_t s = 0; s < 100; ++s) m.push_back({s, s < 50 ? 2.0 : 0.5, 0, 0.01, 0});
  m[10].loss = 0.0;  // one lucky mini-batch does not cross 1.0 with a window of 4
  EpisodeOptions o;
  o.loss_window = 4;
  o.loss_levels = {1.0, 0.5, 0.1};
  auto r = find_episodes({}, m, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->level_crossings.size(), 3u);
  EXPECT_EQ(r->level_crossings[0], 52);  // at 51 mean(2, 2, .5, .5) = 1.25; at 52 mean(2, .5, .5, .5) = 0.875
  EXPECT_EQ(r->level_crossings[1], 53);
  EXPECT_FALSE(r->level_crossings[2].has_value());
}

TEST(Episodes, BadInputsAreErrorsNamingTheOptionOrStep) {
  EpisodeOptions o;
  o.epsilon = 0;
  EXPECT_EQ(find(planted(), o).status().message(), "epsilon must be > 0 and finite, got 0");
  o = {};
  o.loss_window = 0;
  EXPECT_EQ(find(planted(), o).status().message(), "loss_window must be >= 1, got 0");
  o = {};
  o.delta = -1;
  EXPECT_EQ(find(planted(), o).status().message(), "delta must be > 0 (inf: no plateau rule), got -1");
  auto c = planted();
  c.push_back(c[3]);
  EXPECT_EQ(find(c).status().message(), "curvature.csv: step 30 appears twice");
}

}  // namespace
}  // namespace saddlescope::analysis
