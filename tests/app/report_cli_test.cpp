// `saddlescope report` end to end on a small real study of the two-layer linear network (seconds on one
// core): the files it writes, report.json's numbers against analysis.json's, a failed run that still
// renders, the page's structure (tests/reports/check_html.py) and the page in headless Chromium
// (tests/reports/render_check.py, which keeps a screenshot as a test artifact), and one-line errors that
// leave no report behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "command.h"
#include "saddlescope/base/process.h"
#include "study_cache.h"
#include "temp_dir.h"

namespace saddlescope::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// The linear network near its saddle at the origin (it escapes within the run), with curvature every
// 5 steps, symmetry every 10 and op taps every 50.
std::string linear_run(const std::string& out, int seed, const std::string& extra) {
  return "train --model linear --data teacher --teacher-noise 0.1 --linear-hidden 2 --init-scale 0.01 --threads 1 "
         "--batch-size 256 --lr 0.01 --optimizer sgd --probe curvature:every=5 --probe symmetry:every=10 "
         "--probe ops:every=50,k=4 --snapshot-every 50 --steps 300 --seed " +
         std::to_string(seed) + " --out " + out + " " + extra;
}

// The autoencoder from duplicated hidden units, with op taps, symmetry and noise probes; 60 steps at
// batch 16 are too few to beat the mean-image baseline: a config that does not learn.
std::string autoencoder_run(const std::string& out, int seed) {
  return "train --model autoencoder --data mnist --steps 60 --batch-size 16 --threads 1 --probe ops:every=20,k=4 "
         "--probe symmetry:every=10 --probe noise:every=20,k=4 --init duplicate --seed " + std::to_string(seed) +
         " --out " + out;
}

// A study of three configs (two of the linear network, three seeds each; one of the autoencoder, two
// seeds), one more run of which fails (a write fails as on a full disk), analysed: made once per build of
// the binary (testing/study_cache.h), each test on its own copy.
bool make_study(const std::string& study) {
  bool ok = true;
  auto expect = [&](const Output& o, int code) {
    EXPECT_EQ(o.code, code) << o.text;
    ok = ok && o.code == code;
  };
  for (int seed : {1, 2, 3}) {
    expect(run(linear_run(study, seed, "")), 0);
    expect(run(linear_run(study, seed, "--perturbation gaussian:1e-4:absolute")), 0);
  }
  for (int seed : {1, 2}) expect(run(autoencoder_run(study, seed)), 0);
  setenv("SADDLESCOPE_FAIL_WRITE", "metrics.csv:2", 1);
  expect(run(linear_run(study, 4, "")), 1);
  unsetenv("SADDLESCOPE_FAIL_WRITE");
  expect(run("analyze " + study + " --no-replay --quiet"), 0);
  return ok;
}

class ReportCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    study_ = dir_->file("study");
    const std::string made = cached_study("report-cli-v1", make_study);
    ASSERT_FALSE(made.empty()) << "the suite's study could not be made";
    ASSERT_TRUE(copy_tree(made, study_));
  }
  static void TearDownTestSuite() { delete dir_; }

  static TempDir* dir_;
  static std::string study_;
};
TempDir* ReportCli::dir_ = nullptr;
std::string ReportCli::study_;

TEST_F(ReportCli, WritesThePageTheMarkdownTheJsonAndEveryFigure) {
  Output o = run("report " + study_ + " --quiet");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("report: " + study_ + "/report/index.html"), std::string::npos) << o.text;
  const std::string r = study_ + "/report";
  for (const char* f : {"index.html", "report.md", "report.json"}) EXPECT_TRUE(fs::exists(r + "/" + f)) << f;
  json m = read_json(r + "/report.json");
  std::set<std::string> names;
  for (const auto& f : m["figures"]) {
    names.insert(f["name"].get<std::string>());
    for (const auto& file : f["files"]) {
      const std::string p = r + "/figures/" + file.get<std::string>();
      ASSERT_TRUE(fs::exists(p)) << p;
      // Images have content; a CSV has at least its header (no run censored: only the header).
      EXPECT_GT(fs::file_size(p), p.size() > 4 && p.substr(p.size() - 4) == ".csv" ? 10u : 100u) << p;
    }
  }
  // What this study has data for: loss, saddles (the linear network escapes its saddle), op taps (the
  // autoencoder's), paired runs that diverge, and symmetry.
  for (const char* n : {"loss", "final_loss", "episodes", "lambda_min", "lambda_max", "survival", "theory", "ulp_fwd",
                        "ulp_wgrad", "divergence", "symmetry", "symmetry_distance", "noise"})
    EXPECT_TRUE(names.count(n)) << n << " missing; figures: " << m["figures"].dump();
  const std::string md = [&] {
    std::ifstream in(r + "/report.md");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  EXPECT_NE(md.find("](figures/loss.png)"), std::string::npos);
  EXPECT_NE(md.find("## 1. Verdict"), std::string::npos);
  // The autoencoder's runs are flagged as not learning, and its op taps summarised per op.
  EXPECT_EQ(m["loss"]["not_learning"].size(), 2u) << m["loss"].dump();
  ASSERT_EQ(m["rounding"]["groups"].size(), 1u);
  EXPECT_EQ(m["rounding"]["groups"][0]["runs_with_taps"], 2);
  EXPECT_GT(m["rounding"]["groups"][0]["ops"].size(), 4u);
  EXPECT_EQ(m["rounding"]["groups"][0]["ops"][0]["samples"], 2 * 3 * 4) << "2 runs × steps 0, 20, 40 × k 4";
  // The duplicated hidden units start as identical pairs; the step the report says symmetry broke at is
  // the first probe step with fewer of them (on this CPU some break within 10 steps: OpenBLAS's edge
  // tiles sum some columns in another order — a real finding, reported as such).
  int duplicated = 0;
  for (const auto& r : m["symmetry"]["runs"])
    if (r["run_id"].get<std::string>().rfind("autoencoder", 0) == 0)
      for (const auto& l : r["layers"]) {
        if (l["identical_pairs_start"].get<int>() == 0) continue;
        ++duplicated;
        const bool fewer = l["identical_pairs_end"].get<int>() < l["identical_pairs_start"].get<int>();
        EXPECT_EQ(l["broke_at_step"].is_null(), !fewer) << l.dump();
        if (fewer) EXPECT_LE(l["broke_at_step"].get<int>(), l["last_step"].get<int>());
      }
  EXPECT_EQ(duplicated, 2 * 3) << "encoder.fc1, encoder.fc2 and decoder.fc1 of both runs";
}

// Lines per run are thinned to what a screen shows, never in the data: a line that repeats an earlier line
// of its group exactly is kept in the figure's CSV with drawn 0 and left out of the plot; every line still
// drawn differs from the others of its group. Here the three linear runs of a config keep 0 identical
// pairs throughout, so each config draws that line once.
TEST_F(ReportCli, RepeatedLinesStayInTheCsvAndAreDrawnOnce) {
  Output o = run("report " + study_ + " --quiet");
  ASSERT_EQ(o.code, 0) << o.text;
  for (const std::string name : {"symmetry", "lambda_min"}) {
    std::ifstream in(study_ + "/report/figures/" + name + ".csv");
    std::string header, line;
    std::getline(in, header);
    ASSERT_EQ(header.rfind("series,drawn,step,", 0), 0u) << header;
    const size_t y = 3;  // identical_pairs or lambda_min: the column after step
    // Each line (a block between blank rows) as series | drawn | its (step, y) points.
    std::vector<std::tuple<std::string, std::string, std::string>> blocks;
    std::string points, series, drawn;
    size_t rows = 0;
    auto end_block = [&] {
      if (!points.empty()) blocks.emplace_back(series, drawn, points);
      points.clear();
    };
    while (std::getline(in, line)) {
      if (line.empty()) { end_block(); continue; }
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
      ASSERT_GT(f.size(), y) << line;
      series = f[0], drawn = f[1];
      points += f[2] + ":" + f[y] + ";";
      ++rows;
    }
    end_block();
    std::set<std::string> drawn_lines;
    size_t hidden = 0;
    for (const auto& [s, d, p] : blocks)
      if (d == "1") EXPECT_TRUE(drawn_lines.insert(s + "|" + p).second) << name << ": a drawn line repeats";
    for (const auto& [s, d, p] : blocks)
      if (d == "0") {
        ++hidden;
        EXPECT_TRUE(drawn_lines.count(s + "|" + p)) << name << ": a hidden line that no drawn line shows";
      }
    if (name == "symmetry") EXPECT_GE(hidden, 4u) << "two configs × three identical linear runs, drawn once each";
    EXPECT_GT(rows, 0u);
    std::ifstream gp(study_ + "/report/figures/" + name + ".gp");
    const std::string script((std::istreambuf_iterator<char>(gp)), {});
    EXPECT_NE(script.find("column('drawn')==1"), std::string::npos) << script;
  }
}

// A study's batch-invariance results (invariance/*.json) are the report's section 8; one that does not read
// is a one-line error naming it, and the report written before stays as it was.
TEST_F(ReportCli, BatchInvarianceResultsAreSectionEight) {
  const std::string inv = study_ + "/invariance";
  fs::create_directories(inv);
  Output i = run("invariance --model autoencoder --data mnist --threads 1 --examples 2 --batch-sizes 2,4 "
                 "--positions first --repeats 1 --json " + inv + "/autoencoder-cpu-t1.json");
  ASSERT_EQ(i.code, 0) << i.text;
  Output o = run("report " + study_ + " --quiet");
  ASSERT_EQ(o.code, 0) << o.text;
  const json m = read_json(study_ + "/report/report.json");
  ASSERT_EQ(m["invariance"]["rows"].size(), 1u) << m["invariance"].dump();
  const json& row = m["invariance"]["rows"][0];
  EXPECT_EQ(row["model"], "autoencoder");
  EXPECT_EQ(row["config"], "t1");
  EXPECT_EQ(row["cases"], 2);
  EXPECT_EQ(row["batch"], 4);
  const json result = read_json(inv + "/autoencoder-cpu-t1.json");
  EXPECT_EQ(row["invariant"], result["invariant"]);
  std::ifstream page(study_ + "/report/index.html");
  const std::string html((std::istreambuf_iterator<char>(page)), {});
  EXPECT_NE(html.find("<h2>8. Batch invariance</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td>autoencoder</td><td>cpu</td><td>t1</td>"), std::string::npos);

  std::ofstream(inv + "/broken.json") << "{\"cases\": [";
  Output bad = run("report " + study_ + " --quiet");
  fs::remove_all(inv);
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.text, "saddlescope: " + inv + "/broken.json: not valid JSON\n");
  const json kept = read_json(study_ + "/report/report.json");
  EXPECT_EQ(kept["invariance"]["rows"].size(), 1u) << "the report before the error is untouched";
}

// The noise probe's rows, as the analysis summarised them, are section 9: the autoencoder's config
// only (the linear runs have no noise probe), its numbers the analysis's, and the figure drawn from them.
TEST_F(ReportCli, NoiseBudgetIsSectionNine) {
  ASSERT_EQ(run("report " + study_ + " --quiet").code, 0);
  const json a = read_json(study_ + "/analysis/analysis.json");
  const json m = read_json(study_ + "/report/report.json");
  ASSERT_EQ(a["noise_budget"]["groups"].size(), 1u) << a["noise_budget"].dump();
  EXPECT_EQ(m["noise_budget"]["groups"], a["noise_budget"]["groups"]);
  const json& g = a["noise_budget"]["groups"][0];
  EXPECT_EQ(g["rows"], 2 * 3) << "2 runs × steps 0, 20, 40";
  EXPECT_EQ(g["verdict"], "negligible") << "float32 against float64 is far below batch-16 SGD noise: " << g.dump();
  EXPECT_LT(g["ratio"]["max"].get<double>(), 0.01);
  std::ifstream page(study_ + "/report/index.html");
  const std::string html((std::istreambuf_iterator<char>(page)), {});
  EXPECT_NE(html.find("<h2>9. Noise budget</h2>"), std::string::npos);
  EXPECT_NE(html.find("<strong>negligible</strong>"), std::string::npos);
  std::ifstream csv(study_ + "/analysis/noise.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("run_id,group,step,batch,examples,lr,grad_norm,rounding_norm,", 0), 0u) << header;
}

// Every number the report shows that the analysis computed is the analysis's number.
TEST_F(ReportCli, ReportJsonNumbersAreAnalysisJsonNumbers) {
  ASSERT_EQ(run("report " + study_ + " --quiet").code, 0);
  json a = read_json(study_ + "/analysis/analysis.json");
  json m = read_json(study_ + "/report/report.json");
  ASSERT_EQ(m["verdict"]["comparisons"].size(), a["comparisons"].size());
  ASSERT_FALSE(a["comparisons"].empty());
  for (size_t i = 0; i < a["comparisons"].size(); ++i) {
    const json& c = a["comparisons"][i];
    const json& r = m["verdict"]["comparisons"][i];
    for (const char* k : {"a", "b", "p_holm", "escape", "logrank", "final_loss", "time_in_saddle"}) EXPECT_EQ(r[k], c[k]) << k;
  }
  ASSERT_EQ(m["loss"]["groups"].size(), a["groups"].size());
  ASSERT_EQ(m["saddles"]["groups"].size(), a["groups"].size());
  for (size_t i = 0; i < a["groups"].size(); ++i) {
    EXPECT_EQ(m["loss"]["groups"][i]["final_loss"], a["groups"][i]["final_loss"]);
    EXPECT_EQ(m["saddles"]["groups"][i], a["groups"][i]);
  }
  EXPECT_EQ(m["saddles"]["theory"], a["theory"]);
  EXPECT_EQ(m["divergence"]["pairs"], a["divergence"]);
  EXPECT_EQ(m["divergence"]["attribution"], a["attribution"]);
  size_t analysed = 0;
  for (const auto& run : a["runs"])
    if (run["skipped"].is_null()) {
      const json& mr = m["saddles"]["runs"][analysed++];
      EXPECT_EQ(mr["run_id"], run["run_id"]);
      for (const char* k : {"episodes", "episodes_note", "time_in_saddle", "level_crossings", "gradient_scale"})
        EXPECT_EQ(mr.value(k, json()), run.value(k, json())) << k;
    }
  EXPECT_EQ(analysed, m["saddles"]["runs"].size());
  EXPECT_GT(m["saddles"]["n_episodes"].get<int>(), 0) << "the linear network starts in a saddle";
  // The power the report takes from the analysis: 3 pairs cannot give a signed-rank p below 2/2³ = 0.25
  // (3 vs 3 independent runs not a Mann–Whitney p below 0.1), so the report says "too few runs to
  // tell", never "no difference found".
  bool three_vs_three = false;
  for (const auto& c : m["verdict"]["comparisons"]) {
    const json& pw = c["power"]["final_loss"];
    if (pw["n_a"] != 3 || pw["n_b"] != 3) continue;
    three_vs_three = true;
    const bool paired = c["final_loss"]["test"] == "wilcoxon_signed_rank";
    EXPECT_DOUBLE_EQ(pw["min_p"].get<double>(), paired ? 0.25 : 0.1);
    EXPECT_TRUE(pw["after_holm"].get<bool>());
    EXPECT_TRUE(pw["detectable_shift_sd"].is_null());
    EXPECT_EQ(c["findings"]["final_loss"], "too few runs to tell");
  }
  EXPECT_TRUE(three_vs_three);
}

TEST_F(ReportCli, AFailedRunIsListedWithWhyAndTheRestRenders) {
  ASSERT_EQ(run("report " + study_ + " --quiet").code, 0);
  json m = read_json(study_ + "/report/report.json");
  int failed = 0;
  for (const auto& r : m["setup"]["runs"])
    if (r["status"] == "failed") {
      ++failed;
      EXPECT_FALSE(r["analysed"].get<bool>());
      EXPECT_NE(r["note"].get<std::string>().find("metrics.csv"), std::string::npos) << r.dump();
    }
  EXPECT_EQ(failed, 1);
  bool warned = false;
  for (const auto& w : m["warnings"]) warned = warned || w.get<std::string>().find("failed") != std::string::npos;
  EXPECT_TRUE(warned) << m["warnings"].dump();
  std::ifstream in(study_ + "/report/index.html");
  const std::string html(std::istreambuf_iterator<char>(in), {});
  EXPECT_NE(html.find("is failed and not in the statistics"), std::string::npos);
  EXPECT_NE(html.find("<figure id=\"fig-loss\">"), std::string::npos);
}

TEST_F(ReportCli, PlannedRunsThatNeverRanAreListedAndACudaRunSaysWhy) {
  TempDir tmp;
  const std::string copy = tmp.file("study");
  fs::copy(study_, copy, fs::copy_options::recursive);
  fs::remove_all(copy + "/report");
  std::ofstream(copy + "/study.toml") << "seeds = [7]\n[base]\nmodel = \"linear\"\ndata = \"teacher\"\nsteps = 5\n"
                                          "[configs.cpu]\nthreads = 1\n[configs.gpu]\ndevice = \"cuda\"\nthreads = 1\n";
  Output o = run("report " + copy);
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("planned run linear/cpu/s7: not run yet\n"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("planned run linear/gpu/s7: not run yet (a CUDA run: study run skips it on a host without a GPU)"),
            std::string::npos) << o.text;
  json m = read_json(copy + "/report/report.json");
  int not_run = 0;
  for (const auto& r : m["setup"]["not_run"]) not_run += r["state"] == "not run yet";
  EXPECT_EQ(not_run, 2) << m["setup"].dump();
}

TEST_F(ReportCli, ThePagePassesTheStructuralCheck) {
  ASSERT_EQ(run("report " + study_ + " --quiet").code, 0);
  Status st = run_process({"python3", std::string(SADDLESCOPE_SOURCE_DIR) + "/tests/reports/check_html.py",
                           study_ + "/report/index.html"});
  EXPECT_TRUE(st.ok()) << st.message();
}

// The page in a real browser: loads without a console error, every figure drawn with a non-empty box.
// Debian's chromium is part of the test set-up (scripts/setup.sh); SADDLESCOPE_NO_BROWSER=1 skips this
// on a machine without it (the GPU host), and says so.
TEST_F(ReportCli, ThePageRendersInHeadlessChromium) {
  if (std::getenv("SADDLESCOPE_NO_BROWSER")) GTEST_SKIP() << "SADDLESCOPE_NO_BROWSER is set";
  ASSERT_EQ(run("report " + study_ + " --quiet").code, 0);
  fs::create_directories(SADDLESCOPE_ARTIFACT_DIR);
  const std::string shot = std::string(SADDLESCOPE_ARTIFACT_DIR) + "/report-linear.png";
  fs::remove(shot);
  Status st = run_process({"python3", std::string(SADDLESCOPE_SOURCE_DIR) + "/tests/reports/render_check.py",
                           study_ + "/report/index.html", "--screenshot", shot});
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(fs::exists(shot));
  EXPECT_GT(fs::file_size(shot), 10000u);
}

TEST_F(ReportCli, BadInputsAreOneLineErrorsAndLeaveNoReport) {
  TempDir dir;
  expect_error("report " + dir.file("nothing"), dir.file("nothing") + ": not a study directory (no runs/)");
  // A copy of the study whose analysis is of another schema version.
  const std::string copy = dir.file("copy");
  fs::copy(study_, copy, fs::copy_options::recursive);
  fs::remove_all(copy + "/report");
  json a = read_json(copy + "/analysis/analysis.json");
  a["schema_version"] = 2;
  std::ofstream(copy + "/analysis/analysis.json") << a.dump();
  expect_error("report " + copy + " --quiet", copy + "/analysis/analysis.json: schema_version: 2 is not one this build reads (1)");
  // Keys missing in a run, in a comparison's test and in a figure's series (a survival curve's point):
  // each read of a missing key was undefined behaviour; tests/reports/report_input_test.cpp tries every key.
  a["schema_version"] = 1;
  size_t escaping = 0;  // a group with a survival curve
  while (escaping < a["groups"].size() && a["groups"][escaping]["km"].empty()) ++escaping;
  ASSERT_LT(escaping, a["groups"].size());
  // The analysis's declared types (analysis_result.h) name the key's path; a key they let an undefined
  // test leave out, missing from a defined one, is found when the sentence needs it.
  for (const auto& [where, key, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"/runs/0", "status", "runs[0].status: missing"},
           {"/comparisons/0/final_loss", "cliffs_delta", "not the analysis schema: key 'cliffs_delta' not found"},
           {"/groups/" + std::to_string(escaping) + "/km/0", "survival",
            "groups[" + std::to_string(escaping) + "].km[0].survival: missing"}}) {
    SCOPED_TRACE(where + "/" + key);
    json edited = a;
    ASSERT_EQ(edited.at(json::json_pointer(where)).erase(key), 1u);
    std::ofstream(copy + "/analysis/analysis.json", std::ios::trunc) << edited.dump();
    expect_error("report " + copy + " --quiet", copy + "/analysis/analysis.json: " + message);
    EXPECT_FALSE(fs::exists(copy + "/report"));
  }
  std::ofstream(copy + "/analysis/analysis.json") << "{\"schema_version\": 1, \"runs\": [";
  Output o = run("report " + copy + " --quiet");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.text.rfind("saddlescope: " + copy + "/analysis/analysis.json", 0), 0u) << o.text;
  EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << o.text;
  EXPECT_FALSE(fs::exists(copy + "/report"));
  // No gnuplot: nothing written, no temporary left.
  fs::copy_file(study_ + "/analysis/analysis.json", copy + "/analysis/analysis.json", fs::copy_options::overwrite_existing);
  o = run("report " + copy + " --quiet --gnuplot " + dir.file("no-gnuplot"));
  EXPECT_EQ(o.code, 1) << o.text;
  EXPECT_NE(o.text.find("saddlescope: figure loss: "), std::string::npos) << o.text;
  EXPECT_FALSE(fs::exists(copy + "/report"));
  for (const auto& e : fs::directory_iterator(copy))
    EXPECT_EQ(e.path().filename().string().find(".report"), std::string::npos) << "no temporary left";
  // A study without an analysis is analysed first.
  fs::remove_all(copy + "/analysis");
  o = run("report " + copy + " --quiet");
  EXPECT_EQ(o.code, 0) << o.text;
  EXPECT_TRUE(fs::exists(copy + "/analysis/analysis.json"));
  EXPECT_TRUE(fs::exists(copy + "/report/index.html"));
  EXPECT_EQ(run("report").code, 2);
}

// A failed write at any file the report writes itself ends with the file named and no report; a study
// path full of shell metacharacters reaches gnuplot as an argument, never through a shell.
TEST_F(ReportCli, InjectedWriteFailuresAndShellMetacharactersAreHarmless) {
  TempDir dir;
  const std::string copy = dir.file("a b'$(touch pwned)\";`touch pwned2` c");
  fs::copy(study_, copy, fs::copy_options::recursive);
  fs::remove_all(copy + "/report");
  const std::string quoted = "'" + std::string("a b'\\''$(touch pwned)\";`touch pwned2` c") + "'";
  for (const char* at : {"figures/README", "loss.gp", "final_loss_runs.csv", "report.json", "report.md", "index.html"}) {
    SCOPED_TRACE(at);
    setenv("SADDLESCOPE_FAIL_WRITE", at, 1);
    Output o = run("report " + dir.path() + "/" + quoted + " --quiet");
    unsetenv("SADDLESCOPE_FAIL_WRITE");
    EXPECT_EQ(o.code, 1) << o.text;
    EXPECT_NE(o.text.find("(injected by SADDLESCOPE_FAIL_WRITE)"), std::string::npos) << o.text;
    EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << o.text;
    EXPECT_FALSE(fs::exists(copy + "/report"));
    for (const auto& e : fs::directory_iterator(copy))
      EXPECT_EQ(e.path().filename().string().find(".report"), std::string::npos) << "no temporary left";
  }
  // A flush or a rename that fails where a file or the report directory is published: the same.
  for (const char* hook : {"SADDLESCOPE_FAIL_FSYNC", "SADDLESCOPE_FAIL_RENAME"})
    for (const char* at : {"report.json", "/report"}) {
      SCOPED_TRACE(std::string(hook) + "=" + at);
      setenv(hook, at, 1);
      Output o = run("report " + dir.path() + "/" + quoted + " --quiet");
      unsetenv(hook);
      EXPECT_EQ(o.code, 1) << o.text;
      EXPECT_NE(o.text.find(std::string("(injected by ") + hook + ")"), std::string::npos) << o.text;
      EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << o.text;
      EXPECT_FALSE(fs::exists(copy + "/report"));
      for (const auto& e : fs::directory_iterator(copy))
        EXPECT_EQ(e.path().filename().string().find(".report"), std::string::npos) << "no temporary left";
    }
  Output o = run("report " + dir.path() + "/" + quoted + " --quiet");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_TRUE(fs::exists(copy + "/report/index.html"));
  for (const char* f : {"pwned", "pwned2"}) {
    EXPECT_FALSE(fs::exists(dir.file(f))) << f;
    EXPECT_FALSE(fs::exists(copy + "/report/figures/" + f)) << f;
    EXPECT_FALSE(fs::exists(f)) << f;
  }
}

}  // namespace
}  // namespace saddlescope::testing
