// End-to-end tests of `saddlescope store index` and `saddlescope store check [--repair]`: what users
// see and the exit status.
#include <gtest/gtest.h>

#include "../store/run_fixture.h"
#include "command.h"
#include "saddlescope/store/files.h"
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

}  // namespace
}  // namespace saddlescope
