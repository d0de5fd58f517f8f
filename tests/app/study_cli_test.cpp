// Studies through the real binary: killed at random moments (SIGKILL, of the runner alone or of
// everything) and started again, a study ends with every run present once and the bits of a study
// never stopped; Ctrl-C stops it cleanly and a rerun continues; a failed run does not stop the others.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <set>
#include <thread>

#include "command.h"
#include "run_helpers.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/run_dir.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope {
namespace {

using testing::Output;
using testing::run;

// Six small runs (two configs × three seeds) that write at every write point: probes, snapshots and
// a checkpoint every 10 steps.
std::string study_file(const testing::TempDir& dir, const std::string& extra_config = "") {
  return dir.write("s.toml", "name = \"t\"\nseeds = [1, 2, 3]\n[base]\ndata = \"npy:" + testing::pixels(dir) +
                                 "\"\nhidden = [8, 4]\nbatch_size = 4\nsteps = 120\nlog_every = 10\n"
                                 "snapshot_every = 40\ncheckpoint_every = 10\nthreads = 1\n"
                                 "probe = [\"curvature:every=30,batch=16\", \"symmetry:every=30\"]\n"
                                 "[configs.plain]\nlr = 1e-3\n[configs.noisy]\nperturbation = \"gaussian:1e-3\"\n" +
                                 extra_config);
}

// The pids whose parent is `pid` (from /proc).
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == pid) out.push_back(std::stoi(e.path().filename().string()));
  }
  return out;
}

// Whether some run of the study has a checkpoint to resume from.
bool some_checkpoint(const std::string& out) {
  for (const auto& dir : store::list_run_dirs(out))
    if (auto r = store::RunDir::open(dir); r.ok() && r->manifest().checkpoint_step) return true;
  return false;
}

void wait_until(const std::function<bool()>& done, double timeout_s) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!done() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

std::set<std::string> run_ids(const std::string& out) {
  std::set<std::string> ids;
  for (const auto& dir : store::list_run_dirs(out)) ids.insert(fs::path(dir).filename().string());
  return ids;
}

void expect_same_study(const std::string& a, const std::string& b) {
  ASSERT_EQ(run_ids(a).size(), 6u);
  ASSERT_EQ(run_ids(a), run_ids(b));
  for (const auto& id : run_ids(a)) {
    SCOPED_TRACE(id);
    testing::expect_same_run(a + "/runs/" + id, b + "/runs/" + id);
    for (const auto& e : fs::recursive_directory_iterator(b + "/runs/" + id))
      EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path() << " left behind";
  }
}

TEST(StudyCli, KilledAtRandomMomentsAndRestartedGivesTheStudyNeverStopped) {
  testing::TempDir dir;
  const std::string file = study_file(dir);
  Output ref = run("study run " + file + " --out " + dir.file("ref"));
  ASSERT_EQ(ref.code, 0) << ref.text;

  const std::string out = dir.file("killed");
  std::mt19937 rng(2026);
  int resumed_before = 0;
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("kill " + std::to_string(i));
    // Two runs at a time, so that a machine with many cores does not finish the study between kills.
    pid_t runner = testing::spawn("study run " + file + " --out " + out + " --jobs 2", dir.file("run.log"));
    // The first kill comes once a run has a checkpoint (so that some run surely resumes); the others
    // at random moments.
    if (i == 0) wait_until([&] { return some_checkpoint(out); }, 60);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 700)(rng)));
    if (i % 2 == 1)  // everything at once: the runs cannot checkpoint, and are found stale
      for (pid_t child : children_of(runner)) ::kill(child, SIGKILL);
    ::kill(runner, SIGKILL);
    int code = testing::wait_for(runner);
    if (i > 0 && code == 0) break;  // the study finished before this kill: nothing left to stop
    EXPECT_EQ(code, 128 + SIGKILL);
  }
  Output last = run("study run " + file + " --out " + out);
  ASSERT_EQ(last.code, 0) << last.text;
  expect_same_study(dir.file("ref"), out);
  for (const auto& id : run_ids(out)) resumed_before += store::RunDir::open(out + "/runs/" + id)->manifest().resumes;
  EXPECT_GE(resumed_before, 1) << "some run went on from a checkpoint";

  // A third run of the command finds nothing to do.
  Output again = run("study run " + file + " --out " + out);
  EXPECT_EQ(again.code, 0);
  EXPECT_NE(again.text.find("6 of 6 runs already finished"), std::string::npos) << again.text;
}

TEST(StudyCli, CtrlCStopsCleanlyAndTheSameCommandContinues) {
  testing::TempDir dir;
  const std::string file = study_file(dir);
  const std::string out = dir.file("out");
  pid_t runner = testing::spawn("study run " + file + " --out " + out + " --jobs 2", dir.file("run.log"));
  wait_until([&] { return some_checkpoint(out); }, 60);
  ::kill(runner, SIGINT);
  EXPECT_EQ(testing::wait_for(runner), 130) << testing::read_all(dir.file("run.log"));
  std::string log = testing::read_all(dir.file("run.log"));
  EXPECT_NE(log.find("stopped by SIGINT"), std::string::npos) << log;
  // Every run is finished, interrupted (with a checkpoint) or not started: none is left running or stale.
  Output status = run("study status " + out);
  EXPECT_EQ(status.code, 0);
  for (const auto& id : run_ids(out)) {
    auto r = store::RunDir::open(out + "/runs/" + id);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->state() == store::RunStatus::kCompleted || r->state() == store::RunStatus::kInterrupted)
        << id << " is " << store::status_name(r->state()) << "\n" << status.text;
    if (r->state() == store::RunStatus::kInterrupted) EXPECT_EQ(r->manifest().stopped_by, "SIGINT");
  }
  Output rest = run("study run " + file + " --out " + out);
  ASSERT_EQ(rest.code, 0) << rest.text;
  Output ref = run("study run " + file + " --out " + dir.file("ref"));
  ASSERT_EQ(ref.code, 0) << ref.text;
  expect_same_study(dir.file("ref"), out);
}

TEST(StudyCli, AFailedRunIsRecordedAndDoesNotStopTheOthers) {
  testing::TempDir dir;
  const std::string file = study_file(dir, "[configs.broken]\ninit_from = \"" + dir.file("no-such-run") + "\"\n");
  const std::string out = dir.file("out");
  Output r = run("study run " + file + " --out " + out);
  EXPECT_EQ(r.code, 1) << r.text;
  EXPECT_NE(r.text.find("6 completed, 0 diverged, 3 failed"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("failed    autoencoder/broken/s1: init_from: " + dir.file("no-such-run")), std::string::npos) << r.text;
  Output status = run("study status " + out);
  EXPECT_EQ(status.code, 0);
  EXPECT_NE(status.text.find("failed      autoencoder/broken/s2"), std::string::npos) << status.text;
  // A rerun tries the failed runs again and leaves the finished ones alone.
  Output again = run("study run " + file + " --out " + out);
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.text.find("6 of 9 runs already finished"), std::string::npos) << again.text;
}

// Publishing failures in a study: the study's own copy of its file cannot be renamed into place (nothing
// starts), or every run's checkpoint flush fails (each run is recorded failed with the file named); a
// rerun without the fault finishes every run.
TEST(StudyCli, FailedFlushesAndRenamesAreRecordedAndARerunFinishes) {
  testing::TempDir dir;
  const std::string file = study_file(dir), out = dir.file("out");
  Output r = run("--version >/dev/null; SADDLESCOPE_FAIL_RENAME=study.toml " + std::string(SADDLESCOPE_BIN) +
                 " study run " + file + " --out " + out);
  EXPECT_EQ(r.code, 1) << r.text;
  EXPECT_NE(r.text.find(out + "/study.toml: rename failed: Invalid cross-device link (injected by SADDLESCOPE_FAIL_RENAME)"),
            std::string::npos) << r.text;
  EXPECT_TRUE(store::list_run_dirs(out).empty()) << "no run starts without the study's file";
  r = run("--version >/dev/null; SADDLESCOPE_FAIL_FSYNC=checkpoint/ " + std::string(SADDLESCOPE_BIN) + " study run " +
          file + " --out " + out);
  EXPECT_EQ(r.code, 1) << r.text;
  EXPECT_NE(r.text.find("0 completed, 0 diverged, 6 failed"), std::string::npos) << r.text;
  for (const auto& d : store::list_run_dirs(out)) {
    auto run_dir = store::RunDir::open(d);
    ASSERT_TRUE(run_dir.ok()) << run_dir.status().message();
    EXPECT_EQ(run_dir->manifest().status, store::RunStatus::kFailed);
    EXPECT_NE(run_dir->manifest().error.find("checkpoint"), std::string::npos) << run_dir->manifest().error;
  }
  r = run("study run " + file + " --out " + out);
  EXPECT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("6 completed, 0 diverged, 0 failed"), std::string::npos) << r.text;
}

TEST(StudyCli, PlanListsRunsStatesAndCosts) {
  testing::TempDir dir;
  const std::string file = study_file(dir, "[configs.gpu]\ndevice = \"cuda\"\n");
  const std::string out = dir.file("out");
  Output plan = run("study plan " + file + " --out " + out + " --no-measure");
  ASSERT_EQ(plan.code, 0) << plan.text;
  EXPECT_NE(plan.text.find("study t: 9 runs into " + out), std::string::npos) << plan.text;
  EXPECT_NE(plan.text.find("unknown: no finished run of its config"), std::string::npos) << plan.text;
  ASSERT_EQ(run("study run " + file + " --out " + out + " --gpus none").code, 0);
  plan = run("study plan " + file + " --out " + out + " --no-measure");
  EXPECT_NE(plan.text.find("completed"), std::string::npos) << plan.text;
  // The CUDA runs: skipped on a host without CUDA, still to run on one with it (--gpus none left them).
  EXPECT_TRUE(plan.text.find("skipped") != std::string::npos || plan.text.find(" new ") != std::string::npos)
      << plan.text;
}

TEST(StudyCli, BadInputsAreOneLineErrors) {
  testing::TempDir dir;
  testing::expect_error("study run " + dir.file("none.toml"),
                        dir.file("none.toml") + ": cannot open for reading: No such file or directory");
  std::string bad = dir.write("bad.toml", "seeds = [1]\n[base]\nsteps = 0\n");
  testing::expect_error("study run " + bad + " --out " + dir.file("o"), bad + ":3: steps must be >= 1, got 0");
  EXPECT_FALSE(fs::exists(dir.file("o"))) << "nothing written for a study that does not load";
  testing::expect_error("study status " + dir.path(), dir.file("study.toml") + ": cannot open for reading: No such file or directory");
  std::string ok = study_file(dir);
  testing::expect_error("study exec " + ok + " --out " + dir.file("o") + " --task 6", "--task: " + ok + " has tasks 0..5, got 6");
  Output usage = run("study run " + ok + " --per-gpu 0");
  EXPECT_EQ(usage.code, 2) << usage.text;
  Output gpus = run("study run " + ok + " --out " + dir.file("o") + " --gpus 99");
  EXPECT_EQ(gpus.code, 1);
  EXPECT_EQ(gpus.text.rfind("saddlescope: --gpus: '99' is not a GPU of this host (it has ", 0), 0u) << gpus.text;
}

}  // namespace
}  // namespace saddlescope

namespace saddlescope {
namespace {

// Runs sharing a GPU (several per GPU, through MPS where the host has it) give the bits each gives
// alone: concurrency changes when kernels run, never what they compute. Needs a CUDA GPU.
TEST(StudyCli, GpuRunsSharingAGpuGiveTheBitsOfEachRunAlone) {
  testing::TempDir dir;
  const std::string file = dir.write(
      "g.toml", "name = \"g\"\nseeds = { from = 1, to = 4 }\n[base]\ndata = \"npy:" + testing::pixels(dir) +
                    "\"\ndevice = \"cuda\"\nthreads = 1\ndeterministic = \"strict\"\nhidden = [8, 4]\nbatch_size = 4\n"
                    "steps = 300\nlog_every = 10\nsnapshot_every = 100\n");
  Output plan = run("study plan " + file + " --out " + dir.file("probe") + " --no-measure");
  if (plan.text.find("no CUDA on this host") != std::string::npos) GTEST_SKIP() << "no CUDA GPU on this host";
  Output alone = run("study run " + file + " --out " + dir.file("alone") + " --per-gpu 1");
  ASSERT_EQ(alone.code, 0) << alone.text;
  Output shared = run("study run " + file + " --out " + dir.file("shared") + " --per-gpu 4");
  ASSERT_EQ(shared.code, 0) << shared.text;
  ASSERT_EQ(run_ids(dir.file("alone")), run_ids(dir.file("shared")));
  for (const auto& id : run_ids(dir.file("alone"))) {
    SCOPED_TRACE(id);
    testing::expect_same_run(dir.file("alone") + "/runs/" + id, dir.file("shared") + "/runs/" + id);
    auto m = store::RunDir::open(dir.file("shared") + "/runs/" + id)->manifest();
    const auto& gpu = m.extra["study"]["gpu"];
    EXPECT_EQ(gpu["runs_per_gpu"], 4);
    std::printf("%s: shared the GPU by %s\n", id.c_str(), gpu["sharing"].get<std::string>().c_str());
  }
}

}  // namespace
}  // namespace saddlescope
