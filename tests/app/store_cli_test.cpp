// End-to-end tests of `saddlescope store index`, `store check [--repair]` and `store merge`: what
// users see and the exit status.
#include <gtest/gtest.h>

#include <filesystem>

#include "../store/merge_fixture.h"
#include "command.h"
#include "run_helpers.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/sha256.h"
#include "temp_dir.h"

namespace saddlescope {
namespace {

using store::RunStatus;
using testing::add_run;
using testing::expect_error;
using testing::make_manifest;
using testing::Output;
using testing::run;

TEST(StoreCli, RefusesADirectoryThatIsNotAStudy) {
  testing::TempDir dir;
  expect_error("store index " + dir.path(), dir.path() + ": not a study directory (no runs/ directory)");
  expect_error("store check " + dir.path(), dir.path() + ": not a study directory (no runs/ directory)");
  EXPECT_NE(run("store").code, 0);
}

TEST(StoreCli, IndexListsTheProblems) {
  testing::TempDir study;
  add_run(study.path(), make_manifest("a", RunStatus::kCompleted));
  add_run(study.path(), make_manifest("b", RunStatus::kFailed));
  auto bad = store::create_run_dir(study.path(), "c", false);
  ASSERT_TRUE(store::write_file_atomic(*bad + "/manifest.json", "{").ok());
  Output o = run("store index " + study.path());
  EXPECT_EQ(o.code, 0) << o.text;
  EXPECT_EQ(o.text, "indexed 2 runs (1 problem)\n" + *bad + "/manifest.json: not valid JSON\n");
}

TEST(StoreCli, CheckCleanStudyExitsZero) {
  testing::TempDir study;
  add_run(study.path(), make_manifest("a", RunStatus::kCompleted));
  add_run(study.path(), make_manifest("b", RunStatus::kCompleted));
  ASSERT_EQ(run("store index " + study.path()).code, 0);
  Output o = run("store check " + study.path());
  EXPECT_EQ(o.code, 0) << o.text;
  EXPECT_EQ(o.text,
            "state         runs\n"
            "completed        2\n"
            "\n"
            "no problems\n");
}

TEST(StoreCli, CheckReportsStaleRunsAndRepairMendsThem) {
  testing::TempDir study;
  add_run(study.path(), make_manifest("done", RunStatus::kCompleted));
  add_run(study.path(), make_manifest("stale", RunStatus::kRunning));  // no process: its writer is gone
  ASSERT_EQ(run("store index " + study.path()).code, 0);
  Output o = run("store check " + study.path());
  EXPECT_EQ(o.code, 1) << o.text;
  EXPECT_EQ(o.text,
            "state         runs\n"
            "completed        1\n"
            "stale            1\n"
            "\n"
            "1 problem:\n"
            "stale/manifest.json: status running without a writing process; stale (--repair marks it interrupted)\n");
  Output r = run("store check " + study.path() + " --repair");
  EXPECT_EQ(r.code, 0) << r.text;
  EXPECT_EQ(r.text,
            "repaired stale: marked interrupted (stopped_by stale: it was running, its process is gone)\n"
            "repaired catalog.sqlite: updated the rows of stale\n"
            "\n"
            "state         runs\n"
            "completed        1\n"
            "interrupted      1\n"
            "\n"
            "no problems\n");
}

TEST(StoreCli, MergePrintsALinePerStudyAndAgainAddsNothing) {
  testing::TempDir tmp;
  std::string a = tmp.file("a"), b = tmp.file("b"), out = tmp.file("out");
  add_run(a, testing::run_on("x", "a"));
  add_run(a, testing::run_on("y", "a"));
  add_run(b, testing::run_on("x", "b"));
  add_run(b, testing::run_on("y", "a"));
  std::string renamed = "x." + store::sha256_hex(testing::run_on("x", "b").fingerprint.dump()).substr(0, 8);
  Output o = run("store merge " + out + " " + a + " " + b);
  EXPECT_EQ(o.code, 0) << o.text;
  EXPECT_EQ(o.text, a + ": 2 added, 0 deduplicated, 0 renamed\n" +
                        b + ": 0 added, 1 deduplicated, 1 renamed (x -> " + renamed + ")\n");
  Output again = run("store merge " + out + " " + b + " " + a);
  EXPECT_EQ(again.code, 0) << again.text;
  EXPECT_EQ(again.text, b + ": 0 added, 2 deduplicated, 0 renamed\n" + a + ": 0 added, 2 deduplicated, 0 renamed\n");
  Output check = run("store check " + out);
  EXPECT_EQ(check.code, 0) << check.text;
  EXPECT_EQ(check.text, "state         runs\ncompleted        3\n\nno problems\n");
}

TEST(StoreCli, MergeRefusesInOneLineAndWritesNothing) {
  testing::TempDir tmp;
  std::string a = tmp.file("a"), out = tmp.file("out");
  std::string x = add_run(a, testing::run_on("x", "a"));
  std::filesystem::remove(x + "/metrics.csv");
  std::filesystem::create_symlink("/etc/passwd", x + "/metrics.csv");
  expect_error("store merge " + out + " " + a,
               x + "/metrics.csv: a symbolic link (merge neither copies nor follows links)");
  EXPECT_FALSE(std::filesystem::exists(out));
  expect_error("store merge " + a + " " + a, a + ": is " + a + " (or holds it, or is held in it): a study is not merged into itself");
  expect_error("store merge " + out + " " + tmp.path(), tmp.path() + ": not a study directory (no runs/ directory)");
  EXPECT_EQ(run("store merge " + out).code, 2);
  EXPECT_EQ(run("store merge " + out + " " + a + " --max-file-mib 0").code, 2);
}

// Real trainings: one config trained into two studies is one run; the same run from another
// environment is kept apart; each merged run reads back whole and the merged study checks clean.
TEST(StoreCli, MergeRealRuns) {
  testing::TempDir tmp;
  std::string train = "train --data npy:" + testing::pixels(tmp) + " --hidden 8,4 --batch-size 4 --threads 1 " +
                      "--steps 40 --log-every 10 --checkpoint-every 10 " +
                      "--probe curvature:every=10,batch=16,vectors=true --probe symmetry:every=10 " +
                      "--probe ops:every=25,k=2 --out ";
  std::string a = tmp.file("a"), b = tmp.file("b"), c = tmp.file("c"), out = tmp.file("out");
  for (const std::string& study : {a, b, c})
    ASSERT_EQ(run(train + study + " --seed 5 --snapshot-every 20").code, 0) << study;
  ASSERT_EQ(run(train + b + " --seed 6").code, 0);
  std::vector<std::string> ids = testing::run_names(a);
  ASSERT_EQ(ids.size(), 1u);
  std::string id = ids[0], c_run = c + "/runs/" + id;
  auto m = store::read_manifest(c_run);  // c: as if trained on another host
  ASSERT_TRUE(m.ok()) << m.status().message();
  m->fingerprint["host"] = "gpu-node-7";
  ASSERT_TRUE(store::write_manifest(c_run, *m).ok());
  std::string renamed = id + "." + store::sha256_hex(m->fingerprint.dump()).substr(0, 8);

  Output o = run("store merge " + out + " " + a + " " + b + " " + c);
  EXPECT_EQ(o.code, 0) << o.text;
  EXPECT_EQ(o.text, a + ": 1 added, 0 deduplicated, 0 renamed\n" + b + ": 1 added, 1 deduplicated, 0 renamed\n" + c +
                        ": 0 added, 0 deduplicated, 1 renamed (" + id + " -> " + renamed + ")\n");
  EXPECT_EQ(testing::run_names(out).size(), 3u);
  auto copy = store::RunDir::open(out + "/runs/" + renamed);
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  EXPECT_EQ(copy->id(), renamed);
  EXPECT_EQ(copy->metrics().value().size(), 40u);
  EXPECT_EQ(copy->snapshot_steps(), (std::vector<int64_t>{0, 20, 40}));
  Output check = run("store check " + out);
  EXPECT_EQ(check.code, 0) << check.text;
  EXPECT_EQ(check.text, "state         runs\ncompleted        3\n\nno problems\n");
  Output again = run("store merge " + out + " " + c + " " + b + " " + a);
  EXPECT_EQ(again.code, 0) << again.text;
  EXPECT_EQ(again.text, c + ": 0 added, 1 deduplicated, 0 renamed\n" + b + ": 0 added, 2 deduplicated, 0 renamed\n" + a +
                            ": 0 added, 1 deduplicated, 0 renamed\n");
}

}  // namespace
}  // namespace saddlescope
