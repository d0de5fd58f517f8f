// Helpers of the end-to-end tests that start, kill and compare runs: a small .npy dataset, processes
// started in the background, and "the same run" — identical rows (wall-clock columns aside) and
// identical snapshots.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "temp_dir.h"

extern char** environ;

namespace saddlescope::testing {

// 128 examples of 12 uint8 pixels with structure to learn.
inline std::string pixels(const TempDir& dir) {
  std::vector<uint8_t> x(128 * 12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 37 + (i / 12) * 11) % 251);
  std::string path = dir.file("x.npy");
  EXPECT_TRUE(store::write_npy(path, store::Dtype::kUInt8, {128, 12}, x.data()).ok());
  return path;
}

// `file`'s lines, each cut before its column `drop` (0: whole lines): wall-clock columns left out.
inline std::vector<std::string> lines(const std::string& file, const std::string& drop = "") {
  std::ifstream in(file);
  std::vector<std::string> out;
  int cut = -1;
  for (std::string l; std::getline(in, l);) {
    if (cut < 0 && !drop.empty()) {
      cut = 0;
      for (size_t p = 0; p < l.size() && l.compare(p, drop.size(), drop) != 0; ++p) cut += l[p] == ',';
    }
    if (cut > 0) {
      size_t at = 0;
      for (int c = 0; c < cut && at != std::string::npos; ++c) at = l.find(',', at + 1);
      l = l.substr(0, at);
    }
    out.push_back(l);
  }
  return out;
}

// The two runs wrote the same rows (wall-clock columns aside) and end at the same parameters.
inline void expect_same_run(const std::string& a, const std::string& b) {
  EXPECT_EQ(lines(a + "/metrics.csv", "wall_s"), lines(b + "/metrics.csv", "wall_s"));
  EXPECT_EQ(lines(a + "/curvature.csv", "probe_s"), lines(b + "/curvature.csv", "probe_s"));
  for (const char* f : {"/curvature_eigen.csv", "/symmetry.csv", "/ops.csv"}) EXPECT_EQ(lines(a + f), lines(b + f)) << f;
  auto ra = store::RunDir::open(a), rb = store::RunDir::open(b);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->snapshot_steps(), rb->snapshot_steps());
  for (int64_t step : ra->snapshot_steps()) {
    auto sa = ra->snapshot(step), sb = rb->snapshot(step);
    ASSERT_TRUE(sa.ok() && sb.ok());
    for (const auto& [name, arr] : *sa) EXPECT_EQ(arr.bytes, sb->at(name).bytes) << name << " at step " << step;
  }
  EXPECT_EQ(rb->manifest().status, store::RunStatus::kCompleted);
  EXPECT_EQ(ra->manifest().final_loss, rb->manifest().final_loss);
}

// Starts the binary with `args` (and "NAME=VALUE" in env), output to `log`. Returns its pid.
inline pid_t spawn(const std::string& args, const std::string& log, const std::vector<std::string>& env = {}) {
  std::string cmd = "exec " + std::string(SADDLESCOPE_BIN) + " " + args + " > " + log + " 2>&1";
  std::vector<std::string> envs(env);
  for (char** e = environ; *e; ++e) envs.push_back(*e);
  std::vector<char*> envp;
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), envp.data()), 0);
  return pid;
}

// Waits for `pid`; returns its exit status, or 128 + the signal that ended it.
inline int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace saddlescope::testing
