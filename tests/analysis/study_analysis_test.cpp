// The study analysis on synthetic run stores with planted answers: two groups whose runs escape a
// planted saddle at different times (and some never), final losses that differ, identical groups,
// groups without episodes, partial and malformed runs that are reported and skipped, paired-run
// divergence, attribution through a replayer (and its fallbacks), the theory fit, and bad options.
#include "saddlescope/analysis/study_analysis.h"

#include "saddlescope/analysis/analysis_result.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "../store/run_fixture.h"
#include "saddlescope/store/npy.h"
#include "temp_dir.h"

namespace saddlescope::analysis {
namespace {

using nlohmann::json;

struct PlantedRun {
  std::string group;
  int64_t seed = 0;
  int64_t escape_at = -1;      // probe step at which the loss drops 5% (-1: never: censored)
  double final_loss = 0.5;
  float param = 1.0f;          // the final snapshot's parameter value (divergence)
  double loss_offset = 0;      // added to every metrics loss (0: bitwise the same as the others)
  std::string optimizer = "adam";
  bool curvature = true;
  store::RunStatus status = store::RunStatus::kCompleted;
  std::string model;           // the study's model table ("": none recorded)
  int64_t data_seed = -1;      // the config's data_seed (-1: not recorded, = seed)
  double g_dot_vmin = 1e-3;    // the gradient along v_min on the plateau (the theory's r0 = |g·v|/|λ|)
  std::string perturbation;    // the config's perturbation ("": none recorded)
};

// Probes every 10 steps over 200 steps: away from saddles until 20, on a plateau with λmin = −1 from
// 30 (entered there: the loss stopped falling at 20), the loss 5% lower from `escape_at` on.
std::vector<store::CurvatureRow> planted_curvature(int64_t escape_at, double g_dot_vmin = 1e-3) {
  std::vector<store::CurvatureRow> rows;
  for (int64_t s = 0; s <= 200; s += 10) {
    store::CurvatureRow r;
    r.step = s;
    const bool descending = s < 20, escaped = escape_at >= 0 && s >= escape_at;
    r.probe_loss = descending ? 2.0 - 0.05 * static_cast<double>(s) : escaped ? 0.95 : 1.0;
    r.probe_grad_norm = descending ? 4.0 : 0.1;
    r.lambda_min = escaped ? 0.5 : descending ? 0.2 : -1.0;
    r.lambda_max = 10;
    r.g_dot_vmin = g_dot_vmin;
    r.trace = r.trace_se = r.negative_mass = r.negative_mass_lower = r.negative_mass_upper = NAN;
    r.hessian_lipschitz = NAN;
    rows.push_back(r);
  }
  return rows;
}

std::string add_planted(const std::string& study, const PlantedRun& p) {
  const std::string id = (p.model.empty() ? "" : p.model + "-") + p.group + "-s" + std::to_string(p.seed);
  store::RunManifest m = testing::make_manifest(id, p.status, p.seed, "key-" + p.model + p.group);
  m.extra["study"] = {{"name", "synthetic"}, {"config", p.group}, {"seed", p.seed}};
  if (!p.model.empty()) m.extra["study"]["model"] = p.model;
  m.config["optimizer"] = p.optimizer;
  m.config["steps"] = 200;
  if (p.data_seed >= 0) m.config["data_seed"] = p.data_seed;
  if (!p.perturbation.empty()) m.config["perturbation"] = p.perturbation;
  if (p.status == store::RunStatus::kCompleted) {
    m.steps_completed = 200;
    m.final_loss = p.final_loss;
  }
  auto dir = store::create_run_dir(study, id, false);
  EXPECT_TRUE(dir.ok()) << dir.status().message();
  std::vector<store::MetricsRow> metrics;
  for (int64_t s = 0; s < 200; ++s) metrics.push_back({s, 1.0 + p.loss_offset, 0.5, 0.01, 0.0});
  testing::write_rows(*dir, &m, store::kMetrics, metrics);
  if (p.curvature) testing::write_rows(*dir, &m, store::kCurvature, planted_curvature(p.escape_at, p.g_dot_vmin));
  for (int64_t step : {int64_t{0}, int64_t{200}}) {
    const std::string snap = store::snapshot_dir(*dir, step);
    std::filesystem::create_directories(snap);
    float w[2] = {1.0f, step == 0 ? 1.0f : p.param};
    EXPECT_TRUE(store::write_npy(snap + "/w.npy", store::Dtype::kFloat32, {2}, w).ok());
  }
  m.files[store::kSnapshotsEntry] = store::kSnapshotsVersion;
  EXPECT_TRUE(store::write_manifest(*dir, m).ok());
  return *dir;
}

const json* find_by(const json& array, const std::string& key, const std::string& value) {
  for (const auto& x : array)
    if (x[key] == value) return &x;
  return nullptr;
}

// `analyze`'s verdict of an analysis, read through its declared types as the command reads it.
std::string verdict(const json& a) {
  auto typed = decode_analysis(a);
  EXPECT_TRUE(typed.ok()) << typed.status().message();
  return typed.ok() ? analysis_verdict(*typed) : "";
}

AnalysisOptions fast() {
  AnalysisOptions o;
  o.permutations = 999;
  o.resamples = 999;
  return o;
}

// "fast" escapes at 50 every time; "slow" at 150, or never for 3 of 8 seeds; final losses differ.
void plant_two_groups(const std::string& study) {
  for (int64_t s = 0; s < 8; ++s) {
    add_planted(study, {"fast", s, 50, 0.30 + 0.001 * static_cast<double>(s)});
    add_planted(study, {"slow", s, s < 3 ? -1 : 150, 0.60 + 0.001 * static_cast<double>(s), 1.0f + 1e-3f, 1e-7});
  }
}

TEST(StudyAnalysis, PlantedGroupsEscapeDifferentlyAndTheStatisticsSaySo) {
  testing::TempDir dir;
  plant_two_groups(dir.path());
  auto a = analyze_study(dir.path(), fast());
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ((*a)["n_runs"], 16);
  EXPECT_EQ((*a)["n_skipped"], 0);

  const json* run = find_by((*a)["runs"], "run_id", "slow-s1");
  ASSERT_NE(run, nullptr);
  ASSERT_EQ((*run)["episodes"].size(), 1u);
  const json& e = (*run)["episodes"][0];
  EXPECT_EQ(e["entry_step"], 30);
  EXPECT_TRUE(e["censored"].get<bool>());
  EXPECT_TRUE(e["exit_step"].is_null());
  EXPECT_EQ(e["escape_steps"], 170);
  EXPECT_EQ(e["lambda_min_entry"], -1.0);
  EXPECT_EQ((*run)["time_in_saddle"], 170);

  const json* fast_group = find_by((*a)["groups"], "name", "fast");
  ASSERT_NE(fast_group, nullptr);
  EXPECT_EQ((*fast_group)["n_runs"], 8);
  EXPECT_EQ((*fast_group)["n_escaped"], 8);
  EXPECT_EQ((*fast_group)["median_escape_steps"], 20.0);
  ASSERT_EQ((*fast_group)["km"].size(), 1u);
  EXPECT_EQ((*fast_group)["km"][0]["survival"], 0.0);
  const json* slow_group = find_by((*a)["groups"], "name", "slow");
  EXPECT_EQ((*slow_group)["n_censored"], 3);
  EXPECT_EQ((*slow_group)["median_escape_steps"], 120.0);  // 5 of 8 escape at 120 steps: S = 3/8
  EXPECT_EQ((*slow_group)["km"][0]["survival"], 3.0 / 8);

  ASSERT_EQ((*a)["comparisons"].size(), 1u);
  const json& c = (*a)["comparisons"][0];
  EXPECT_EQ(c["a"], "fast");
  EXPECT_EQ(c["b"], "slow");
  EXPECT_TRUE(c["logrank"]["defined"].get<bool>());
  EXPECT_LT(c["logrank"]["p"].get<double>(), 0.01);
  EXPECT_EQ(c["final_loss"]["cliffs_delta"], -1.0);  // every fast loss below every slow one
  EXPECT_EQ(c["final_loss"]["mwu_p_method"], "exact");
  EXPECT_NEAR(c["final_loss"]["mwu_p"].get<double>(), 2.0 / 12870, 1e-12);  // 2 / C(16, 8)
  EXPECT_NEAR(c["final_loss"]["median_difference"].get<double>(), -0.3, 1e-12);
  EXPECT_LT(c["final_loss"]["ci_high"].get<double>(), 0);
  // Same seeds, same data order: a paired design, tested by the per-seed differences (all −0.3, tied
  // in |d|: the normal approximation).
  EXPECT_EQ(c["design"], "paired");
  const json& paired = c["final_loss"]["paired"];
  EXPECT_EQ(c["final_loss"]["test"], "wilcoxon_signed_rank");
  EXPECT_EQ(c["final_loss"]["p"], paired["p"]);
  EXPECT_EQ(paired["n_pairs"], 8);
  EXPECT_EQ(paired["p_method"], "normal");
  EXPECT_NEAR(paired["mean_difference"].get<double>(), -0.3, 1e-12);
  EXPECT_NEAR(paired["t_ci_low"].get<double>(), -0.3, 1e-12);
  EXPECT_NEAR(paired["t_ci_high"].get<double>(), -0.3, 1e-12);
  // Holm over the three tests (log-rank, final loss, time in saddle): this p is multiplied by 2 or 3.
  const double p = c["final_loss"]["p"].get<double>(), p_holm = c["final_loss"]["p_holm"].get<double>();
  EXPECT_GE(p_holm, 2 * p * (1 - 1e-12));
  EXPECT_LE(p_holm, 3 * p * (1 + 1e-12));
  double smallest = 1;
  for (const char* t : {"logrank", "final_loss", "time_in_saddle"}) smallest = std::min(smallest, c[t]["p_holm"].get<double>());
  EXPECT_EQ(c["p_holm"], smallest);

  // Paired runs differ in loss from step 0 and in parameters at the last snapshot.
  ASSERT_EQ((*a)["divergence"].size(), 8u);
  const json& d = (*a)["divergence"][0];
  EXPECT_EQ(d["first_loss_step"], 0);
  EXPECT_EQ(d["first_param_step"], 200);
  // No replayer and no recorded op taps: the attribution says it cannot tell, and why.
  ASSERT_EQ((*a)["attribution"].size(), 1u);
  EXPECT_EQ((*a)["attribution"][0]["verdict"], "undetermined");
  EXPECT_EQ((*a)["attribution"][0]["seed"], 0);

  EXPECT_EQ((*a)["theory"]["n"], 0) << "Adam runs only";
  EXPECT_EQ((*a)["definitions"]["proximity"], 0.05);
  EXPECT_TRUE((*a)["definitions"]["epsilon"].is_null()) << "off: inf";
  auto tables = analysis_tables(*a);
  EXPECT_EQ(tables.size(), 9u);
  EXPECT_EQ(tables[1].first, "episodes.csv");
  EXPECT_EQ(std::count(tables[1].second.begin(), tables[1].second.end(), '\n'), 1 + 16);
  const std::string text = verdict(*a);
  EXPECT_NE(text.find("fast vs slow"), std::string::npos) << text;
  EXPECT_NE(text.find("undetermined"), std::string::npos) << text;
}

TEST(StudyAnalysis, IdenticalGroupsAreIdenticalBitwise) {
  testing::TempDir dir;
  for (int64_t s = 0; s < 3; ++s) {  // escapes at 50, 60, 70 in both groups
    add_planted(dir.path(), {"one", s, 50 + 10 * s});
    add_planted(dir.path(), {"two", s, 50 + 10 * s});
  }
  auto a = analyze_study(dir.path(), fast());
  ASSERT_TRUE(a.ok()) << a.status().message();
  const json& c = (*a)["comparisons"][0];
  ASSERT_TRUE(c["logrank"]["p"].is_number()) << c.dump();
  EXPECT_NEAR(c["logrank"]["p"].get<double>(), 1.0, 1e-12);
  // Every final loss is 0.5: nothing to test, and no test to weaken Holm's correction of the others.
  EXPECT_FALSE(c["final_loss"]["defined"].get<bool>());
  EXPECT_TRUE(c["final_loss"]["p"].is_null());
  EXPECT_EQ(c["final_loss"]["cliffs_delta"], 0.0);
  EXPECT_EQ((*a)["attribution"][0]["verdict"], "identical");
  EXPECT_EQ((*a)["attribution"][0]["evidence"], "bitwise");
  EXPECT_TRUE((*a)["divergence"][0]["first_loss_step"].is_null());
  EXPECT_EQ((*a)["divergence"][0]["final_rel_l2"], 0.0);
}

TEST(StudyAnalysis, AStudyOfTwoModelsComparesConfigsWithinEachModelOnly) {
  testing::TempDir dir;
  for (const char* model : {"ae", "pn"})
    for (const char* group : {"cpu", "cuda", "sgd"})
      for (int64_t s = 0; s < 3; ++s) {
        PlantedRun p{group, s, 50};
        p.model = model;
        add_planted(dir.path(), p);
      }
  AnalysisOptions o = fast();
  o.baseline = "cpu";  // each model's cpu against that model's others
  auto a = analyze_study(dir.path(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ((*a)["definitions"]["group_by"], "study model/config");
  std::vector<std::string> groups, pairs;
  for (const auto& g : (*a)["groups"]) groups.push_back(g["name"]);
  for (const auto& c : (*a)["comparisons"]) pairs.push_back(c["a"].get<std::string>() + " " + c["b"].get<std::string>());
  EXPECT_EQ(groups, (std::vector<std::string>{"ae/cpu", "ae/cuda", "ae/sgd", "pn/cpu", "pn/cuda", "pn/sgd"}));
  EXPECT_EQ(pairs, (std::vector<std::string>{"ae/cpu ae/cuda", "ae/cpu ae/sgd", "pn/cpu pn/cuda", "pn/cpu pn/sgd"}));
  for (const auto& d : (*a)["divergence"]) EXPECT_EQ(d["a"].get<std::string>().substr(0, 3), d["b"].get<std::string>().substr(0, 3));
  // A full group name is a baseline too, for its own model only; without one, every pair within a model.
  o.baseline = "pn/cuda";
  a = analyze_study(dir.path(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ((*a)["comparisons"].size(), 2u);
  o.baseline = "";
  a = analyze_study(dir.path(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ((*a)["comparisons"].size(), 6u);
  o.baseline = "gpu";
  a = analyze_study(dir.path(), o);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "--baseline: no group is named 'gpu' (groups: ae/cpu, ae/cuda, ae/sgd, pn/cpu, pn/cuda, pn/sgd)");
}

TEST(StudyAnalysis, GroupsWithoutEpisodesOrWithOneRunHaveNoTestButNoCrash) {
  testing::TempDir dir;
  add_planted(dir.path(), {"alone", 0, 50, 0.5});  // n = 1
  PlantedRun flat{"flat", 0, 50, 0.4};
  flat.curvature = false;  // no curvature probe: no episodes, but a final loss
  add_planted(dir.path(), flat);
  add_planted(dir.path(), {"stall", 0, -1, 0.6});  // all censored
  auto a = analyze_study(dir.path(), fast());
  ASSERT_TRUE(a.ok()) << a.status().message();
  const json* f = find_by((*a)["runs"], "run_id", "flat-s0");
  EXPECT_TRUE((*f)["episodes"].is_null());
  EXPECT_EQ((*f)["episodes_note"], "no curvature probe: episodes need curvature.csv");
  const json* g = find_by((*a)["groups"], "name", "flat");
  EXPECT_EQ((*g)["n_with_episode"], 0);
  EXPECT_TRUE((*g)["km"].empty());
  ASSERT_EQ((*a)["comparisons"].size(), 3u);
  for (const auto& c : (*a)["comparisons"]) {
    if (c["a"] == "alone" && c["b"] == "flat") EXPECT_FALSE(c["logrank"]["defined"].get<bool>());
    EXPECT_TRUE(c["final_loss"]["defined"].get<bool>());
    EXPECT_EQ(c["final_loss"]["n_a"], 1);
  }
  const json* s = find_by((*a)["groups"], "name", "stall");
  EXPECT_TRUE((*s)["median_escape_steps"].is_null());
}

// Seeds spread the final losses from 0.1 to 0.8; "lower" is 1% below "base" in every seed. The paired
// test sees it; the unpaired one cannot (the shift is far inside the seed-to-seed spread).
void plant_paired_shift(const std::string& study, int64_t other_data_seed = -1) {
  for (int64_t s = 0; s < 8; ++s) {
    const double loss = 0.1 * static_cast<double>(s + 1);
    PlantedRun base{"base", s, 50, loss}, lower{"lower", s, 50, loss * 0.99};
    base.curvature = lower.curvature = false;
    if (s == 7) lower.data_seed = other_data_seed;
    add_planted(study, base);
    add_planted(study, lower);
  }
}

TEST(StudyAnalysis, APairedEffectIsDetectedThatTheUnpairedTestMisses) {
  testing::TempDir dir;
  plant_paired_shift(dir.path());
  AnalysisOptions o = fast();
  o.baseline = "base";
  auto a = analyze_study(dir.path(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  const json& c = (*a)["comparisons"][0];
  EXPECT_EQ(c["design"], "paired");
  const json& f = c["final_loss"];
  EXPECT_GT(f["mwu_p"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(f["p"].get<double>(), 2.0 / 256);  // every pair on one side: the exact signed-rank p
  EXPECT_DOUBLE_EQ(f["p_holm"].get<double>(), 2.0 / 256) << "the only defined test of the study";
  EXPECT_NEAR(f["paired"]["relative_mean_difference"].get<double>(), 0.01, 1e-12);
  EXPECT_GT(f["paired"]["t_ci_low"].get<double>(), 0);
  const json& d = f["detectable"];
  EXPECT_EQ(d["tests_in_family"], 1);
  EXPECT_TRUE(d["can_be_significant"].get<bool>());
  EXPECT_GT(d["shift_sd"].get<double>(), 1.0);
  EXPECT_LT(d["shift_sd"].get<double>(), 1.45);
  const std::string text = verdict(*a);
  EXPECT_NE(text.find("paired, 8 seeds"), std::string::npos) << text;

  o.pairing = AnalysisOptions::Pairing::kOff;
  a = analyze_study(dir.path(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ((*a)["comparisons"][0]["design"], "independent");
  EXPECT_EQ((*a)["comparisons"][0]["final_loss"]["test"], "mann_whitney");
  EXPECT_GT((*a)["comparisons"][0]["final_loss"]["p_holm"].get<double>(), 0.5);
  EXPECT_FALSE((*a)["comparisons"][0]["final_loss"].contains("paired"));
}

TEST(StudyAnalysis, PairingNeedsTheSameDataOrderInEveryRun) {
  testing::TempDir dir;
  plant_paired_shift(dir.path(), 1234);  // seed 7 of "lower" read its examples in another order
  AnalysisOptions o = fast();
  o.baseline = "base";
  auto a = analyze_study(dir.path(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  const json& c = (*a)["comparisons"][0];
  EXPECT_EQ(c["design"], "independent");
  EXPECT_EQ(c["design_note"], "independent: the groups share 7 of their 8 and 8 runs' seeds and data orders");
  // A run missing from one group (failed, say) leaves the rest paired: 7 runs, each with its partner.
  {
    testing::TempDir other;
    plant_paired_shift(other.path());
    std::filesystem::remove_all(other.path() + "/runs/lower-s7");
    auto b = analyze_study(other.path(), o);
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ((*b)["comparisons"][0]["design"], "paired");
    EXPECT_EQ((*b)["comparisons"][0]["final_loss"]["paired"]["n_pairs"], 7);
  }
  // Asked for, the pairs are the seven that match.
  o.pairing = AnalysisOptions::Pairing::kOn;
  a = analyze_study(dir.path(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ((*a)["comparisons"][0]["design"], "paired");
  EXPECT_EQ((*a)["comparisons"][0]["final_loss"]["paired"]["n_pairs"], 7);
  // With 7 pairs and one test, p = 2/2^7 = 0.0156; the verdict's α/m is 0.05.
  EXPECT_DOUBLE_EQ((*a)["comparisons"][0]["final_loss"]["p"].get<double>(), 2.0 / 128);
}

TEST(StudyAnalysis, ReanalysisOfAnEarlierAnalysisGivesTheSameComparisons) {
  testing::TempDir dir;
  plant_two_groups(dir.path());
  AnalysisOptions o = fast();
  auto a = analyze_study(dir.path(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  // As a file from before data_seed and model were written: pairing falls back to the seeds.
  json old = *a;
  for (auto& r : old["runs"]) r.erase("data_seed"), r.erase("model");
  auto again = reanalyze(old, o);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ((*again)["comparisons"], (*a)["comparisons"]);
  EXPECT_EQ((*again)["groups"], (*a)["groups"]);
  EXPECT_EQ((*again)["divergence"], (*a)["divergence"]);
  EXPECT_TRUE((*again)["reanalysis"].is_object());
  o.pairing = AnalysisOptions::Pairing::kOff;
  again = reanalyze(old, o);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ((*again)["comparisons"][0]["design"], "independent");
  EXPECT_EQ((*again)["definitions"]["pairing"], "off");
}

TEST(StudyAnalysis, ReanalysisRejectsWhatIsNoAnalysis) {
  AnalysisOptions o = fast();
  EXPECT_EQ(reanalyze(json::array(), o).status().message(), "expected an analysis.json object with a 'runs' array");
  EXPECT_EQ(reanalyze(json{{"runs", json::array()}}, o).status().message(), "runs: empty (nothing to reanalyse)");
  json bad = {{"runs", {{{"run_id", "x"}, {"status", "completed"}, {"seed", 1}, {"group", "g"}},
                        {{"run_id", "y"}, {"status", "completed"}, {"group", "g"}}}}};
  EXPECT_EQ(reanalyze(bad, o).status().message(), "runs[1]: no key 'seed'");
  bad["runs"][1]["seed"] = "two";
  EXPECT_EQ(reanalyze(bad, o).status().message(), "runs[1].seed: expected an integer");
  bad["runs"][1]["seed"] = 2;
  bad["runs"][1]["episodes"] = {{{"escape_steps", 3}}};
  EXPECT_EQ(reanalyze(bad, o).status().message(),
            "runs[1].episodes: each needs an integer escape_steps and a boolean censored");
  bad["runs"][1].erase("episodes");
  o.baseline = "h";
  EXPECT_EQ(reanalyze(bad, o).status().message(), "--baseline: no group is named 'h' (groups: g)");
}

TEST(StudyAnalysis, PartialAndMalformedRunsAreReportedAndSkipped) {
  testing::TempDir dir;
  plant_two_groups(dir.path());
  PlantedRun failed{"fast", 20, 50};
  failed.status = store::RunStatus::kFailed;
  add_planted(dir.path(), failed);
  PlantedRun running{"fast", 21, 50};
  running.status = store::RunStatus::kRunning;  // its writer is gone: stale
  add_planted(dir.path(), running);
  const std::string truncated = add_planted(dir.path(), {"slow", 22, 50});
  {  // a malformed line in the middle of curvature.csv
    std::ifstream in(truncated + "/curvature.csv");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text.insert(text.find('\n', text.find('\n') + 1) + 1, "10,0.5,not-a-number\n");
    std::ofstream(truncated + "/curvature.csv") << text;
  }
  const std::string foreign = add_planted(dir.path(), {"slow", 23, 50});
  {
    auto m = store::read_manifest(foreign);
    m->files[store::kMetrics.file] = 99;
    ASSERT_TRUE(store::write_manifest(foreign, *m).ok());
  }
  std::filesystem::create_directories(dir.file("runs/not-a-run"));
  auto a = analyze_study(dir.path(), fast());
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ((*a)["n_runs"], 21);
  EXPECT_EQ((*a)["n_skipped"], 4);
  EXPECT_EQ((*find_by((*a)["runs"], "run_id", "fast-s20"))["skipped"], "status failed");
  EXPECT_EQ((*find_by((*a)["runs"], "run_id", "fast-s21"))["status"], "stale");
  EXPECT_NE((*find_by((*a)["runs"], "run_id", "slow-s23"))["skipped"].get<std::string>().find("metrics.csv"),
            std::string::npos);
  EXPECT_FALSE((*find_by((*a)["runs"], "run_id", "not-a-run"))["skipped"].is_null());
  const json* torn = find_by((*a)["runs"], "run_id", "slow-s22");
  EXPECT_TRUE((*torn)["skipped"].is_null()) << "a final loss is still there to compare";
  EXPECT_TRUE((*torn)["episodes"].is_null());
  EXPECT_NE((*torn)["episodes_note"].get<std::string>().find("curvature.csv"), std::string::npos);
  EXPECT_EQ((*find_by((*a)["groups"], "name", "fast"))["n_runs"], 8);
}

// Found by fuzz_analysis: a byte of a run's file that is not UTF-8 reaches analysis.json (here through
// the reason a run is skipped, which echoes the field that did not read), and json::dump threw:
// `saddlescope analyze` ended on an uncaught exception. analysis_json writes it as U+FFFD.
TEST(StudyAnalysis, BytesOfRunFilesThatAreNotUtf8StillGiveTheAnalysisText) {
  testing::TempDir dir;
  plant_two_groups(dir.path());
  const std::string bad = add_planted(dir.path(), {"slow", 24, 50});
  std::ofstream(bad + "/metrics.csv", std::ios::app) << "2\xff" "00,1,0.5,0.01,0\n";
  auto a = analyze_study(dir.path(), fast());
  ASSERT_TRUE(a.ok()) << a.status().message();
  const std::string skipped = (*find_by((*a)["runs"], "run_id", "slow-s24"))["skipped"].get<std::string>();
  ASSERT_NE(skipped.find("\xff"), std::string::npos) << skipped;
  EXPECT_THROW((void)a->dump(), json::type_error);
  std::string text;
  ASSERT_NO_THROW(text = analysis_json(*a));
  EXPECT_NE(text.find("2\xef\xbf\xbd" "00"), std::string::npos);  // U+FFFD
  EXPECT_EQ(json::parse(text)["n_skipped"], 1);
}

// A replayer standing in for `saddlescope replay`: config "faulty" computes the loss's gradient
// against another target; "plain" replays give the same rows.
std::vector<store::OpRow> replay_rows(bool faulty, int64_t step) {
  auto row = [&](const char* op, const char* phase, double observed, const char* flag) {
    store::OpRow r;
    r.step = step;
    r.op = op;
    r.phase = phase;
    r.index = "0";
    r.observed = observed;
    r.flag = flag;
    r.bound_ratio = std::strcmp(flag, "beyond") == 0 ? 1e5 : 0.1;
    return r;
  };
  return {row("fc", "fwd", 1.5, "within"), row("loss", "fwd", 0.5, "within"),
          row("loss", "dgrad", faulty ? 0.25 : 0.125, faulty ? "beyond" : "within"),
          row("fc", "wgrad", faulty ? 0.5 : 0.25, "within")};
}

TEST(StudyAnalysis, AttributionReplaysTheFirstDifferenceAndNamesTheOp) {
  testing::TempDir dir;
  for (int64_t s = 0; s < 2; ++s) {
    add_planted(dir.path(), {"plain", s, 50, 0.3});
    add_planted(dir.path(), {"faulty", s, 50, 0.6, 1.5f, 1e-3});
  }
  std::vector<std::string> calls;
  Replayer replay = [&](const std::string& run, const std::string& params, int64_t step, int64_t k) {
    calls.push_back(std::filesystem::path(run).filename().string() + "<-" + std::filesystem::path(params).filename().string() +
                    "@" + std::to_string(step) + "k" + std::to_string(k));
    return Result<std::vector<store::OpRow>>(replay_rows(run.find("faulty") != std::string::npos, step));
  };
  AnalysisOptions o = fast();
  o.baseline = "plain";
  auto a = analyze_study(dir.path(), o, replay);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ((*a)["attribution"].size(), 1u);
  const json& x = (*a)["attribution"][0];
  EXPECT_EQ(x["a"], "plain");
  EXPECT_EQ(x["verdict"], "code");
  EXPECT_EQ(x["op"], "loss");
  EXPECT_EQ(x["phase"], "dgrad");
  EXPECT_EQ(x["config"], "faulty");
  EXPECT_EQ(x["evidence"], "replay");
  EXPECT_EQ(x["step"], 0);
  // Both configs replayed from the baseline run's parameters, at the first differing step.
  EXPECT_EQ(calls, (std::vector<std::string>{"plain-s0<-plain-s0@0k16", "faulty-s0<-plain-s0@0k16"}));

  // A replayer that cannot run here (a CUDA config on a CPU host): no op taps recorded either.
  Replayer broken = [](const std::string&, const std::string&, int64_t, int64_t) {
    return Result<std::vector<store::OpRow>>(Status::Error("needs CUDA, which this host lacks"));
  };
  a = analyze_study(dir.path(), o, broken);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)["attribution"][0]["verdict"], "undetermined");
  EXPECT_NE((*a)["attribution"][0]["reason"].get<std::string>().find("needs CUDA"), std::string::npos);
}

TEST(StudyAnalysis, TheTheoryFitsSgdEpisodes) {
  testing::TempDir dir;
  for (int64_t s = 0; s < 4; ++s) {
    PlantedRun p{"sgd", s, 50 + 20 * s};
    p.optimizer = "sgd";
    add_planted(dir.path(), p);
  }
  add_planted(dir.path(), PlantedRun{"adam", 0, 70});  // measured against the prediction, not fitted
  auto a = analyze_study(dir.path(), fast());
  ASSERT_TRUE(a.ok()) << a.status().message();
  const json& t = (*a)["theory"];
  EXPECT_EQ(t["n"], 4);
  ASSERT_EQ(t["points"].size(), 4u);
  EXPECT_EQ(t["points"][0]["exit_rule"], "loss");
  ASSERT_EQ(t["not_fitted"].size(), 1u);
  EXPECT_EQ(t["not_fitted"][0]["optimizer"], "adam");
  ASSERT_EQ(t["departures"]["adam"]["n"], 1);
  EXPECT_DOUBLE_EQ(t["departures"]["adam"]["median_observed_over_predicted"].get<double>(),
                   t["not_fitted"][0]["observed"].get<double>() / t["not_fitted"][0]["predicted"].get<double>());
  // Every episode has the same λmin, η and g·v_min, hence one prediction: no fit (every x equal).
  EXPECT_TRUE(t["slope"].is_null());
  EXPECT_FALSE(t["note"].is_null());
  const json& th = (*find_by((*a)["runs"], "run_id", "sgd-s0"))["episodes"][0]["theory"];
  // r0 = |g·v|/|λ| = 1e-3; R = sqrt(2 · 0.01 · 1 / 1); predicted = ln(R/r0) / ln(1 + 0.01).
  EXPECT_DOUBLE_EQ(th["r0"].get<double>(), 1e-3);
  EXPECT_DOUBLE_EQ(th["R"].get<double>(), std::sqrt(0.02));
  EXPECT_DOUBLE_EQ(th["predicted_escape_steps"].get<double>(), std::log(std::sqrt(0.02) / 1e-3) / std::log1p(0.01));
}

TEST(StudyAnalysis, TheTheoryFitReportsItsSlopeAgainstOneResidualsAndEachNoiseLevel) {
  testing::TempDir dir;
  // r0 from 1e-2 to 1e-5: predictions from 130 to 820 steps; escapes at 50, 70, 90, 110 (probe steps).
  const double g[] = {1e-2, 1e-3, 1e-4, 1e-5};
  for (int64_t s = 0; s < 4; ++s) {
    PlantedRun p{"sgd", s, 50 + 20 * s};
    p.optimizer = "sgd";
    p.g_dot_vmin = g[s];
    p.perturbation = s < 2 ? "gaussian:1e-3:absolute" : "gaussian:1e-6:absolute";
    add_planted(dir.path(), p);
  }
  auto a = analyze_study(dir.path(), fast());
  ASSERT_TRUE(a.ok()) << a.status().message();
  const json& t = (*a)["theory"];
  ASSERT_EQ(t["n"], 4);
  ASSERT_TRUE(t["slope"].is_number()) << t.dump(2);
  EXPECT_DOUBLE_EQ(t["slope_minus_one_se"].get<double>(),
                   (t["slope"].get<double>() - 1) / t["slope_std_error"].get<double>());
  double residuals = 0;
  for (const auto& p : t["points"]) residuals += p["residual"].get<double>();
  EXPECT_NEAR(residuals, 0, 1e-9) << "least squares with an intercept";
  ASSERT_EQ(t["by_noise"].size(), 2u);
  EXPECT_EQ(t["by_noise"][0]["perturbation"], "gaussian:1e-3:absolute");
  EXPECT_EQ(t["by_noise"][0]["n"], 2);
  EXPECT_EQ(t["by_noise"][0]["note"], "fewer than 3 points");
  EXPECT_NE(verdict(*a).find("standard errors"), std::string::npos);
  // The injected noise's displacement per step, η·σ for absolute noise, read through the config grammar.
  for (const auto& run : (*a)["runs"]) {
    ASSERT_FALSE(run["episodes"].empty()) << run.dump();
    const json& th = run["episodes"][0]["theory"];
    const double sigma = run["seed"].get<int64_t>() < 2 ? 1e-3 : 1e-6;
    EXPECT_DOUBLE_EQ(th["r_perturbation"].get<double>(), 0.01 * sigma) << run["seed"];
  }
}

TEST(StudyAnalysis, BadOptionsAndStudiesAreErrors) {
  testing::TempDir dir;
  EXPECT_EQ(analyze_study(dir.path(), fast()).status().message(),
            dir.path() + ": no runs (expected run directories under " + dir.path() + "/runs)");
  plant_two_groups(dir.path());
  AnalysisOptions o = fast();
  o.baseline = "gpu";
  EXPECT_EQ(analyze_study(dir.path(), o).status().message(), "--baseline: no group is named 'gpu' (groups: fast, slow)");
  o = fast();
  o.group_by = {"no_such_key"};
  EXPECT_EQ(analyze_study(dir.path(), o).status().message(), "--group-by: no run has a config key 'no_such_key'");
  o = fast();
  o.level = 1;
  EXPECT_EQ(analyze_study(dir.path(), o).status().message(), "level must be in (0, 1), got 1");
  o = fast();
  o.group_by = {"device", "optimizer"};
  auto a = analyze_study(dir.path(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ((*a)["groups"].size(), 1u);
  EXPECT_EQ((*a)["groups"][0]["name"], "device=cpu,optimizer=adam");
  EXPECT_EQ((*a)["groups"][0]["n_runs"], 16);
}

}  // namespace
}  // namespace saddlescope::analysis
