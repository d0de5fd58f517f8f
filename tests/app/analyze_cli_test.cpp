// `saddlescope analyze` end to end on real runs of the two-layer linear network (seconds on one core):
// the files it writes, the verdict it prints, and one-line errors that leave no analysis behind.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "command.h"
#include "saddlescope/store/npy.h"
#include "temp_dir.h"

namespace saddlescope::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The linear network near its saddle at the origin, curvature every 5 steps, snapshots every 50.
std::string linear_run(const std::string& out, int seed, const std::string& extra, int steps = 200,
                       int snapshot_every = 50) {
  return "train --model linear --data teacher --teacher-noise 0.1 --linear-hidden 2 --init-scale 0.01 --threads 1 "
         "--batch-size 256 --lr 0.01 --probe curvature:every=5 --snapshot-every " + std::to_string(snapshot_every) +
         " --steps " + std::to_string(steps) +
         " --seed " + std::to_string(seed) + " --out " + out + " " + extra;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

TEST(AnalyzeCli, WritesTheAnalysisAndPrintsAVerdict) {
  TempDir dir;
  const std::string study = dir.file("study");
  for (int seed : {1, 2}) {
    ASSERT_EQ(run(linear_run(study, seed, "")).code, 0);
    ASSERT_EQ(run(linear_run(study, seed, "--perturbation gaussian:1e-6:absolute")).code, 0);
  }
  Output o = run("analyze " + study + " --no-replay --quiet");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("4 runs analysed in 2 groups"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("final loss:"), std::string::npos) << o.text;
  for (const char* f : {"analysis.json", "runs.csv", "episodes.csv", "groups.csv", "km.csv", "comparisons.csv",
                        "divergence.csv", "attribution.csv", "theory.csv", "noise.csv"})
    EXPECT_TRUE(std::filesystem::exists(study + "/analysis/" + f)) << f;
  json a = read_json(study + "/analysis/analysis.json");
  EXPECT_EQ(a["n_runs"], 4);
  ASSERT_EQ(a["comparisons"].size(), 1u);
  ASSERT_EQ(a["divergence"].size(), 2u);
  // The perturbation acts from step 0's gradient on; the loss shows it a few steps later.
  EXPECT_GE(a["divergence"][0]["first_loss_step"].get<int>(), 1);
  EXPECT_EQ(a["divergence"][0]["first_param_step"], 50);
  EXPECT_EQ(a["attribution"][0]["verdict"], "undetermined") << "no replay, no op taps";
  // Run again: the analysis is replaced whole.
  o = run("analyze " + study + " --no-replay --quiet --baseline " + a["groups"][0]["name"].get<std::string>());
  EXPECT_EQ(o.code, 0) << o.text;

  // A write, flush or rename that fails while the new analysis is published: one line naming the file,
  // exit 1, and the analysis before it still whole (all or nothing).
  const std::string before = read_json(study + "/analysis/analysis.json").dump();
  for (const char* hook : {"SADDLESCOPE_FAIL_WRITE", "SADDLESCOPE_FAIL_FSYNC", "SADDLESCOPE_FAIL_RENAME"})
    for (const char* at : {"analysis.json", "episodes.csv", "/analysis"}) {
      SCOPED_TRACE(std::string(hook) + "=" + at);
      o = run(std::string("--version >/dev/null; ") + hook + "=" + at + " " + SADDLESCOPE_BIN + " analyze " + study +
              " --no-replay --quiet --seed 9");
      EXPECT_EQ(o.code, 1) << o.text;
      EXPECT_NE(o.text.find(std::string("(injected by ") + hook + ")"), std::string::npos) << o.text;
      EXPECT_EQ(o.text.find('\n'), o.text.size() - 1) << "one line: " << o.text;
      EXPECT_EQ(read_json(study + "/analysis/analysis.json").dump(), before);
    }
}

// The linear network (Adam) starts at its saddle at the origin and leaves it within 10 steps: seen at
// curvature probes every 5 steps, then refined from snapshots of every step, the escape moves to within
// one step. (The "late saddle" this test used before, at the rank-2 optimum, had |λmin| no larger than
// its Ritz residual: not a saddle by the significance rule.)
TEST(AnalyzeCli, RefineEvaluatesCurvatureAtSnapshotsInsideTheEpisodeWindows) {
  TempDir dir;
  const std::string study = dir.file("study");
  ASSERT_EQ(run(linear_run(study, 2, "", 200, 1)).code, 0);
  ASSERT_EQ(run("analyze " + study + " --no-replay --quiet").code, 0);
  json coarse = read_json(study + "/analysis/analysis.json")["runs"][0];
  ASSERT_EQ(coarse["episodes"].size(), 1u) << coarse.dump();
  const json& c = coarse["episodes"][0];
  EXPECT_EQ(c["entry_step"], 0);
  EXPECT_EQ(c["exit_resolution"], 5);
  EXPECT_LT(coarse["significant_probes"].get<int>(), coarse["negative_probes"].get<int>()) << "the end is not a saddle";
  Output o = run("analyze " + study + " --no-replay --quiet --refine");
  ASSERT_EQ(o.code, 0) << o.text;
  json fine = read_json(study + "/analysis/analysis.json")["runs"][0];
  EXPECT_EQ(fine["refined_steps"].size(), 4u) << fine.dump();
  // Each evaluation's row is kept as evidence, in curvature.csv's own format.
  const std::string run_id = fine["run_id"].get<std::string>();
  for (const auto& step : fine["refined_steps"]) {
    const std::string row = study + "/analysis/refine/" + run_id + "-step" + std::to_string(step.get<int>());
    EXPECT_TRUE(fs::exists(row + "/curvature.csv")) << row;
  }
  ASSERT_EQ(fine["episodes"].size(), 1u);
  const json& f = fine["episodes"][0];
  EXPECT_EQ(f["entry_step"], 0);
  EXPECT_EQ(f["exit_resolution"], 1);
  EXPECT_GT(f["exit_step"].get<int>(), c["exit_step"].get<int>() - 5);
  EXPECT_LE(f["exit_step"].get<int>(), c["exit_step"].get<int>());
}

// Ground truth: the two-layer linear network started near the origin is in a strict saddle from step 0
// (its Hessian there has eigenvalues ∓σ₁ = ∓4, examples/linear_saddle.toml), and gradient descent leaves
// it along the top singular mode; the theory predicts when.
TEST(AnalyzeCli, TheLinearNetworkNearTheOriginIsInASaddleFromStepZero) {
  TempDir dir;
  const std::string study = dir.file("study");
  ASSERT_EQ(run(linear_run(study, 1, "--optimizer sgd", 600)).code, 0);
  Output o = run("analyze " + study + " --no-replay --quiet");
  ASSERT_EQ(o.code, 0) << o.text;
  json a = read_json(study + "/analysis/analysis.json");
  const json& r = a["runs"][0];
  ASSERT_FALSE(r["episodes"].empty()) << r.dump();
  const json& e = r["episodes"][0];
  EXPECT_EQ(e["entry_step"], 0);
  EXPECT_EQ(e["entry_resolution"], 0);
  ASSERT_FALSE(e["censored"].get<bool>()) << e.dump();
  EXPECT_NEAR(e["lambda_min_entry"].get<double>(), -4.0, 0.05);
  const double observed = e["escape_steps"].get<double>();
  const double predicted = e["theory"]["predicted_escape_steps"].get<double>();
  std::printf("[ linear ] escape observed %.0f steps (resolution 5), predicted %.1f\n", observed, predicted);
  EXPECT_GT(observed, 0.5 * predicted);
  EXPECT_LT(observed, 2.0 * predicted);
  int loss_exits = 0;  // the fit takes the episodes that escaped by the loss rule
  for (const auto& ep : r["episodes"]) loss_exits += !ep["censored"].get<bool>() && ep["exit_rule"] == "loss";
  EXPECT_EQ(a["theory"]["n"].get<int>(), loss_exits);
}

// The planted fault end to end on the CPU: an autoencoder whose loss gradient reads the next batch's
// target (fault = alias-target) against the same config without it, and a float64 config for contrast.
// Replays of step 0 on identical inputs name the fault's loss gradient as code, and float64 as rounding.
TEST(AnalyzeCli, ThePlantedFaultIsNamedCodeAtTheLossGradient) {
  TempDir dir;
  const std::string study = dir.file("study"), data = dir.file("x.npy");
  std::vector<uint8_t> x(256 * 24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 7919) % 251);
  ASSERT_TRUE(store::write_npy(data, store::Dtype::kUInt8, {256, 24}, x.data()).ok());
  const std::string base = "train --data npy:" + data + " --hidden 16,4 --batch-size 8 --steps 60 --lr 0.01 --threads 1 "
                           "--snapshot-every 20 --seed 1 --out " + study;
  for (const char* extra : {"", " --fault alias-target", " --dtype float64"}) {
    Output t = run(base + extra);
    ASSERT_EQ(t.code, 0) << extra << "\n" << t.text;
  }
  Output o = run("analyze " + study + " --quiet --group-by fault,dtype --baseline fault=none,dtype=float32");
  ASSERT_EQ(o.code, 0) << o.text;
  json a = read_json(study + "/analysis/analysis.json");
  ASSERT_EQ(a["attribution"].size(), 2u) << a["attribution"].dump(2);
  for (const auto& x : a["attribution"]) {
    EXPECT_EQ(x["evidence"], "replay") << x.dump(2);
    EXPECT_EQ(x["step"], 0);
    if (x["b"] == "fault=alias-target,dtype=float32") {
      EXPECT_EQ(x["verdict"], "code") << x.dump(2);
      EXPECT_EQ(x["op"], "loss");
      EXPECT_EQ(x["phase"], "dgrad");
      EXPECT_EQ(x["config"], "fault=alias-target,dtype=float32");
    } else {
      EXPECT_EQ(x["b"], "fault=none,dtype=float64");
      EXPECT_EQ(x["verdict"], "rounding") << x.dump(2);
    }
  }
  EXPECT_NE(o.text.find("difference:  code at loss dgrad (fault=alias-target,dtype=float32)"), std::string::npos) << o.text;
  EXPECT_TRUE(std::filesystem::exists(study + "/analysis/replays")) << "the evidence is kept";
}

TEST(AnalyzeCli, BadInputsAreOneLineErrorsAndWriteNothing) {
  TempDir dir;
  const std::string study = dir.file("study");
  expect_error("analyze " + dir.file("nothing"), dir.file("nothing") + ": no runs (expected run directories under " +
                                                   dir.file("nothing") + "/runs)");
  ASSERT_EQ(run(linear_run(study, 1, "", 20)).code, 0);
  std::string key;  // the run's config_key names its group outside a study
  for (const auto& e : std::filesystem::directory_iterator(study + "/runs"))
    if (e.is_directory()) key = read_json(e.path().string() + "/manifest.json")["config_key"];
  expect_error("analyze " + study + " --baseline gpu", "--baseline: no group is named 'gpu' (groups: " + key + ")");
  expect_error("analyze " + study + " --group-by colour", "--group-by: no run has a config key 'colour'");
  expect_error("analyze " + study + " --epsilon 0", "--epsilon must be > 0 (inf: off), got 0");
  expect_error("analyze " + study + " --proximity -1", "--proximity must be > 0 and finite, got -1");
  expect_error("analyze " + study + " --paired maybe", "--paired: expected auto, on or off, got 'maybe'");
  expect_error("analyze " + study + " --power 1", "--power must be in (0, 1), got 1");
  expect_error("analyze " + study + " --out " + study + "/x", "--out: only with --reanalyze (a study's analysis goes to STUDY_DIR/analysis)");
  expect_error("analyze --reanalyze " + study + "/none.json", "--reanalyze: needs --out DIR (where the new analysis goes)");
  expect_error("analyze --reanalyze " + study + "/none.json --out " + study + "/x",
               study + "/none.json: cannot open for reading: No such file or directory");
  {
    std::ofstream(study + "/not-an-analysis.json") << "[1, 2]";
    expect_error("analyze --reanalyze " + study + "/not-an-analysis.json --out " + study + "/x",
                 study + "/not-an-analysis.json: expected an analysis.json object with a 'runs' array");
  }
  expect_error("analyze " + study + " --level 2", "--level must be in (0, 1), got 2");
  EXPECT_FALSE(std::filesystem::exists(study + "/analysis"));
  for (const auto& e : std::filesystem::directory_iterator(study))
    EXPECT_EQ(e.path().filename().string().find(".analysis"), std::string::npos) << "no temporary left";
  EXPECT_EQ(run("analyze").code, 2);
}

}  // namespace
}  // namespace saddlescope::testing
