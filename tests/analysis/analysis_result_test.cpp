// analysis.json's declared types (analysis_result.h): every analysis.json committed under docs/results
// reads into them and writes back to the same text; so does a fresh analysis of a study that fills
// every section, and its reanalysis; a value of the wrong type or a missing key is an error naming its
// path; docs/analysis.md names every declared key.
#include "saddlescope/analysis/analysis_result.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <set>
#include <sstream>

#include "saddlescope/analysis/study_analysis.h"
#include "synthetic_study.h"
#include "temp_dir.h"

namespace saddlescope::analysis {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// decode then encode, as analysis.json's text; "" with a failure when it does not decode.
std::string round_trip(const json& j, const std::string& what) {
  auto typed = decode_analysis(j);
  EXPECT_TRUE(typed.ok()) << what << ": " << typed.status().message();
  return typed.ok() ? analysis_json(encode_analysis(*typed)) : "";
}

TEST(AnalysisResult, EveryCommittedAnalysisReadsAndWritesBackTheSameText) {
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(SADDLESCOPE_SOURCE_DIR) / "docs/results")) {
    if (e.path().filename() != "analysis.json") continue;
    ++files;
    const std::string text = read_file(e.path());
    EXPECT_EQ(round_trip(json::parse(text), e.path().string()), text) << e.path();
  }
  EXPECT_GE(files, 20) << "docs/results should hold the published studies' analysis.json files";
}

AnalysisOptions fast() {
  AnalysisOptions o;
  o.permutations = 199;
  o.resamples = 199;
  return o;
}

TEST(AnalysisResult, AFreshAnalysisWithEverySectionAndItsReanalysisReadBackUnchanged) {
  testing::TempDir dir;
  const std::string study = dir.file("study");
  ASSERT_TRUE(testing::write_synthetic_study(study).ok());
  auto a = analyze_study(study, fast());
  ASSERT_TRUE(a.ok()) << a.status().message();
  // Every section is filled, so that the round trip covers them (the noise budget's rows: the committed
  // noise-budget studies above, and fuzz_analysis on whatever it builds).
  for (const char* section : {"runs", "groups", "comparisons", "divergence", "attribution"})
    EXPECT_FALSE(a->at(section).empty()) << section;
  EXPECT_FALSE(a->at("theory").at("points").empty());
  EXPECT_EQ(round_trip(*a, "fresh"), analysis_json(*a));

  AnalysisOptions paired = fast();
  paired.pairing = AnalysisOptions::Pairing::kOn;
  auto again = reanalyze(*a, paired);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->contains("reanalysis"));
  EXPECT_EQ(round_trip(*again, "reanalysed"), analysis_json(*again));
}

TEST(AnalysisResult, TheTypesHoldTheValues) {
  testing::TempDir dir;
  const std::string study = dir.file("study");
  ASSERT_TRUE(testing::write_synthetic_study(study).ok());
  auto a = analyze_study(study, fast());
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto typed = decode_analysis(*a);
  ASSERT_TRUE(typed.ok()) << typed.status().message();
  ASSERT_EQ(typed->runs.size(), a->at("runs").size());
  EXPECT_EQ(typed->runs[0].run_id, a->at("runs")[0].at("run_id").get<std::string>());
  EXPECT_EQ(typed->n_runs, a->at("n_runs").get<int64_t>());
  ASSERT_FALSE(typed->comparisons.empty());
  const Comparison& c = typed->comparisons[0];
  EXPECT_EQ(c.final_loss.p_holm, a->at("comparisons")[0].at("final_loss").at("p_holm").get<double>());
  EXPECT_EQ(c.final_loss.defined, a->at("comparisons")[0].at("final_loss").at("defined").get<bool>());
  // A null number is NaN in the types.
  json j = *a;
  j["theory"]["slope"] = nullptr;
  auto with_null = decode_analysis(j);
  ASSERT_TRUE(with_null.ok());
  EXPECT_TRUE(std::isnan(with_null->theory.slope));
}

TEST(AnalysisResult, AWrongTypeOrAMissingKeyIsAnErrorNamingItsPath) {
  testing::TempDir dir;
  const std::string study = dir.file("study");
  ASSERT_TRUE(testing::write_synthetic_study(study).ok());
  auto a = analyze_study(study, fast());
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto error = [&](const std::function<void(json&)>& edit) {
    json j = *a;
    edit(j);
    auto r = decode_analysis(j);
    return r.ok() ? std::string("(no error)") : r.status().message();
  };
  EXPECT_EQ(error([](json& j) { j["runs"][1]["seed"] = "x"; }), "runs[1].seed: expected an integer, got \"x\"");
  EXPECT_EQ(error([](json& j) { j["runs"][0].erase("status"); }), "runs[0].status: missing");
  EXPECT_EQ(error([](json& j) { j["comparisons"][0]["final_loss"]["p"] = true; }),
            "comparisons[0].final_loss.p: expected a number or null, got true");
  EXPECT_EQ(error([](json& j) { j["groups"] = json::object(); }), "groups: expected an array, got {}");
  EXPECT_EQ(error([](json& j) { j["schema_version"] = 2; }), "schema_version: 2 is not one this build reads (1)");
  EXPECT_EQ(error([](json& j) { j = json::array(); }),
            "schema_version: expected an integer (analysis.json is an object with one)");
  // A key left out when empty may be left out; a key the types do not declare is ignored.
  EXPECT_EQ(error([](json& j) { j.erase("noise_budget"); }), "(no error)");
  EXPECT_EQ(error([](json& j) { j["runs"][0]["from_a_newer_writer"] = 1; }), "(no error)");
  // An analysis this build has just made must be exactly what the types hold: `analyze` checks so.
  EXPECT_TRUE(decode_analysis_exact(*a).ok());
  json extra = *a;
  extra["runs"][0]["undeclared"] = 1;
  EXPECT_EQ(decode_analysis_exact(extra).status().message(),
            "not what analysis_result.h declares: {\"op\":\"add\",\"path\":\"/runs/0/undeclared\",\"value\":1}");
}

TEST(AnalysisResult, TheDocumentationNamesEveryDeclaredKey) {
  const std::string doc = read_file(fs::path(SADDLESCOPE_SOURCE_DIR) / "docs/analysis.md");
  const size_t from = doc.find("## analysis.json (schema_version 1)");
  ASSERT_NE(from, std::string::npos);
  const std::string section = doc.substr(from, doc.find("\n## ", from + 1) - from);
  const auto keys = store::declared_keys<AnalysisResult>();
  EXPECT_GT(keys.size(), 200u);
  std::set<std::string> missing;
  for (const std::string& path : keys) {
    const std::string name = path.substr(path.find_last_of(".]") + 1);
    if (name == "*" || name.empty()) continue;
    if (section.find("`" + name + "`") == std::string::npos) missing.insert(name + " (" + path + ")");
  }
  std::string list;
  for (const auto& m : missing) list += "\n  " + m;
  EXPECT_TRUE(missing.empty()) << "docs/analysis.md's analysis.json section does not name:" << list;
}

}  // namespace
}  // namespace saddlescope::analysis
