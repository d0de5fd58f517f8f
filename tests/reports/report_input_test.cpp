// The report's reader of analysis.json against files `saddlescope analyze` did not write: a key missing
// at any level (the top, a run, a comparison, a figure's series) or of the wrong type is a one-line error
// naming analysis.json and the key, and leaves no report and no temporary directory; and against what
// analyze does write for partial studies (fuzz_analysis's findings). The study is the synthetic one of
// tests/testing/synthetic_study.h, analysed by analyze_study; gnuplot is a stub that writes a small SVG
// and PNG (the figures' drawing is tests/app/report_cli_test.cpp's).
#include "saddlescope/reports/report.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "saddlescope/analysis/study_analysis.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/table.h"
#include "synthetic_study.h"
#include "temp_dir.h"

namespace saddlescope::reports {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// gnuplot -c NAME.gp NAME.svg NAME.png DATA.csv...: writes a 140-byte SVG as both images.
std::string stub_gnuplot(const std::string& dir) {
  const std::string path = dir + "/gnuplot";
  std::ofstream(path) << "#!/bin/sh\n"
                         "svg='<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"plot\"><g id=\"gnuplot_plot_1\">"
                         "<path d=\"M0 0L1 1\"/></g><use href=\"#plot\"/></svg>'\n"
                         "printf '%s\\n' \"$svg\" >\"$3\" && printf '%s\\n' \"$svg\" >\"$4\"\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// Analyses `study` (199 permutations and resamples: quick) and writes its analysis/analysis.json.
void analyse(const std::string& study) {
  analysis::AnalysisOptions o;
  o.permutations = o.resamples = 199;
  auto a = analysis::analyze_study(study, o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  fs::create_directories(study + "/analysis");
  ASSERT_TRUE(store::write_file_atomic(study + "/analysis/analysis.json", analysis::analysis_json(*a)).ok());
}

// The synthetic study and its analysis, made once for the suite; each test works on a copy.
class ReportInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir;
    const std::string study = dir_->file("study");
    ASSERT_TRUE(testing::write_synthetic_study(study).ok());
    analyse(study);
    gnuplot_ = new std::string(stub_gnuplot(dir_->path()));
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete gnuplot_;
  }

  // A fresh copy of the study whose analysis.json is `edit` of the analysed one; returns its directory.
  std::string copy_with(const std::function<void(json&)>& edit) {
    const std::string copy = tmp_.file("study" + std::to_string(copies_++));
    fs::copy(dir_->file("study"), copy, fs::copy_options::recursive);
    json a = read_json(copy + "/analysis/analysis.json");
    edit(a);
    std::ofstream(copy + "/analysis/analysis.json", std::ios::trunc) << a.dump(1);
    return copy;
  }

  static Result<ReportResult> report(const std::string& study) {
    ReportOptions o;
    o.gnuplot = *gnuplot_;
    return write_report(study, o);
  }

  // The report of `study` fails with exactly `message`, on one line, and leaves nothing behind.
  static void expect_refused(const std::string& study, const std::string& message) {
    auto r = report(study);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), message);
    EXPECT_FALSE(fs::exists(study + "/report"));
    EXPECT_FALSE(fs::exists(study + "/.report.tmp"));
  }

  static testing::TempDir* dir_;
  static std::string* gnuplot_;
  testing::TempDir tmp_;
  int copies_ = 0;
};
testing::TempDir* ReportInput::dir_ = nullptr;
std::string* ReportInput::gnuplot_ = nullptr;

// The baseline the other tests edit: the analysis of the synthetic study reports, with every figure.
TEST_F(ReportInput, TheSyntheticStudyReportsWithEveryFigure) {
  const std::string study = copy_with([](json&) {});
  auto r = report(study);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->figures, 12);
  for (const char* f : {"index.html", "report.md", "report.json", "figures/theory.csv", "figures/survival.csv",
                        "figures/divergence.csv", "figures/ulp_fwd.csv", "figures/symmetry.csv"})
    EXPECT_TRUE(fs::exists(study + "/report/" + f)) << f;
  const json m = read_json(study + "/report/report.json");
  EXPECT_EQ(m.at("verdict").at("comparisons").size(), 1u);
  EXPECT_EQ(m.at("verdict").at("comparisons").at(0).at("findings").at("cause"), "code");
  EXPECT_EQ(m.at("loss").at("not_learning").size(), 1u);
}

// A writer's temporary beside the runs ("<id>.tmp.<pid>": a run directory still being written or
// merged) is not a run the analysis left out; a real directory that the analysis did not see is.
TEST_F(ReportInput, AWritersTemporaryIsNotWarnedAboutAsAnUnanalysedRun) {
  const std::string study = copy_with([](json&) {});
  fs::create_directories(study + "/runs/run-being-written.tmp.12345");
  fs::create_directories(study + "/runs/run-added-later");
  auto r = report(study);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string warnings = read_json(study + "/report/report.json").at("warnings").dump();
  EXPECT_EQ(warnings.find("run-being-written"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("run run-added-later is not in the analysis"), std::string::npos) << warnings;
}

// Found by fuzz_analysis: what `saddlescope analyze` writes for a partial study leaves keys out — a test
// that is not defined has no estimates, a divergence that could not be computed has only its error, a
// run without curvature has no curvature summary — and the report read them as if always there
// (a const operator[]: undefined behaviour; with at(), a refused report).
TEST_F(ReportInput, AnalysisOfAPartialStudyReports) {
  testing::TempDir tmp;
  const std::string study = tmp.file("study");
  ASSERT_TRUE(testing::write_synthetic_study(study).ok());
  fs::remove_all(study + "/runs/sgd-b-s1/snapshots");  // seed 1's divergence: an error
  // A third config whose run has neither a final loss nor curvature: its tests are not defined.
  fs::copy(study + "/runs/sgd-a-s1", study + "/runs/sgd-c-s1", fs::copy_options::recursive);
  auto m = store::read_manifest(study + "/runs/sgd-c-s1");
  ASSERT_TRUE(m.ok()) << m.status().message();
  m->run_id = "sgd-c-s1";
  m->extra["study"]["config"] = "sgd-c";
  m->final_loss.reset();
  m->files.erase(store::kCurvature.file);
  fs::remove(study + "/runs/sgd-c-s1/" + store::kCurvature.file);
  ASSERT_TRUE(store::write_manifest(study + "/runs/sgd-c-s1", *m).ok());
  analysis::AnalysisOptions o;
  o.permutations = o.resamples = 199;
  auto a = analysis::analyze_study(study, o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  // The keys are indeed absent.
  bool failed_divergence = false, undefined_test = false;
  for (const auto& d : a->at("divergence")) failed_divergence |= !d.at("error").is_null() && !d.contains("first_loss_step");
  for (const auto& c : a->at("comparisons"))
    undefined_test |= !c.at("final_loss").at("defined").get<bool>() && !c.at("final_loss").contains("median_difference");
  EXPECT_TRUE(failed_divergence);
  EXPECT_TRUE(undefined_test);
  fs::create_directories(study + "/analysis");
  ASSERT_TRUE(store::write_file_atomic(study + "/analysis/analysis.json", analysis::analysis_json(*a)).ok());
  auto r = report(study);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(fs::exists(study + "/report/index.html"));
}

// Found by fuzz_analysis: the ULP figures indexed the group names with a run's series, which is 0 for a
// run of no group of the analysis (a failed run with op taps: index −1), and cast log2(|error|) to int
// for an error that is not finite (undefined behaviour). Such taps are now no point of the figures.
TEST_F(ReportInput, OpTapsOfAFailedRunOrOfANonFiniteErrorAreNoPointOfTheFigures) {
  testing::TempDir tmp;
  const std::string study = tmp.file("study");
  ASSERT_TRUE(testing::write_synthetic_study(study).ok());
  // A config whose only run failed, with the op taps it recorded before.
  fs::copy(study + "/runs/sgd-a-s1", study + "/runs/sgd-d-s1", fs::copy_options::recursive);
  auto m = store::read_manifest(study + "/runs/sgd-d-s1");
  ASSERT_TRUE(m.ok()) << m.status().message();
  m->run_id = "sgd-d-s1";
  m->extra["study"]["config"] = "sgd-d";
  m->status = store::RunStatus::kFailed;
  m->error = "metrics.csv: No space left on device";
  ASSERT_TRUE(store::write_manifest(study + "/runs/sgd-d-s1", *m).ok());
  // Taps of an analysed run whose error is infinite, and NaN.
  std::ofstream(study + "/runs/sgd-a-s2/ops.csv", std::ios::app)
      << "0,fc1,fwd,0:8,1,1,inf,1e-06,0,0,linear,float32,16,within\n"
         "0,fc1,fwd,0:9,1,1,nan,1e-06,0,0,linear,float32,16,within\n";
  auto taps = store::read_table(study + "/runs/sgd-a-s2", store::kOps);
  ASSERT_TRUE(taps.ok()) << taps.status().message();
  ASSERT_EQ(taps->size(), 10u);
  analyse(study);
  auto r = report(study);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string ulp = *store::read_file(study + "/report/figures/ulp_fwd.csv");
  EXPECT_EQ(ulp.find("sgd-d"), std::string::npos) << ulp;
  EXPECT_NE(ulp.find("sgd-a"), std::string::npos) << ulp;
}

// A key that the report reads, removed at each level of analysis.json: before the checked reads, each of
// these was a const operator[] on a missing key (an assertion in a debug build, undefined behaviour in
// a release build).
// A JSON pointer as the declared types' key path: "/runs/0/episodes/0/entry_step" is
// "runs[0].episodes[0].entry_step" (analysis_result.h's errors).
std::string key_path(const std::string& pointer) {
  std::string out;
  for (size_t start = 1, slash; start <= pointer.size(); start = slash + 1) {
    slash = std::min(pointer.find('/', start), pointer.size());
    const std::string part = pointer.substr(start, slash - start);
    out += std::isdigit(static_cast<unsigned char>(part[0])) ? "[" + part + "]" : (out.empty() ? "" : ".") + part;
  }
  return out;
}

TEST_F(ReportInput, AMissingKeyAtAnyLevelIsAOneLineErrorNamingTheFileAndTheKey) {
  const struct {
    const char* where;  // a JSON pointer to the object
    const char* key;
  } cases[] = {
      {"", "definitions"},                          // the top level (the survival figure's confidence level)
      {"/runs/0", "status"},                        // a run (the setup's run table)
      {"/runs/0/episodes/0", "entry_step"},         // a run's episode (the episodes figure)
      {"/groups/0/km/0", "step"},                   // a figure's series: a survival curve's point
      {"/divergence/0/snapshots/1", "step"},        // a figure's series: a divergence curve's point
      {"/theory/points/0", "predicted"},            // a figure's series: a theory fit's point
      {"/comparisons/0", "b"},                      // a comparison (the verdict)
      {"/attribution/0", "verdict"},                // an attribution (the cause in the verdict)
      {"/groups/1/final_loss", "q3"},               // a group's summary (the final-loss figure)
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.where) + "/" + c.key);
    const std::string study = copy_with([&](json& a) {
      json& parent = a.at(json::json_pointer(c.where));
      ASSERT_TRUE(parent.contains(c.key));
      parent.erase(c.key);
    });
    expect_refused(study, study + "/analysis/analysis.json: " + key_path(std::string(c.where) + "/" + c.key) + ": missing");
  }
}

// A key the types let a test without data leave out, missing from a test that has data: the report
// cannot write its sentence, and says so in one line naming the file and the key.
TEST_F(ReportInput, AnEstimateMissingFromADefinedTestIsAOneLineError) {
  const std::string study = copy_with([](json& a) {
    ASSERT_TRUE(a["comparisons"][0]["final_loss"]["defined"].get<bool>());
    a["comparisons"][0]["final_loss"].erase("cliffs_delta");
  });
  expect_refused(study, study + "/analysis/analysis.json: not the analysis schema: key 'cliffs_delta' not found");
}

TEST_F(ReportInput, AKeyOfTheWrongTypeIsAOneLineErrorNamingTheFile) {
  const std::string study = copy_with([](json& a) { a["attribution"][0]["verdict"] = 7; });
  expect_refused(study, study + "/analysis/analysis.json: attribution[0].verdict: expected a string, got 7");
}

// Every key of analysis.json, removed in turn (from every object that has it): the report is written,
// or refused with one line naming analysis.json and nothing left behind — never a crash.
TEST_F(ReportInput, EveryKeyRemovedInTurnGivesAReportOrAOneLineError) {
  const json analysed = read_json(dir_->file("study") + "/analysis/analysis.json");
  // Key paths with array indices as "*": "/runs/*/episodes/*/theory/R".
  std::set<std::string> patterns;
  std::function<void(const json&, const std::string&)> walk = [&](const json& j, const std::string& at) {
    if (j.is_object())
      for (auto it = j.begin(); it != j.end(); ++it) {
        patterns.insert(at + "/" + it.key());
        walk(it.value(), at + "/" + it.key());
      }
    else if (j.is_array())
      for (const auto& e : j) walk(e, at + "/*");
  };
  walk(analysed, "");
  ASSERT_GT(patterns.size(), 150u);
  // Removes the last component of `pattern` from every object its prefix matches.
  std::function<void(json&, const std::vector<std::string>&, size_t)> erase = [&](json& j, const std::vector<std::string>& parts,
                                                                                 size_t i) {
    if (i + 1 == parts.size()) {
      if (j.is_object()) j.erase(parts[i]);
    } else if (parts[i] == "*") {
      if (j.is_array())
        for (auto& e : j) erase(e, parts, i + 1);
    } else if (j.is_object() && j.contains(parts[i])) {
      erase(j[parts[i]], parts, i + 1);
    }
  };
  const std::string study = copy_with([](json&) {});
  int refused = 0;
  for (const auto& pattern : patterns) {
    SCOPED_TRACE(pattern);
    std::vector<std::string> parts;
    for (size_t start = 1, slash; start <= pattern.size(); start = slash + 1) {
      slash = std::min(pattern.find('/', start), pattern.size());
      parts.push_back(pattern.substr(start, slash - start));
    }
    json a = analysed;
    erase(a, parts, 0);
    std::ofstream(study + "/analysis/analysis.json", std::ios::trunc) << a.dump(1);
    auto r = report(study);
    if (r.ok()) {
      EXPECT_TRUE(fs::exists(study + "/report/index.html"));
    } else {
      ++refused;
      const std::string& m = r.status().message();
      EXPECT_EQ(m.rfind(study + "/analysis/analysis.json: ", 0), 0u) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      EXPECT_FALSE(fs::exists(study + "/report"));
      EXPECT_FALSE(fs::exists(study + "/.report.tmp"));
    }
    fs::remove_all(study + "/report");
  }
  EXPECT_GT(refused, 20) << "of " << patterns.size() << " keys";
}

}  // namespace
}  // namespace saddlescope::reports
