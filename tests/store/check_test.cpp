#include "saddlescope/store/check.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "run_fixture.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/files.h"
#include "sql.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::store {
namespace {

using testing::add_run;
using testing::make_manifest;

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A child process that holds run `id`'s RunLock and has written the run's manifest as running, with
// its pid and this host, as a trainer does — until it is killed or told to exit.
class Writer {
 public:
  Writer(const std::string& study, const std::string& id) {
    int ready[2];
    EXPECT_EQ(pipe(ready), 0);
    EXPECT_EQ(pipe(stop_), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      close(stop_[1]);
      auto lock = RunLock::acquire(study, id);
      RunManifest m = make_manifest(id, RunStatus::kRunning);
      m.files[kMetrics.file] = kMetrics.version;
      m.process = ProcessInfo{getpid(), testing::this_host(), now_unix()};
      bool ok = lock.ok() && write_manifest(study + "/runs/" + id, m).ok();
      (void)!write(ready[1], ok ? "y" : "n", 1);
      char c;
      (void)!read(stop_[0], &c, 1);  // until the parent closes its end
      _exit(0);
    }
    close(ready[1]);
    close(stop_[0]);
    char c = 0;
    (void)!read(ready[0], &c, 1);
    close(ready[0]);
    EXPECT_EQ(c, 'y') << "the writer could not take the lock or write the manifest";
  }
  ~Writer() { kill(); }
  // Exits normally, without touching the run: the kernel releases the lock.
  void exit() {
    if (pid_ <= 0) return;
    close(stop_[1]);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    close(stop_[1]);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int stop_[2] = {-1, -1};
};

std::vector<std::string> described(const StudyCheck& c) {
  std::vector<std::string> d;
  for (const auto& p : c.problems) d.push_back(describe(p));
  return d;
}

std::string state_of(const StudyCheck& c, const std::string& id) {
  for (const auto& r : c.runs)
    if (r.run_id == id) return r.state;
  return "absent";
}

TEST(Check, CleanStudy) {
  testing::TempDir study;
  add_run(study.path(), make_manifest("a", RunStatus::kCompleted, 1));
  add_run(study.path(), make_manifest("b", RunStatus::kCompleted, 2));
  add_run(study.path(), make_manifest("c", RunStatus::kDiverged, 3));
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  auto c = check_study(study.path());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->clean()) << ::testing::PrintToString(described(*c));
  EXPECT_EQ(c->counts(), (std::map<std::string, int>{{"completed", 2}, {"diverged", 1}}));
}

TEST(Check, NotAStudy) {
  testing::TempDir dir;
  auto c = check_study(dir.file("nowhere"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), dir.file("nowhere") + ": not a study directory (no runs/ directory)");
}

TEST(Check, RunningWhileItsWriterHoldsTheLockStaleOnceItIsGone) {
  testing::TempDir study;
  add_run(study.path(), make_manifest("killed", RunStatus::kRunning));
  add_run(study.path(), make_manifest("exited", RunStatus::kRunning));
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  Writer killed(study.path(), "killed"), exited(study.path(), "exited");
  auto live = check_study(study.path());
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(live->counts(), (std::map<std::string, int>{{"running", 2}}));
  EXPECT_TRUE(live->clean()) << ::testing::PrintToString(described(*live));

  killed.kill();
  exited.exit();
  auto gone = check_study(study.path());
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->counts(), (std::map<std::string, int>{{"stale", 2}}));
  ASSERT_FALSE(gone->clean());
  auto d = described(*gone);
  ASSERT_GE(d.size(), 2u);
  EXPECT_NE(d[0].find("exited/manifest.json: status running, but no process holds its lock (pid "), std::string::npos)
      << d[0];
  EXPECT_NE(d[0].find("on this host is gone); stale (--repair marks it interrupted)"), std::string::npos) << d[0];
}

TEST(Check, OtherHostsRunsAreStaleByHeartbeat) {
  testing::TempDir study;
  RunManifest fresh = make_manifest("fresh", RunStatus::kRunning);
  fresh.process = ProcessInfo{42, "elsewhere", now_unix()};
  RunManifest old = make_manifest("old", RunStatus::kRunning);
  old.process = ProcessInfo{43, "elsewhere", now_unix() - kStaleAfterSeconds - 100};
  add_run(study.path(), fresh);
  add_run(study.path(), old);
  auto c = check_study(study.path());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(state_of(*c, "fresh"), "running");
  EXPECT_EQ(state_of(*c, "old"), "stale");
  EXPECT_NE(::testing::PrintToString(described(*c)).find("old/manifest.json: status running, but the last heartbeat "
                                                         "of pid 43 on elsewhere was 7"),
            std::string::npos);
}

TEST(Check, NamesEveryKindOfProblem) {
  testing::TempDir study;
  auto unreadable = create_run_dir(study.path(), "unreadable", false);
  write_file_atomic(*unreadable + "/manifest.json", "{");
  // Listed but missing; listed at another version; a file nobody knows; completed without results.
  RunManifest m = make_manifest("broken", RunStatus::kCompleted);
  std::string broken = add_run(study.path(), m);
  m.files = {{"metrics.csv", 1}, {"curvature.csv", 1}, {"symmetry.csv", 2}, {"weights.bin", 1}};
  m.evaluation.reset();
  write_file_atomic(broken + "/symmetry.csv", "step\n");
  ASSERT_TRUE(write_manifest(broken, m).ok());
  // Temporaries of killed writers.
  std::string left = add_run(study.path(), make_manifest("left", RunStatus::kInterrupted));
  fs::create_directories(left + "/snapshots/.step-00000005.tmp");
  write_file_atomic(left + "/manifest.json.tmp.12345", "{");
  write_file_atomic(left + "/metrics.csv.resume", "step\n");
  study.write("catalog.sqlite.tmp.777", "");

  auto c = check_study(study.path());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->counts(), (std::map<std::string, int>{{"completed", 1}, {"interrupted", 1}, {"unreadable", 1}}));
  EXPECT_EQ(described(*c),
            (std::vector<std::string>{
                "broken/curvature.csv: cannot open for reading: No such file or directory",
                "broken/symmetry.csv: schema version 2, this saddlescope reads version 1",
                "broken/weights.bin: listed in manifest.json, but not a file this saddlescope knows (written by a "
                "newer one?)",
                "broken/manifest.json: status completed, but no evaluation",
                "broken/snapshots: status completed, but no final snapshot (snapshots/step-00000010)",
                "left/manifest.json.tmp.12345: a temporary left by a killed writer (--repair removes it)",
                "left/metrics.csv.resume: a temporary left by a killed writer (--repair removes it)",
                "left/snapshots/.step-00000005.tmp: a temporary left by a killed writer (--repair removes it)",
                "unreadable/manifest.json: not valid JSON",
                "catalog.sqlite: missing; `saddlescope store index` (or check --repair) rebuilds it",
                "catalog.sqlite.tmp.777: a temporary left by a killed rebuild (--repair removes it)",
            }));
}

TEST(Check, CatalogueOutOfDateNamesTheRun) {
  testing::TempDir study;
  std::string a = add_run(study.path(), make_manifest("a", RunStatus::kCompleted));
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  std::ofstream(a + "/metrics.csv", std::ios::app) << "10,0.1,0.1,0.001,0.1\n";
  auto c = check_study(study.path());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(described(*c), (std::vector<std::string>{"a/catalog.sqlite: the catalogue's rows of this run are out of "
                                                     "date; `saddlescope store index` (or check --repair) updates them"}));
}

TEST(Check, TemporariesOfARunningRunAreItsWriters) {
  testing::TempDir study;
  std::string dir = add_run(study.path(), make_manifest("live", RunStatus::kRunning));
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  Writer writer(study.path(), "live");
  fs::create_directories(dir + "/snapshots/.step-00000005.tmp");
  auto c = check_study(study.path());
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->clean()) << ::testing::PrintToString(described(*c));
  auto r = repair_study(study.path());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(fs::exists(dir + "/snapshots/.step-00000005.tmp"));
  EXPECT_EQ(read_manifest(dir)->status, RunStatus::kRunning);
}

TEST(Check, RepairMarksStaleRunsInterruptedRemovesTemporariesAndUpdatesTheCatalogue) {
  testing::TempDir study;
  std::string stale = add_run(study.path(), make_manifest("stale", RunStatus::kRunning));
  std::string live = add_run(study.path(), make_manifest("live", RunStatus::kRunning));
  std::string done = add_run(study.path(), make_manifest("done", RunStatus::kCompleted));
  auto bad = create_run_dir(study.path(), "bad", false);
  write_file_atomic(*bad + "/manifest.json", "{");
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  Writer dead(study.path(), "stale"), alive(study.path(), "live");
  dead.kill();
  fs::create_directories(done + "/checkpoint/.step-00000004.tmp");
  write_file_atomic(stale + "/metrics.csv.resume", "step\n");
  study.write("catalog.sqlite.tmp.777", "");

  auto r = repair_study(study.path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->actions, (std::vector<std::string>{
                            "done: removed checkpoint/.step-00000004.tmp",
                            "stale: marked interrupted (stopped_by stale: it was running, its process is gone)",
                            "stale: removed metrics.csv.resume",
                            "catalog.sqlite: rebuilt (3 runs)",
                        }));
  auto m = read_manifest(stale);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, RunStatus::kInterrupted);
  EXPECT_EQ(m->stopped_by, "stale");
  EXPECT_FALSE(m->process.has_value());
  EXPECT_EQ(m->timings.finished.size(), std::string("2026-01-01T00:00:00Z").size());
  EXPECT_EQ(read_manifest(live)->status, RunStatus::kRunning);
  EXPECT_EQ(testing::query(study.file("catalog.sqlite"), "SELECT run_id, status, stopped_by FROM runs ORDER BY run_id"),
            (std::vector<std::string>{"done|completed|NULL", "live|running|NULL", "stale|interrupted|stale"}));

  auto c = check_study(study.path());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(described(*c), (std::vector<std::string>{"bad/manifest.json: not valid JSON"})) << "not repairable";
  EXPECT_EQ(c->counts(), (std::map<std::string, int>{
                             {"completed", 1}, {"interrupted", 1}, {"running", 1}, {"unreadable", 1}}));

  // With nothing but a changed run, repair upserts that run only.
  std::ofstream(done + "/metrics.csv", std::ios::app) << "10,0.1,0.1,0.001,0.1\n";
  auto again = repair_study(study.path());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->actions, (std::vector<std::string>{"catalog.sqlite: updated the rows of done"}));
}

}  // namespace
}  // namespace saddlescope::store
