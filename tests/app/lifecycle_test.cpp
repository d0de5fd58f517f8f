// A run's life under crashes, signals, full disks and concurrent starts, through the real binary:
// killed anywhere and resumed it gives the bits of a run never stopped; a failed write ends it with a
// one-line error naming the file and never leaves it "running"; --force never removes a live run.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "command.h"
#include "run_helpers.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "temp_dir.h"

extern char** environ;

namespace fs = std::filesystem;

namespace saddlescope {
namespace {

using testing::Output;
using testing::run;
using testing::expect_same_run;
using testing::lines;
using testing::pixels;
using testing::read_all;
using testing::spawn;
using testing::wait_for;

// Every probe, snapshots and checkpoints: a run that writes at every write point of the store.
std::string train_args(const testing::TempDir& dir, const std::string& out, int steps = 60) {
  return "train --data npy:" + pixels(dir) + " --hidden 8,4 --batch-size 4 --threads 1 --seed 5 --steps " +
         std::to_string(steps) + " --log-every 10 --snapshot-every 20 --checkpoint-every 10 " +
         "--probe curvature:every=10,batch=16 --probe symmetry:every=10 --probe ops:every=25,k=2 --out " + out;
}

std::string only_run(const std::string& study) {
  for (const auto& e : fs::directory_iterator(study + "/runs"))
    if (e.is_directory()) return e.path().string();
  return "";
}

TEST(Lifecycle, KilledAnywhereAndResumedGivesTheBitsOfAnUninterruptedRun) {
  testing::TempDir dir;
  Output ref = run(train_args(dir, dir.file("ref")));
  ASSERT_EQ(ref.code, 0) << ref.text;
  std::string reference = only_run(dir.file("ref"));
  // Kill points: between steps (a metrics flush), halfway through a snapshot, halfway through a
  // checkpoint, and in the manifest write that records a checkpoint.
  for (const char* at : {"metrics.csv:4", "snapshots/.step-00000040.tmp/decoder", "checkpoint/.step-00000030.tmp/adam.v",
                         "manifest.json:4"}) {
    SCOPED_TRACE(at);
    std::string out = dir.file(std::string("k") + std::to_string(std::hash<std::string>()(at) % 100000));
    pid_t pid = spawn(train_args(dir, out), dir.file("kill.log"), {std::string("SADDLESCOPE_KILL_AT_WRITE=") + at});
    ASSERT_EQ(wait_for(pid), 128 + SIGKILL) << read_all(dir.file("kill.log"));
    std::string r = only_run(out);
    auto killed = store::RunDir::open(r);
    ASSERT_TRUE(killed.ok()) << killed.status().message();
    EXPECT_EQ(killed->manifest().status, store::RunStatus::kRunning);
    EXPECT_EQ(killed->state(), store::RunStatus::kStale) << "its process is gone";
    Output resumed = run("train --resume " + r);
    ASSERT_EQ(resumed.code, 0) << resumed.text;
    expect_same_run(reference, r);
    EXPECT_EQ(store::RunDir::open(r)->manifest().resumes, 1);
    for (const auto& e : fs::recursive_directory_iterator(r))
      EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path() << " left behind";
  }
}

// SGD with momentum keeps its buffers in the checkpoint, and the fault alias-target draws each batch a
// step early: killed and resumed, both give the bits of the run never stopped.
TEST(Lifecycle, SgdWithMomentumAndAliasTargetResumeBitForBit) {
  testing::TempDir dir;
  const std::string extra = " --optimizer sgd --momentum 0.9 --lr 0.05 --fault alias-target";
  Output ref = run(train_args(dir, dir.file("ref")) + extra);
  ASSERT_EQ(ref.code, 0) << ref.text;
  std::string reference = only_run(dir.file("ref"));
  EXPECT_NE(reference.find("-sgd-fault.alias-target-"), std::string::npos) << reference;
  for (const char* at : {"metrics.csv:4", "checkpoint/.step-00000030.tmp/sgd.buf"}) {
    SCOPED_TRACE(at);
    std::string out = dir.file(std::string("k") + std::to_string(std::hash<std::string>()(at) % 100000));
    pid_t pid = spawn(train_args(dir, out) + extra, dir.file("kill.log"), {std::string("SADDLESCOPE_KILL_AT_WRITE=") + at});
    ASSERT_EQ(wait_for(pid), 128 + SIGKILL) << read_all(dir.file("kill.log"));
    std::string r = only_run(out);
    Output resumed = run("train --resume " + r);
    ASSERT_EQ(resumed.code, 0) << resumed.text;
    expect_same_run(reference, r);
  }
}

TEST(Lifecycle, SigtermStopsAtAStepBoundaryAndTheRunResumes) {
  testing::TempDir dir;
  const int steps = 2000;
  Output ref = run(train_args(dir, dir.file("ref"), steps));
  ASSERT_EQ(ref.code, 0) << ref.text;
  std::string out = dir.file("stopped");
  pid_t pid = spawn(train_args(dir, out, steps), dir.file("term.log"));
  // Once some windows are written, ask it to stop.
  for (int i = 0; i < 2000; ++i) {
    std::string r = fs::exists(out + "/runs") ? only_run(out) : "";
    if (!r.empty() && lines(r + "/metrics.csv").size() > 300) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGTERM);
  int code = wait_for(pid);
  std::string log = read_all(dir.file("term.log"));
  ASSERT_EQ(code, 128 + SIGTERM) << log;
  EXPECT_NE(log.find("status   interrupted by SIGTERM after "), std::string::npos) << log;
  std::string r = only_run(out);
  auto m = store::read_manifest(r);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, store::RunStatus::kInterrupted);
  EXPECT_EQ(m->stopped_by, "SIGTERM");
  EXPECT_EQ(m->checkpoint_step, m->steps_completed) << "a checkpoint where it stopped";
  EXPECT_FALSE(m->process);
  EXPECT_EQ(lines(r + "/metrics.csv").size(), static_cast<size_t>(m->steps_completed + 1)) << "every step written";
  Output resumed = run("train --resume " + r + "/");  // a trailing '/' (shell completion) names the same run
  ASSERT_EQ(resumed.code, 0) << resumed.text;
  EXPECT_FALSE(fs::exists(out + "/runs/catalog.sqlite")) << "the study is two levels up, not one";
  expect_same_run(only_run(dir.file("ref")), r);
  testing::expect_error("train --resume " + r, r + ": the run has ended (completed); nothing to resume");
}

TEST(Lifecycle, AFailedWriteEndsTheRunWithTheFileNamedAndNeverRunning) {
  testing::TempDir dir;
  for (const char* at : {"metrics.csv", "curvature.csv", "curvature_eigen.csv", "symmetry.csv", "ops.csv",
                         "snapshots/", "checkpoint/", "manifest.json:2", "manifest.json"}) {
    SCOPED_TRACE(at);
    std::string out = dir.file(std::string("f") + std::to_string(std::hash<std::string>()(at) % 100000));
    pid_t pid = spawn(train_args(dir, out), dir.file("fail.log"), {std::string("SADDLESCOPE_FAIL_WRITE=") + at});
    EXPECT_EQ(wait_for(pid), 1);
    std::string log = read_all(dir.file("fail.log"));
    std::string file = std::string(at).substr(0, std::string(at).find(':'));
    EXPECT_NE(log.find("saddlescope: "), std::string::npos) << log;
    EXPECT_NE(log.find(file), std::string::npos) << log;
    EXPECT_NE(log.find("write failed: No space left on device (injected"), std::string::npos) << log;
    std::string r = only_run(out);
    auto run_dir = store::RunDir::open(r);
    if (std::string(at) == "manifest.json") {
      EXPECT_FALSE(run_dir.ok()) << "the very first manifest write failed: no manifest at all";
      continue;
    }
    ASSERT_TRUE(run_dir.ok()) << run_dir.status().message();
    EXPECT_NE(run_dir->state(), store::RunStatus::kRunning);
    if (std::string(at) != "manifest.json:2") {
      EXPECT_EQ(run_dir->manifest().status, store::RunStatus::kFailed);
      EXPECT_NE(run_dir->manifest().error.find(file), std::string::npos) << run_dir->manifest().error;
    }
  }
}

// A flush or rename that fails (EIO, EXDEV) where a file or directory is published — the manifest
// after the first write, a snapshot, a checkpoint — ends the run as a full disk does: the file named in
// one line, exit 1, a status that is not running, and no half-published file.
TEST(Lifecycle, AFailedFsyncOrRenameEndsTheRunLikeAFailedWrite) {
  testing::TempDir dir;
  for (const char* hook : {"SADDLESCOPE_FAIL_FSYNC", "SADDLESCOPE_FAIL_RENAME"})
    for (const char* at : {"manifest.json:2", "snapshots/", "checkpoint/"}) {
      SCOPED_TRACE(std::string(hook) + "=" + at);
      std::string out = dir.file(std::string("h") + std::to_string(std::hash<std::string>()(std::string(hook) + at) % 100000));
      pid_t pid = spawn(train_args(dir, out), dir.file("hook.log"), {std::string(hook) + "=" + at});
      EXPECT_EQ(wait_for(pid), 1);
      std::string log = read_all(dir.file("hook.log"));
      std::string file = std::string(at).substr(0, std::string(at).find(':'));
      EXPECT_NE(log.find("saddlescope: "), std::string::npos) << log;
      EXPECT_NE(log.find(file), std::string::npos) << log;
      EXPECT_NE(log.find(std::string("(injected by ") + hook + ")"), std::string::npos) << log;
      std::string r = only_run(out);
      auto run_dir = store::RunDir::open(r);
      ASSERT_TRUE(run_dir.ok()) << run_dir.status().message();
      EXPECT_NE(run_dir->state(), store::RunStatus::kRunning);
      for (const auto& e : fs::recursive_directory_iterator(r))
        EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path() << " left behind";
      if (std::string(at) != "manifest.json:2") {
        EXPECT_EQ(run_dir->manifest().status, store::RunStatus::kFailed);
        EXPECT_NE(run_dir->manifest().error.find(file), std::string::npos) << run_dir->manifest().error;
      }
    }
}

TEST(Lifecycle, ForceRefusesWhileALiveProcessWritesTheRun) {
  testing::TempDir dir;
  std::string out = dir.file("study");
  pid_t pid = spawn(train_args(dir, out, 100000), dir.file("live.log"));
  for (int i = 0; i < 2000 && !(fs::exists(out + "/runs") && !only_run(out).empty() &&
                                fs::exists(only_run(out) + "/metrics.csv"));
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  Output again = run(train_args(dir, out, 100000) + " --force");
  EXPECT_EQ(again.code, 1) << again.text;
  EXPECT_NE(again.text.find(": being written by a live process (pid " + std::to_string(pid) + ")"), std::string::npos)
      << again.text;
  EXPECT_TRUE(fs::exists(only_run(out) + "/metrics.csv")) << "the live run's directory is untouched";
  kill(pid, SIGINT);
  EXPECT_EQ(wait_for(pid), 128 + SIGINT);
}

}  // namespace
}  // namespace saddlescope
