// Packing runs onto a host: disjoint cores as wide as each run's threads, GPU slots spread over the
// GPUs, and the estimate of a whole study's wall time from the same packing.
#include <gtest/gtest.h>

#include "../store/run_fixture.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/study/estimate.h"
#include "saddlescope/study/schedule.h"
#include "temp_dir.h"

namespace saddlescope::study {
namespace {

TEST(Slots, CpuRunsGetDisjointCoresAsWideAsTheirThreads) {
  Slots s(HostSlots{{4, 5, 6, 7}, {}, 1, 0});
  auto a = s.take({2, false, -1});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->cores, (std::vector<int>{4, 5}));  // the cores' own numbers
  auto b = s.take({1, false, -1});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->cores, (std::vector<int>{6}));
  EXPECT_FALSE(s.take({2, false, -1})) << "one core is left";
  EXPECT_TRUE(s.take({1, false, -1}));
  s.give_back(*a);
  auto c = s.take({2, false, -1});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cores, (std::vector<int>{4, 5}));
  // A run wider than the host runs alone on every core.
  Slots one(HostSlots{{0, 1}, {}, 1, 0});
  auto wide = one.take({16, false, -1});
  ASSERT_TRUE(wide);
  EXPECT_EQ(wide->cores.size(), 2u);
}

TEST(Slots, GpuRunsSpreadOverGpusBeforeSharingOne) {
  Slots s(HostSlots{{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1}, 2, 0});
  std::vector<int> gpus;
  std::vector<Grant> grants;
  for (int i = 0; i < 4; ++i) {
    auto g = s.take({1, true, -1});
    ASSERT_TRUE(g);
    EXPECT_EQ(g->cores.size(), 1u) << "a GPU run counts one core for its host thread";
    gpus.push_back(g->gpu);
    grants.push_back(*g);
  }
  EXPECT_EQ(gpus, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_FALSE(s.take({1, true, -1})) << "2 runs per GPU";
  EXPECT_TRUE(s.take({4, false, -1})) << "CPU runs use the cores left";
  s.give_back(grants[1]);
  auto named = s.take({1, true, 1});
  ASSERT_TRUE(named);
  EXPECT_EQ(named->gpu, 1);
}

TEST(Slots, WhatCannotRunHereAndTheJobsCap) {
  Slots cpu_only(HostSlots{{0, 1}, {}, 1, 0});
  EXPECT_FALSE(cpu_only.possible({1, true, -1}));
  EXPECT_TRUE(cpu_only.possible({8, false, -1}));
  Slots two(HostSlots{{0, 1}, {0, 1}, 1, 0});
  EXPECT_FALSE(two.possible({1, true, 2})) << "no GPU 2";
  Slots capped(HostSlots{{0, 1, 2, 3}, {}, 1, 2});
  EXPECT_TRUE(capped.take({1, false, -1}));
  EXPECT_TRUE(capped.take({1, false, -1}));
  EXPECT_FALSE(capped.take({1, false, -1})) << "--jobs 2";
}

}  // namespace
}  // namespace saddlescope::study

namespace saddlescope::study {
namespace {

StudyRun cpu_run(int64_t threads) {
  StudyRun r;
  r.cfg.execution.threads = threads;
  return r;
}

TEST(Simulate, PacksRunsAsTheRunnerDoes) {
  Study s;
  s.runs = {cpu_run(1), cpu_run(1), cpu_run(2)};
  std::vector<Estimate> e = {{10, "a"}, {10, "b"}, {5, "c"}};
  // The 2-thread run first, alone on both cores (5 s), then the two 1-thread runs side by side (10 s).
  EXPECT_DOUBLE_EQ(simulate(s, e, HostSlots{{0, 1}, {}, 1, 0}), 15);
  EXPECT_DOUBLE_EQ(simulate(s, e, HostSlots{{0}, {}, 1, 0}), 25);
  // A run of unknown cost counts as the mean of the known ones; finished runs (no estimate) not at all.
  e = {{10, "a"}, {0, "unknown: x"}, {0, ""}};
  EXPECT_DOUBLE_EQ(simulate(s, e, HostSlots{{0}, {}, 1, 0}), 20);
}

}  // namespace
}  // namespace saddlescope::study

#include <filesystem>

#include "saddlescope/study/slurm.h"
#include "temp_dir.h"

namespace saddlescope::study {
namespace {

TEST(Slurm, ArraySpecsAndTaskStatesAsSacctAndSqueuePrintThem) {
  EXPECT_EQ(array_spec({0, 1, 2, 3, 7, 9, 10}), "0-3,7,9-10");
  EXPECT_EQ(array_spec({5}), "5");
  // sacct: ranges for tasks not yet started next to rows of single tasks (which win); states with a
  // suffix; squeue's trailing separator.
  auto s = parse_task_states("12_[0-3,7%2]|PENDING\n12_1|RUNNING\n12_2|CANCELLED by 0\n13_0|COMPLETED|\n"
                             "garbage\n14_[x]|PENDING\n");
  using Key = std::pair<std::string, int64_t>;
  EXPECT_EQ(s.at(Key("12", 0)), "PENDING");
  EXPECT_EQ(s.at(Key("12", 1)), "RUNNING");
  EXPECT_EQ(s.at(Key("12", 2)), "CANCELLED");
  EXPECT_EQ(s.at(Key("12", 7)), "PENDING");
  EXPECT_EQ(s.count(Key("12", 4)), 0u);
  EXPECT_EQ(s.at(Key("13", 0)), "COMPLETED");
  EXPECT_EQ(s.size(), 6u);
}

// A hand-edited job record whose jobs lack their id or tasks: those jobs are not asked about (a const
// operator[] of the missing key was undefined behaviour; an assertion in the sanitizer build).
TEST(Slurm, AJobRecordWhoseJobsLackAnIdAsksAboutNone) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.file("slurm"));
  dir.write("slurm/jobs.json", R"({"jobs": [{"group": "cpu-t1", "tasks": [0, 1]}, {"tasks": [2]}, 7, {}]})");
  std::string source = "unset";
  auto states = slurm_task_states(dir.path(), &source);
  ASSERT_TRUE(states.ok()) << states.status().message();
  EXPECT_TRUE(states->empty());
  EXPECT_EQ(source, "unset");  // neither sacct nor squeue was run
}

// A finished run of a config prices a planned run of it: its step loop split into plain steps and probe
// evaluations, counted from the config's `probe` specs (the key `study plan` once misread as `probes`,
// leaving probe time out of every estimate).
TEST(Estimator, ProbeTimeComesFromTheFinishedRunsProbeSpecs) {
  testing::TempDir dir;
  StudyRun run;
  run.cfg.steps = 100;
  run.cfg.probes = {"curvature:every=10"};  // steps 0, 10, ..., 90: 10 evaluations
  store::RunManifest m = testing::make_manifest("done", store::RunStatus::kCompleted, 1, run.cfg.config_key());
  m.config["probe"] = run.cfg.probes;
  m.steps_completed = 100;
  m.timings.train_s = 20;  // 10 s of plain steps and 10 s of probes
  m.timings.probe_s = 10;
  m.timings.eval_s = 1;
  auto d = store::create_run_dir(dir.path(), "done", false);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_TRUE(store::write_manifest(*d, m).ok());
  Estimator estimator(dir.path(), "", "");
  Estimate e = estimator.estimate(run, false);
  EXPECT_EQ(e.source, "1 finished run of its config");
  // 0.1 s a plain step, 1 s a probe evaluation, 1 s of evaluation; without the probe specs the 10 s of
  // probes would be missing.
  EXPECT_NEAR(e.seconds, 0.1 * 100 + 1.0 * 10 + 1, 1e-9);
}

}  // namespace
}  // namespace saddlescope::study
