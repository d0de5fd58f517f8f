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

TEST(Episodes, APlateauIsSlowAgainstTheRunsOwnPace) {
  // Small gradient and negative curvature while the loss slides 0.5% per interval, then a fall to 0.5:
  // against that fall (R = 0.0475 per step) the slide is a plateau, and the fall is the escape.
  std::vector<store::CurvatureRow> c;
  for (int64_t s = 0; s <= 50; s += 10) c.push_back(probe(s, std::pow(0.995, static_cast<double>(s) / 10), 0.1, -1, 10));
  c.push_back(probe(60, 0.5, 5.0, 1, 10));
  auto r = find(c);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->largest_rate, (std::pow(0.995, 5) - 0.5) / 10, 1e-15);
  ASSERT_EQ(r->episodes.size(), 1u);
  EXPECT_EQ(r->episodes[0].entry_step, 0);
  EXPECT_EQ(*r->episodes[0].exit_step, 60);  // 0.995³ is 1.5% below entry at 30, but still in the region
  EXPECT_EQ(r->episodes[0].exit_rule, "loss");
  // The same slide alone is the run's pace: steady descent, no plateau, no episode.
  c.pop_back();
  r = find(c);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->episodes.empty());
  // Without the plateau rule the slide is in the region, and the last probe censors the episode.
  EpisodeOptions no_plateau;
  no_plateau.delta = std::numeric_limits<double>::infinity();
  r = find(c, no_plateau);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 1u);
  EXPECT_TRUE(r->episodes[0].censored);
}

TEST(Episodes, ThePlateauRuleIsTwoSided) {
  // The loss jumps up by half at 20 (as fast as the run ever moves): not a plateau, though it did not fall.
  std::vector<store::CurvatureRow> c = {probe(0, 1.0, 0.1, -1, 10), probe(10, 1.0, 0.1, -1, 10),
                                        probe(20, 1.5, 0.1, -1, 10), probe(30, 1.5, 0.1, -1, 10)};
  auto r = find(c);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 1u);
  EXPECT_EQ(r->episodes[0].entry_step, 0);
  EXPECT_TRUE(r->episodes[0].censored) << "a rise is no escape";
  // From 10 on: 10 and 30 are on plateaus, 20 (the jump) is not; 10's episode is still open at 20.
  c.erase(c.begin());
  c[0].lambda_min = 1;  // 10 away from any saddle
  r = find(c);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 1u);
  EXPECT_EQ(r->episodes[0].entry_step, 30);
}

TEST(Episodes, CascadesOpenTheNextEpisodeOnTheNextPlateau) {
  // Two plateaus, the second 30% below the first, each with negative curvature; the second is entered
  // at 30, when the loss has stopped falling.
  std::vector<store::CurvatureRow> c = {probe(0, 1.0, 0.1, -1, 10), probe(10, 1.0, 0.1, -1, 10),
                                        probe(20, 0.7, 0.1, -1, 10), probe(30, 0.7, 0.1, -1, 10),
                                        probe(40, 0.1, 5.0, 1, 10)};
  auto r = find(c);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 2u);
  EXPECT_EQ(r->episodes[0].entry_step, 0);
  EXPECT_EQ(*r->episodes[0].exit_step, 20);
  EXPECT_EQ(r->episodes[1].entry_step, 30);
  EXPECT_EQ(*r->episodes[1].exit_step, 40);
  EXPECT_EQ(r->time_in_saddle, 30);
}

TEST(Episodes, NegativeCurvatureMustBeSignificant) {
  // λmin = −1e-3 with a Ritz residual of 2e-3: an eigenvalue within 2e-3 of it may be ≥ 0. Not a saddle.
  auto c = planted();
  for (auto& r : c)
    if (r.lambda_min < 0) r.lambda_min = -1e-3, r.lambda_min_residual = 2e-3;
  auto r = find(c);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->episodes.empty());
  EXPECT_EQ(r->negative_probes, 6);
  EXPECT_EQ(r->significant_probes, 0);
  // Relative to λmax too: −λmin must exceed γ·λmax.
  c = planted();
  for (auto& r : c)
    if (r.lambda_min < 0) r.lambda_max = 2000;  // γ·λmax = 2 > |λmin| = 1
  EXPECT_TRUE(find(c)->episodes.empty());
  // A residual below |λmin| leaves the planted episode as it was.
  c = planted();
  for (auto& r : c) r.lambda_min_residual = 0.5;
  ASSERT_EQ(find(c)->episodes.size(), 1u);
  EXPECT_EQ(find(c)->significant_probes, 6);
}

TEST(Episodes, ADeadNetworkIsFlatNotASaddle) {
  // From step 30 every gradient and eigenvalue is exactly 0 (dead ReLUs), on a constant loss.
  std::vector<store::CurvatureRow> c;
  for (int64_t s = 0; s <= 20; s += 10) c.push_back(probe(s, 1.0 - 0.01 * static_cast<double>(s), 1.0, 0.2, 5));
  for (int64_t s = 30; s <= 100; s += 10) c.push_back(probe(s, 0.7, 0, 0, 0));
  auto r = find(c);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->episodes.empty());
  EXPECT_EQ(r->flat_probes, 8);
  EXPECT_EQ(r->first_flat_step, 30);
}

TEST(Episodes, AKnownPlateauAndEscapeIsFoundWithinTheProbeResolution) {
  // The shape of the seed study's SGD autoencoder runs (docs/results/seed-2021, cpu-sgd seed 1, probes
  // every 250 steps): a plateau from step 0 with λmin ≈ −λmax and a gradient 12–29% of the run's
  // largest, the loss sliding 1–3% per probe interval, a fall of a third between 750 and 1000, then a
  // slow end without significant saddles. Truth: the run sits at the saddle until (750, 1000].
  const double loss[] = {0.2312, 0.2287, 0.2254, 0.2182, 0.1552, 0.0759, 0.0726, 0.0716, 0.0711, 0.0716, 0.0711, 0.0705};
  const double grad[] = {0.0100, 0.0105, 0.0130, 0.0239, 0.0817, 0.0239, 0.0210, 0.0200, 0.0196, 0.0269, 0.0233, 0.0207};
  const double lmin[] = {-0.0224, -0.0235, -0.0281, -0.0463, -0.0515, -0.0320, -0.0110, -0.0107, -0.0104, -0.0144, -0.0122, -0.0107};
  const double lmax[] = {0.0243, 0.0251, 0.0275, 0.0383, 0.0755, 0.1894, 0.2391, 0.2815, 0.2955, 0.2972, 0.2974, 0.3069};
  std::vector<store::CurvatureRow> c;
  for (int i = 0; i < 12; ++i) {
    c.push_back(probe(250 * i, loss[i], grad[i], lmin[i], lmax[i]));
    c.back().lambda_min_residual = 1e-4;
  }
  auto r = find_episodes(c, flat_metrics(3000), {});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 1u);
  const Episode& e = r->episodes[0];
  EXPECT_EQ(e.entry_step, 0);
  ASSERT_TRUE(e.exit_step.has_value());
  EXPECT_EQ(*e.exit_step, 1000);
  EXPECT_EQ(e.exit_resolution, 250);  // the escape lies in (750, 1000]: the truth, at the probes' resolution
  EXPECT_EQ(e.exit_rule, "loss");
  // DESIGN.md's first rules (‖g‖ <= 0.1·G, the loss within 0.1% per interval) miss it.
  EpisodeOptions old;
  old.epsilon = 0.1;
  EXPECT_TRUE(find_episodes(c, flat_metrics(3000), old)->episodes.empty());
}

TEST(Episodes, ASymmetricSaddleEscapesOnlyWhenItsCopiesBreak) {
  auto c = planted();  // entry 60, loss escape at 110
  std::vector<store::SymmetryRow> kept, broken;
  for (int64_t s = 0; s <= 200; s += 20) {
    kept.push_back({s, "fc1", 4, 6, 0.0, 0, 1});
    broken.push_back({s, "fc1", 4, s < 100 ? 6 : 0, s < 100 ? 0.0 : 1e-7, 0, 1});
  }
  auto r = find_episodes(c, flat_metrics(201), {}, kept);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->episodes.size(), 1u);
  EXPECT_EQ(r->episodes[0].kind, "symmetric");
  EXPECT_EQ(r->episodes[0].identical_pairs_entry, 6);
  EXPECT_EQ(r->episodes[0].exit_rule, "loss, copies kept");
  EXPECT_FALSE(r->episodes[0].symmetry_broken_step.has_value());
  r = find_episodes(c, flat_metrics(201), {}, broken);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->episodes[0].exit_rule, "loss");
  EXPECT_EQ(r->episodes[0].symmetry_broken_step, 100);
  EXPECT_EQ(find(c)->episodes[0].kind, "strict");
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
  EXPECT_EQ(find(planted(), o).status().message(), "epsilon must be > 0 (inf: off), got 0");
  o = {};
  o.proximity = std::numeric_limits<double>::infinity();
  EXPECT_EQ(find(planted(), o).status().message(), "proximity must be > 0 and finite, got inf");
  o = {};
  o.residual_factor = -1;
  EXPECT_EQ(find(planted(), o).status().message(), "residual_factor must be >= 0 and finite, got -1");
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
