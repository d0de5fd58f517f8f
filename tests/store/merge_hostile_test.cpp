// store merge against inputs it must refuse — every refusal one line naming the file, with nothing
// written — and against failures and kills while it copies.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <sqlite3.h>

#include "merge_fixture.h"
#include "saddlescope/store/check.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/merge.h"
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

// An input study with one good run "good" and whatever a test adds; an output that exists, with a run.
class MergeRefuses : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = add_run(in_, run_on("good", "b"));
    add_run(out_, run_on("mine", "a"));
    ASSERT_TRUE(rebuild_catalog(out_).ok());
    before_ = tree_state(out_);
  }

  // Expects merging the input into the output, and into a new directory, to fail with `message`,
  // leaving the output as it was and creating nothing.
  void expect_refused(const std::string& message, const MergeOptions& options = {}) {
    auto r = merge_studies(out_, {in_}, options);
    ASSERT_FALSE(r.ok()) << "merged, expected: " << message;
    EXPECT_EQ(r.status().message(), message);
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
    EXPECT_EQ(tree_state(out_), before_);
    std::string fresh = tmp_.file("fresh");
    EXPECT_FALSE(merge_studies(fresh, {in_}, options).ok());
    EXPECT_FALSE(fs::exists(fresh));
  }

  std::string run_dir(const std::string& id) { return in_ + "/runs/" + id; }

  testing::TempDir tmp_;
  std::string in_ = tmp_.file("in"), out_ = tmp_.file("out"), good_;
  std::map<std::string, std::string> before_;
};

TEST_F(MergeRefuses, ASymbolicLinkInsideARun) {
  fs::remove(good_ + "/metrics.csv");
  fs::create_symlink("/etc/passwd", good_ + "/metrics.csv");
  expect_refused(good_ + "/metrics.csv: a symbolic link (merge neither copies nor follows links)");
}

TEST_F(MergeRefuses, ASymbolicLinkToADirectory) {
  fs::create_directories(tmp_.file("elsewhere/step-00000003"));
  fs::create_directory_symlink(tmp_.file("elsewhere/step-00000003"), good_ + "/snapshots/step-00000003");
  expect_refused(good_ + "/snapshots/step-00000003: a symbolic link (merge neither copies nor follows links)");
}

TEST_F(MergeRefuses, ARunThatIsASymbolicLink) {
  std::string other = add_run(tmp_.file("other"), run_on("linked", "b"));
  fs::create_directory_symlink(other, run_dir("linked"));
  expect_refused(run_dir("linked") + ": a symbolic link (merge neither copies nor follows links)");
}

TEST_F(MergeRefuses, RunsThatIsASymbolicLink) {
  testing::TempDir elsewhere;
  add_run(elsewhere.path(), run_on("r", "b"));
  std::string linked = tmp_.file("linked");
  fs::create_directories(linked);
  fs::create_directory_symlink(elsewhere.path() + "/runs", linked + "/runs");
  auto r = merge_studies(out_, {linked});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), linked + "/runs: a symbolic link (merge neither copies nor follows links)");
}

TEST_F(MergeRefuses, AFifoOrADevice) {
  ASSERT_EQ(mkfifo((good_ + "/ops.csv").c_str(), 0644), 0);
  expect_refused(good_ + "/ops.csv: a FIFO, not a regular file");
}

TEST_F(MergeRefuses, ARunLockThatIsNotAFile) {
  ASSERT_EQ(mkfifo((in_ + "/runs/.good.lock").c_str(), 0644), 0);
  expect_refused(in_ + "/runs/.good.lock: a FIFO, not a regular file");
}

TEST_F(MergeRefuses, ADirectoryNameThatIsNotARunId) {
  add_run(tmp_.file("other"), run_on("odd", "b"));
  fs::rename(tmp_.file("other/runs/odd"), run_dir("odd name\n\x1b[31m"));
  expect_refused(run_dir("odd name\\x0a\\x1b[31m") +
                 ": not a run directory: its name is not a run id (1-128 characters of [A-Za-z0-9._-], not . or ..)");
}

TEST_F(MergeRefuses, AManifestWhoseRunIdTriesPathTraversal) {
  RunManifest m = run_on("../../etc", "b");
  ASSERT_TRUE(write_manifest(good_, m).ok());
  expect_refused(good_ + "/manifest.json: run_id is '../../etc', not the directory's name");
}

TEST_F(MergeRefuses, AForeignManifest) {
  auto j = RunDir::open(good_)->manifest().to_json();
  j["format_version"] = 3;
  ASSERT_TRUE(write_file_atomic(good_ + "/manifest.json", j.dump()).ok());
  expect_refused(good_ + "/manifest.json: format_version is 3, this saddlescope reads only 2 (use the saddlescope that wrote it)");
  j["format_version"] = 2;
  j["format"] = "something.else";
  ASSERT_TRUE(write_file_atomic(good_ + "/manifest.json", j.dump()).ok());
  expect_refused(good_ + "/manifest.json: not a saddlescope run manifest (format is not 'saddlescope.run')");
}

TEST_F(MergeRefuses, AMalformedOrMissingManifest) {
  ASSERT_TRUE(write_file_atomic(good_ + "/manifest.json", "{\"format\": ").ok());
  expect_refused(good_ + "/manifest.json: not valid JSON");
  fs::remove(good_ + "/manifest.json");
  expect_refused(good_ + ": not a run directory (no manifest.json)");
}

TEST_F(MergeRefuses, AFileOfAnotherSchemaVersion) {
  RunManifest m = RunDir::open(good_)->manifest();
  m.files["metrics.csv"] = 9;
  ASSERT_TRUE(write_manifest(good_, m).ok());
  expect_refused(good_ + "/metrics.csv: schema version 9, this saddlescope reads version 1");
  m.files["metrics.csv"] = 1;
  m.files["weights.bin"] = 1;
  ASSERT_TRUE(write_manifest(good_, m).ok());
  expect_refused(good_ + "/manifest.json: files lists 'weights.bin', not a file this saddlescope knows (written by a newer one?)");
}

TEST_F(MergeRefuses, AMalformedTableOrArray) {
  std::ofstream(good_ + "/metrics.csv", std::ios::app) << "10,x,0.1,0.001,0.1\n";
  expect_refused(good_ + "/metrics.csv:12: column loss must be a number, got 'x'");
  testing::rewrite_metrics(good_, testing::metrics_rows(10));
  std::ofstream(good_ + "/snapshots/step-00000010/w.npy", std::ios::trunc) << "not an array";
  expect_refused(good_ + "/snapshots/step-00000010/w.npy: not a .npy file (bad magic)");
}

TEST_F(MergeRefuses, FilesOutsideTheLayout) {
  std::ofstream(good_ + "/notes.txt") << "hello";
  expect_refused(good_ + "/notes.txt: not part of a run directory (a run holds manifest.json, its tables, "
                         "snapshots/step-N/*.npy, checkpoint/step-N/ and curvature/*.npy)");
  fs::remove(good_ + "/notes.txt");
  std::ofstream(good_ + "/symmetry.csv") << "step\n";
  expect_refused(good_ + "/symmetry.csv: not listed in manifest.json's files");
}

TEST_F(MergeRefuses, HugeFiles) {
  MergeOptions small;
  small.max_file_bytes = 100;
  auto size = fs::file_size(good_ + "/metrics.csv");
  expect_refused(good_ + "/metrics.csv: " + std::to_string(size) + " bytes, more than the 100 accepted (--max-file-mib)",
                 small);
  // Sparse files: their size is what a reader would have to read.
  ASSERT_EQ(truncate((good_ + "/snapshots/step-00000010/w.npy").c_str(), (int64_t{4} << 30) + 1), 0);
  expect_refused(good_ + "/snapshots/step-00000010/w.npy: 4294967297 bytes, more than the 4294967296 accepted (--max-file-mib)");
  ASSERT_EQ(truncate((good_ + "/manifest.json").c_str(), int64_t{17} << 20), 0);
  expect_refused(good_ + "/manifest.json: 17825792 bytes, more than the 16777216 accepted (a manifest)");
}

TEST_F(MergeRefuses, ARunALiveProcessWrites) {
  auto lock = RunLock::acquire(in_, "live");
  ASSERT_TRUE(lock.ok());
  RunManifest m = make_manifest("live", RunStatus::kRunning);
  m.process = ProcessInfo{getpid(), this_host(), unix_now()};
  std::string dir = add_run(in_, m);
  auto r = merge_studies(out_, {in_});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind(dir + ": being written by a live process (pid " + std::to_string(getpid()) + " on ", 0), 0)
      << r.status().message();
  EXPECT_NE(r.status().message().find("); merge it once it has ended"), std::string::npos);
  EXPECT_EQ(tree_state(out_), before_);
}

TEST_F(MergeRefuses, MergingAStudyIntoItself) {
  auto r = merge_studies(in_, {in_});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), in_ + ": is " + in_ + " (or holds it, or is held in it): a study is not merged into itself");
  EXPECT_FALSE(merge_studies(in_ + "/", {in_}).ok());
  EXPECT_FALSE(merge_studies(in_ + "/runs/sub", {in_}).ok());
  fs::create_symlink(in_, tmp_.file("alias"));
  EXPECT_FALSE(merge_studies(tmp_.file("alias"), {in_}).ok());
  EXPECT_EQ(run_names(in_), (std::vector<std::string>{"good"}));
}

TEST_F(MergeRefuses, ACatalogueOfANewerSaddlescopeInTheOutput) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((out_ + "/catalog.sqlite").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '5' WHERE key = 'version'", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  before_ = tree_state(out_);
  auto r = merge_studies(out_, {in_});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), out_ + "/catalog.sqlite: catalogue schema version 5, this saddlescope reads version 4 "
                                         "(written by a newer saddlescope: use that one; delete it and run `saddlescope "
                                         "store index` to rebuild it with this saddlescope)");
  EXPECT_EQ(tree_state(out_), before_);
}

TEST_F(MergeRefuses, NotAnOlderOrUnreadableCatalogue) {
  ASSERT_TRUE(write_file_atomic(out_ + "/catalog.sqlite", "not a database").ok());
  ASSERT_TRUE(merge_studies(out_, {in_}).ok());
  EXPECT_EQ(run_names(out_), (std::vector<std::string>{"good", "mine"}));
  EXPECT_EQ(testing::query_one(out_ + "/catalog.sqlite", "SELECT count(*) FROM runs"), "2");
}

TEST(MergeStale, AStaleRunIsMergedAsInterruptedAndItsSourceLeftAsItIs) {
  testing::TempDir tmp;
  std::string in = tmp.file("in"), out = tmp.file("out");
  RunManifest m = make_manifest("gone", RunStatus::kRunning);
  m.files[kSnapshotsEntry] = kSnapshotsVersion;
  m.process = ProcessInfo{999999, "elsewhere", 1.7e9};  // another host's, silent since 2023-11-14
  std::string dir = add_run(in, m);
  std::ofstream(dir + "/.final-write-reserve") << std::string(100, '\0');
  fs::create_directories(dir + "/snapshots/.step-00000008.tmp");
  std::ofstream(dir + "/metrics.csv.resume") << "step\n";
  auto source = tree_state(in);
  auto r = merge_studies(out, {in});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].added, 1);
  auto copy = RunDir::open(out + "/runs/gone");
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(copy->manifest().status, RunStatus::kInterrupted);
  EXPECT_EQ(copy->manifest().stopped_by, "stale");
  EXPECT_FALSE(copy->manifest().process.has_value());
  EXPECT_EQ(copy->manifest().timings.finished, "2023-11-14T22:13:20Z");  // its last heartbeat
  EXPECT_FALSE(fs::exists(out + "/runs/gone/.final-write-reserve"));     // writers' leftovers stay behind
  EXPECT_FALSE(fs::exists(out + "/runs/gone/snapshots/.step-00000008.tmp"));
  EXPECT_FALSE(fs::exists(out + "/runs/gone/metrics.csv.resume"));
  EXPECT_EQ(tree_state(in), source);
  auto check = check_study(out);
  EXPECT_TRUE(check.ok() && check->clean());
  // The source, still stale, is the same run as its merged copy.
  r = merge_studies(out, {in});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].deduplicated, 1);
}

// The copy fails (a full disk, injected) or the process is killed at each write of a merge: the
// output has all of the new runs or none, never part of one, and merging again completes it.
class MergeInterrupted : public ::testing::Test {
 protected:
  void SetUp() override {
    add_run(in_, run_on("a", "b", 1), 10, 2);
    add_run(in_, run_on("b", "b", 2));
    add_run(out_, run_on("mine", "a"));
    ASSERT_TRUE(rebuild_catalog(out_).ok());
  }
  void TearDown() override {
    for (const char* hook : {"SADDLESCOPE_FAIL_WRITE", "SADDLESCOPE_FAIL_FSYNC", "SADDLESCOPE_FAIL_RENAME"}) unsetenv(hook);
  }

  // Each run in out/runs reads and has every file of its source.
  void expect_complete_runs() {
    for (const auto& id : run_names(out_)) {
      auto run = RunDir::open(out_ + "/runs/" + id);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_TRUE(run->metrics().ok());
      if (id != "mine") EXPECT_TRUE(run->snapshot(10).ok()) << id;
    }
  }

  testing::TempDir tmp_;
  std::string in_ = tmp_.file("in"), out_ = tmp_.file("out");
};

TEST_F(MergeInterrupted, AFailedWriteFlushOrRenameLeavesTheOutputAsItWas) {
  auto before = tree_state(out_);
  // A failed write, flush (a staged file) or rename (the first run into place): nothing merged.
  const std::vector<std::pair<const char*, const char*>> faults = {
      {"SADDLESCOPE_FAIL_WRITE", "/runs/.merge.tmp/a/metrics.csv"}, {"SADDLESCOPE_FAIL_WRITE", "/runs/.merge.tmp/b/manifest.json"},
      {"SADDLESCOPE_FAIL_WRITE", "/runs/a"}, {"SADDLESCOPE_FAIL_FSYNC", "/runs/.merge.tmp/a/metrics.csv"},
      {"SADDLESCOPE_FAIL_RENAME", "/runs/a"}};
  for (const auto& [hook, at] : faults) {
    setenv(hook, at, 1);
    auto r = merge_studies(out_, {in_});
    unsetenv(hook);
    ASSERT_FALSE(r.ok()) << hook << "=" << at;
    EXPECT_NE(r.status().message().find(std::string("injected by ") + hook), std::string::npos) << r.status().message();
    auto after = tree_state(out_);
    for (const char* lock : {"/runs/.a.lock", "/runs/.b.lock"}) after.erase(out_ + lock);  // run locks stay
    EXPECT_EQ(after, before) << hook << "=" << at;
  }
}

TEST_F(MergeInterrupted, AKillAtAnyWriteLeavesOnlyCompleteRuns) {
  std::set<std::vector<std::string>> seen;  // the runs there were after each kill
  for (int n = 1;; ++n) {
    testing::TempDir fresh;
    std::string out = fresh.file("out");
    pid_t pid = fork();
    if (pid == 0) {
      setenv("SADDLESCOPE_KILL_AT_WRITE", (out + "/runs/:" + std::to_string(n)).c_str(), 1);
      _exit(merge_studies(out, {in_}).ok() ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    out_ = out;
    expect_complete_runs();
    seen.insert(run_names(out));
    auto r = merge_studies(out, {in_});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(run_names(out), (std::vector<std::string>{"a", "b"}));
    auto check = check_study(out);
    EXPECT_TRUE(check.ok() && check->clean()) << "killed at write " << n << ": "
                                              << (check->problems.empty() ? "" : describe(check->problems[0]));
    if (WIFEXITED(status)) {
      EXPECT_EQ(WEXITSTATUS(status), 0);
      EXPECT_EQ(n, 12);  // 11 writes: 2 directories, 5 files, 2 manifests, 2 renames
      break;             // no write left to kill at
    }
    EXPECT_TRUE(WIFSIGNALED(status));
  }
  // Killed before the first rename, between the two, after both.
  EXPECT_EQ(seen, (std::set<std::vector<std::string>>{{}, {"a"}, {"a", "b"}}));
}

}  // namespace
}  // namespace saddlescope::store
