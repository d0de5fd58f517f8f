// Many writers of one catalogue at once (processes and threads), and what an upsert costs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <thread>

#include "run_fixture.h"
#include "saddlescope/store/catalog.h"
#include "sql.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::store {
namespace {

using testing::add_run;
using testing::make_manifest;
using testing::query;
using testing::query_one;

std::string run_name(int i) { return "run-" + std::to_string(i); }

// Rewrites run i's metrics.csv with `rows` rows (the manifest already lists it) and upserts it.
Status rewrite_and_upsert(const std::string& study, int i, int64_t rows) {
  std::string dir = study + "/runs/" + run_name(i);
  auto w = TableWriter<MetricsRow>::create(dir, kMetrics);
  if (!w) return w.status();
  for (const auto& r : testing::metrics_rows(rows)) w->append(r);
  SADDLESCOPE_RETURN_IF_ERROR(w->flush());
  return upsert_run(study, dir);
}

// Forks `n` children that wait on a common start signal, run `child(k)` and exit 0 on success (1 with
// the message on stderr otherwise). Returns the children's exit statuses.
template <class F>
std::vector<int> fork_all(int n, F child) {
  int start[2];
  EXPECT_EQ(pipe(start), 0);
  std::vector<pid_t> pids;
  for (int k = 0; k < n; ++k) {
    pid_t pid = fork();
    if (pid == 0) {
      close(start[1]);
      char c;
      (void)!read(start[0], &c, 1);  // returns when the parent closes its end: all start together
      Status st = child(k);
      if (!st.ok()) std::fprintf(stderr, "child %d: %s\n", k, st.message().c_str());
      _exit(st.ok() ? 0 : 1);
    }
    pids.push_back(pid);
  }
  close(start[0]);
  close(start[1]);
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return codes;
}

TEST(CatalogConcurrency, ProcessesUpsertingAndRebuildingLoseNoRows) {
  testing::TempDir study;
  constexpr int kRuns = 12;
  for (int i = 0; i < kRuns; ++i) add_run(study.path(), make_manifest(run_name(i), RunStatus::kCompleted, i), 10);
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  // Children 0..11 each rewrite their run three times, upserting after each; child 12 rebuilds the
  // whole catalogue three times meanwhile. Every run must end with its last version's rows: a rebuild
  // that read a run before its upsert and was renamed into place after it would lose them.
  auto codes = fork_all(kRuns + 1, [&](int k) -> Status {
    for (int round = 1; round <= 3; ++round) {
      if (k == kRuns) {
        auto n = rebuild_catalog(study.path());
        if (!n) return n.status();
      } else {
        SADDLESCOPE_RETURN_IF_ERROR(rewrite_and_upsert(study.path(), k, 100 * round + k));
      }
    }
    return Status::Ok();
  });
  EXPECT_EQ(codes, std::vector<int>(kRuns + 1, 0));
  std::string db = study.file("catalog.sqlite");
  EXPECT_EQ(query_one(db, "PRAGMA integrity_check"), "ok");
  for (int i = 0; i < kRuns; ++i)
    EXPECT_EQ(query_one(db, "SELECT count(*) FROM metrics WHERE run_id = '" + run_name(i) + "'"),
              std::to_string(300 + i)) << run_name(i);
  EXPECT_EQ(query_one(db, "SELECT count(*) FROM runs"), std::to_string(kRuns));
  auto drift = catalog_drift(study.path());
  ASSERT_TRUE(drift.ok());
  EXPECT_TRUE(drift->runs.empty());
}

TEST(CatalogConcurrency, FirstUpsertsIntoNoCatalogueRaceToBuildIt) {
  testing::TempDir study;
  constexpr int kRuns = 8;
  for (int i = 0; i < kRuns; ++i) add_run(study.path(), make_manifest(run_name(i), RunStatus::kCompleted, i), 10);
  auto codes = fork_all(kRuns, [&](int k) { return rewrite_and_upsert(study.path(), k, 50 + k); });
  EXPECT_EQ(codes, std::vector<int>(kRuns, 0));
  std::string db = study.file("catalog.sqlite");
  for (int i = 0; i < kRuns; ++i)
    EXPECT_EQ(query_one(db, "SELECT count(*) FROM metrics WHERE run_id = '" + run_name(i) + "'"),
              std::to_string(50 + i));
}

TEST(CatalogConcurrency, ThreadsUpsertingDifferentRuns) {
  testing::TempDir study;
  constexpr int kRuns = 6;
  for (int i = 0; i < kRuns; ++i) add_run(study.path(), make_manifest(run_name(i), RunStatus::kCompleted, i), 10);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kRuns);
  for (int i = 0; i < kRuns; ++i)
    threads.emplace_back([&, i] {
      for (int round = 1; round <= 4; ++round) {
        Status st = rewrite_and_upsert(study.path(), i, 20 * round + i);
        if (!st.ok()) errors[i] = st.message();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors, std::vector<std::string>(kRuns));
  std::string db = study.file("catalog.sqlite");
  for (int i = 0; i < kRuns; ++i)
    EXPECT_EQ(query_one(db, "SELECT count(*) FROM metrics WHERE run_id = '" + run_name(i) + "'"),
              std::to_string(80 + i));
}

double seconds_of(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The number docs/catalog.md quotes: an upsert at the end of a run costs milliseconds, whatever the
// size of the study, against a run of seconds to hours.
TEST(CatalogConcurrency, UpsertIsCheapAndIndependentOfTheStudySize) {
  testing::TempDir study;
  constexpr int kOthers = 50;
  for (int i = 0; i < kOthers; ++i)
    add_run(study.path(), make_manifest(run_name(i), RunStatus::kCompleted, i), 2000, 100);
  std::string dir = add_run(study.path(), make_manifest("measured", RunStatus::kCompleted), 2000, 100);
  double rebuild_s = seconds_of([&] { ASSERT_TRUE(rebuild_catalog(study.path()).ok()); });
  std::vector<double> upsert_s;
  for (int k = 0; k < 5; ++k)
    upsert_s.push_back(seconds_of([&] { ASSERT_TRUE(upsert_run(study.path(), dir).ok()); }));
  std::sort(upsert_s.begin(), upsert_s.end());
  std::printf("[ measure  ] upsert of one run (2000 metrics rows, 20 curvature rows) into a catalogue of %d "
              "such runs: median %.1f ms (min %.1f, max %.1f); rebuild of all %d: %.0f ms\n",
              kOthers + 1, upsert_s[2] * 1e3, upsert_s[0] * 1e3, upsert_s[4] * 1e3, kOthers + 1, rebuild_s * 1e3);
  EXPECT_EQ(query_one(study.file("catalog.sqlite"), "SELECT count(*) FROM metrics"),
            std::to_string(2000 * (kOthers + 1)));
  EXPECT_LT(upsert_s[2], 0.5) << "an upsert should take milliseconds";
  EXPECT_LT(upsert_s[2], rebuild_s / 5) << "an upsert should not grow with the study";
}

}  // namespace
}  // namespace saddlescope::store
