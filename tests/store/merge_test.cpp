// store merge: which runs are added, kept apart under a derived id, deduplicated or in conflict; the
// catalogue afterwards; idempotence. Hostile inputs and interrupted merges: merge_hostile_test.cpp.
#include "saddlescope/store/merge.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "merge_fixture.h"
#include "saddlescope/store/check.h"
#include "saddlescope/store/sha256.h"
#include "sql.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::store {
namespace {

using testing::add_run;
using testing::make_manifest;
using testing::run_names;
using testing::run_on;
using testing::tree_state;
using Renamed = std::vector<std::pair<std::string, std::string>>;

// Three study directories in one temporary directory: a (host "a"), b (host "b") and the output.
struct Studies {
  testing::TempDir tmp;
  std::string a = tmp.file("a"), b = tmp.file("b"), out = tmp.file("out");
};

std::string fp8(const std::string& host) {
  return sha256_hex(run_on("x", host).fingerprint.dump()).substr(0, 8);
}

TEST(MergedRunId, ValidStableAndShortEnough) {
  nlohmann::json fp = {{"host", "b"}};
  std::string id = merged_run_id("ae-cpu-t1-s0-1a2b3c4d", fp);
  EXPECT_EQ(id, "ae-cpu-t1-s0-1a2b3c4d." + sha256_hex(fp.dump()).substr(0, 8));
  EXPECT_TRUE(validate_run_id(id).ok());
  EXPECT_EQ(id, merged_run_id("ae-cpu-t1-s0-1a2b3c4d", fp));
  EXPECT_NE(id, merged_run_id("ae-cpu-t1-s0-1a2b3c4d", nlohmann::json{{"host", "c"}}));
  std::string longest = merged_run_id(std::string(128, 'r'), fp);
  EXPECT_EQ(longest.size(), 128u);
  EXPECT_TRUE(validate_run_id(longest).ok());
}

TEST(Merge, CopiesEveryRunIntoANewStudyAndIndexesIt) {
  Studies s;
  std::string a1 = add_run(s.a, run_on("r1", "a", 1), 10, 2);
  add_run(s.a, run_on("r2", "a", 2));
  add_run(s.b, run_on("r3", "b", 3));
  auto r = merge_studies(s.out, {s.a, s.b});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].study, s.a);
  EXPECT_EQ((*r)[0].added, 2);
  EXPECT_EQ((*r)[1].added, 1);
  EXPECT_EQ((*r)[1].deduplicated, 0);
  EXPECT_TRUE((*r)[1].renamed.empty());
  EXPECT_EQ(run_names(s.out), (std::vector<std::string>{"r1", "r2", "r3"}));

  auto copy = RunDir::open(s.out + "/runs/r1");
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  auto source = RunDir::open(a1);
  EXPECT_EQ(copy->metrics().value().size(), 10u);
  EXPECT_EQ(copy->curvature().value().size(), source->curvature().value().size());
  EXPECT_EQ(copy->snapshot(10).value().at("w").bytes, source->snapshot(10).value().at("w").bytes);
  EXPECT_EQ(copy->manifest().extra["merged_from"],
            nlohmann::json::array({{{"study", s.a}, {"run_id", "r1"}}}));

  EXPECT_EQ(testing::query_one(s.out + "/catalog.sqlite", "SELECT count(*) FROM runs"), "3");
  auto check = check_study(s.out);
  ASSERT_TRUE(check.ok());
  EXPECT_TRUE(check->clean()) << (check->problems.empty() ? "" : describe(check->problems[0]));
}

TEST(Merge, TheSameIdFromAnotherHostIsKeptUnderADerivedId) {
  Studies s;
  add_run(s.a, run_on("x", "a", 1));
  add_run(s.b, run_on("x", "b", 2));
  add_run(s.b, run_on("y", "b"));
  auto r = merge_studies(s.out, {s.a, s.b});
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string renamed = "x." + fp8("b");
  EXPECT_EQ((*r)[1].renamed, (Renamed{{"x", renamed}}));
  EXPECT_EQ((*r)[1].added, 1);
  EXPECT_EQ(run_names(s.out), (std::vector<std::string>{"x", renamed, "y"}));

  auto kept = RunDir::open(s.out + "/runs/" + renamed);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_EQ(kept->id(), renamed);
  EXPECT_EQ(kept->manifest().fingerprint["host"], "b");
  EXPECT_EQ(kept->manifest().extra["merged_from"], nlohmann::json::array({{{"study", s.b}, {"run_id", "x"}}}));
  EXPECT_EQ(kept->metrics().value()[0].loss, 3.0);  // seed 2's run: loss (1 + seed) / (1 + step)
  std::string db = s.out + "/catalog.sqlite";
  EXPECT_EQ(testing::query(db, "SELECT run_id, fingerprint_digest FROM runs ORDER BY run_id"),
            (std::vector<std::string>{"x|" + sha256_hex(run_on("x", "a").fingerprint.dump()),
                                      renamed + "|" + sha256_hex(run_on("x", "b").fingerprint.dump()),
                                      "y|" + sha256_hex(run_on("y", "b").fingerprint.dump())}));
  auto check = check_study(s.out);
  EXPECT_TRUE(check.ok() && check->clean());
}

TEST(Merge, TheSameRunTwiceIsKeptOnceWhateverItsWallClock) {
  Studies s;
  add_run(s.a, run_on("x", "a"));
  RunManifest again = run_on("x", "a");
  again.timings = {"2027-03-01T10:00:00Z", "2027-03-01T10:05:00Z", 300, 1, 0, 2, 3};
  again.resumes = 2;
  again.checkpoint_step = 4;
  again.steps_per_s = 0.03;
  // Run by another study, sharing its GPU another way: provenance, not a result.
  again.extra["study"] = {{"name", "other"}, {"task", 4}, {"gpu", {{"sharing", "mps"}, {"runs_per_gpu", 8}}}};
  std::string b = add_run(s.b, again);
  auto rows = testing::metrics_rows(10);
  for (auto& row : rows) row.wall_s *= 7;  // another machine's clock: not a result
  testing::rewrite_metrics(b, rows);
  auto r = merge_studies(s.out, {s.a, s.b});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].added, 1);
  EXPECT_EQ((*r)[1].added, 0);
  EXPECT_EQ((*r)[1].deduplicated, 1);
  EXPECT_EQ(run_names(s.out), (std::vector<std::string>{"x"}));
  EXPECT_EQ(RunDir::open(s.out + "/runs/x")->manifest().timings.train_s, 60);  // the first one's
}

TEST(Merge, TheSameRunWithOtherResultsIsAConflictAndNothingIsWritten) {
  Studies s;
  add_run(s.a, run_on("x", "a"));
  std::string b = add_run(s.b, run_on("x", "a"));
  auto rows = testing::metrics_rows(10);
  rows[3].loss = 0.5;
  testing::rewrite_metrics(b, rows);
  add_run(s.b, run_on("y", "b"));
  auto r = merge_studies(s.out, {s.a, s.b});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), s.a + "/runs/x and " + s.b + "/runs/x: the same run (id and environment) with " +
                                      "different results: metrics.csv line 5 (step 3): loss 0.25 vs 0.5; nothing was merged");
  EXPECT_FALSE(fs::exists(s.out));

  // Against a run already in the output, which stays as it was.
  ASSERT_TRUE(merge_studies(s.out, {s.a}).ok());
  auto before = tree_state(s.out);
  r = merge_studies(s.out, {s.b});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), s.out + "/runs/x and " + s.b + "/runs/x: the same run (id and environment) with " +
                                      "different results: metrics.csv line 5 (step 3): loss 0.25 vs 0.5; nothing was merged");
  EXPECT_EQ(tree_state(s.out), before);
}

TEST(Merge, ConflictsNameTheFirstDifference) {
  Studies s;
  add_run(s.a, run_on("x", "a"));
  RunManifest other = run_on("x", "a");
  other.final_loss = 0.25;
  add_run(s.b, other);
  auto r = merge_studies(s.out, {s.a, s.b});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("different results: manifest.json final_loss: 0.5 vs 0.25;"), std::string::npos)
      << r.status().message();
  other.final_loss = 0.5;
  other.evaluation->mse = 0.02;
  other.data = {{"digests", {{"mnist/train-images-idx3-ubyte", "0fa7"}}}};
  testing::TempDir c;
  add_run(c.path(), other);
  r = merge_studies(s.out, {s.a, c.path()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("different results: manifest.json data.digests: absent vs {\"mnist/train-images"),
            std::string::npos)
      << r.status().message();
  other.data = {};
  testing::TempDir d;
  std::string dir = add_run(d.path(), other);
  r = merge_studies(s.out, {s.a, d.path()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("different results: manifest.json evaluation.mse: 0.01 vs 0.02;"), std::string::npos)
      << r.status().message();
  RunManifest written = RunDir::open(dir)->manifest();
  written.evaluation->mse = 0.01;
  ASSERT_TRUE(write_manifest(dir, written).ok());
  float w[2] = {1, 3};
  ASSERT_TRUE(write_npy(dir + "/snapshots/step-00000010/w.npy", Dtype::kFloat32, {2}, w).ok());
  r = merge_studies(s.out, {s.a, d.path()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("different results: snapshots/step-00000010/w.npy: different values;"),
            std::string::npos)
      << r.status().message();
}

TEST(Merge, TheSameRunFromAnotherDirectoryWithOtherCadencesIsKeptOnce) {
  Studies s;
  RunManifest here = run_on("x", "a");
  here.config["out"] = "runs/here";
  here.config["data_dir"] = "/home/me/data";
  here.data = {{"source", "mnist (/home/me/data/mnist/train-images-idx3-ubyte)"}, {"digests", {{"mnist/x", "ab"}}}};
  add_run(s.a, here);
  RunManifest there = here;
  there.config["out"] = "/scratch/study";
  there.config["data_dir"] = "/scratch/data";
  there.config["snapshot_every"] = 5;
  there.data["source"] = "mnist (/scratch/data/mnist/train-images-idx3-ubyte)";
  there.status = RunStatus::kCompleted;
  std::string b = add_run(s.b, there);
  std::filesystem::create_directories(b + "/snapshots/step-00000005");  // more snapshots: not in the id
  float w[2] = {5, 6};
  ASSERT_TRUE(write_npy(b + "/snapshots/step-00000005/w.npy", Dtype::kFloat32, {2}, w).ok());
  auto r = merge_studies(s.out, {s.a, s.b});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[1].deduplicated, 1);
}

TEST(Merge, MergingTheSameInputsAgainChangesNothing) {
  Studies s;
  add_run(s.a, run_on("x", "a"));
  add_run(s.a, make_manifest("f", RunStatus::kFailed));
  add_run(s.b, run_on("x", "b"));
  ASSERT_TRUE(merge_studies(s.out, {s.a, s.b}).ok());
  auto before = tree_state(s.out);
  auto r = merge_studies(s.out, {s.a, s.b, s.a});
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const auto& input : *r) {
    EXPECT_EQ(input.added, 0);
    EXPECT_TRUE(input.renamed.empty());
  }
  EXPECT_EQ((*r)[0].deduplicated, 2);
  EXPECT_EQ((*r)[1].deduplicated, 1);  // against the renamed copy
  EXPECT_EQ(tree_state(s.out), before);
}

TEST(Merge, IntoAnExistingStudyLeavesItsRunsAlone) {
  Studies s;
  std::string mine = add_run(s.out, run_on("x", "a"));
  add_run(s.out, run_on("z", "a"));
  ASSERT_TRUE(rebuild_catalog(s.out).ok());
  auto before = tree_state(mine);
  add_run(s.b, run_on("x", "b"));
  add_run(s.b, run_on("y", "b"));
  auto r = merge_studies(s.out, {s.b});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].added, 1);
  EXPECT_EQ((*r)[0].renamed, (Renamed{{"x", "x." + fp8("b")}}));
  EXPECT_EQ(run_names(s.out), (std::vector<std::string>{"x", "x." + fp8("b"), "y", "z"}));
  EXPECT_EQ(tree_state(mine), before);
  EXPECT_EQ(testing::query_one(s.out + "/catalog.sqlite", "SELECT count(*) FROM runs"), "4");
  auto check = check_study(s.out);
  EXPECT_TRUE(check.ok() && check->clean());
}

TEST(Merge, AThirdHostAndTheInputsThemselvesHoldingAnIdTwice) {
  Studies s;
  testing::TempDir c, d;
  add_run(s.a, run_on("x", "a"));
  add_run(s.b, run_on("x", "b"));
  add_run(c.path(), run_on("x", "c"));
  add_run(d.path(), run_on("x", "b"));  // b's run again, from another copy
  auto r = merge_studies(s.out, {s.a, s.b, c.path(), d.path()});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[2].renamed, (Renamed{{"x", "x." + fp8("c")}}));
  EXPECT_EQ((*r)[3].deduplicated, 1);
  EXPECT_EQ(run_names(s.out), (std::vector<std::string>{"x", "x." + fp8("b"), "x." + fp8("c")}));
}

TEST(Merge, AMergedStudyMergesOnAndRecordsEveryHop) {
  Studies s;
  add_run(s.a, run_on("x", "a"));
  add_run(s.b, run_on("x", "b"));
  ASSERT_TRUE(merge_studies(s.out, {s.a, s.b}).ok());
  testing::TempDir far;
  std::string next = far.file("next");
  auto r = merge_studies(next, {s.out});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].added, 2);
  auto run = RunDir::open(next + "/runs/x." + fp8("b"));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->manifest().extra["merged_from"],
            nlohmann::json::array({{{"study", s.b}, {"run_id", "x"}}, {{"study", s.out}, {"run_id", "x." + fp8("b")}}}));
  // ... and deduplicates against the originals
  r = merge_studies(next, {s.b, s.a});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].deduplicated + (*r)[1].deduplicated, 2);
}

TEST(Merge, EmptyStudiesAddNothingAndCreateNothing) {
  Studies s;
  fs::create_directories(s.a + "/runs");
  auto r = merge_studies(s.out, {s.a});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].added, 0);
  EXPECT_FALSE(fs::exists(s.out));
}

}  // namespace
}  // namespace saddlescope::store
