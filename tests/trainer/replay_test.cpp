// Replay of one training step (trainer/replay.h): the op taps of a replayed step are the run's own,
// bit for bit; a replay under fault alias-target sees other weight gradients on the same parameters
// and batch; bad inputs are named and leave nothing behind.
#include "saddlescope/trainer/replay.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/schema.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/train.h"
#include "small_run.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

constexpr const char* kSpec = "ops:at=20,k=4,wgrad=true";

// A small autoencoder run with snapshots every 10 steps and op taps at step 20.
std::pair<RunConfig, std::string> tapped_run(const testing::TempDir& dir) {
  RunConfig cfg = testing::small_config(dir, testing::write_pixels(dir));
  cfg.steps = 30;
  cfg.snapshot_every = 10;
  cfg.probes = {probes::parse_probe_spec(kSpec)->resolved()};
  auto r = train(cfg, {true, nullptr});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return {cfg, r.ok() ? r->run_dir : ""};
}

std::vector<store::OpRow> ops_of(const std::string& dir) {
  auto rows = store::read_table<store::OpRow>(dir, store::kOps);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  return rows.ok() ? *rows : std::vector<store::OpRow>{};
}

TEST(Replay, ReplayedStepGivesTheRunsOwnOpTapsBitForBit) {
  testing::TempDir dir;
  auto [cfg, run] = tapped_run(dir);
  auto r = replay_step(cfg, run, 20, kSpec, dir.file("replay"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->ops_csv, dir.file("replay") + "/ops.csv");
  std::vector<store::OpRow> original, replayed = ops_of(dir.file("replay"));
  for (const auto& row : ops_of(run))
    if (row.step == 20) original.push_back(row);  // (the spec's default cadence taps step 0 too)
  ASSERT_EQ(replayed.size(), original.size());
  EXPECT_EQ(r->rows, static_cast<int64_t>(original.size()));
  int wgrad = 0;
  for (size_t i = 0; i < original.size(); ++i) {
    SCOPED_TRACE(original[i].op + " " + original[i].phase + " " + original[i].index);
    EXPECT_EQ(replayed[i].step, 20);
    EXPECT_EQ(replayed[i].op, original[i].op);
    EXPECT_EQ(replayed[i].index, original[i].index);
    EXPECT_EQ(replayed[i].observed, original[i].observed);  // bitwise: doubles compared with ==
    EXPECT_EQ(replayed[i].exact, original[i].exact);
    wgrad += original[i].phase == "wgrad";
  }
  EXPECT_GT(wgrad, 0);
}

// aten=true: a built-in model's step is tapped on every ATen op, named by its parameters as a module's
// are — the data gradient of its Linear layers (mm), which its named taps never sample, among them.
TEST(Replay, AtenTapsOnABuiltInModelSampleOpsItsNamedTapsDoNot) {
  testing::TempDir dir;
  auto [cfg, run] = tapped_run(dir);
  auto r = replay_step(cfg, run, 20, "ops:at=20,k=4,clamp=true,aten=true", dir.file("aten"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  int named_fwd = 0, dgrad = 0;
  for (const auto& row : ops_of(dir.file("aten"))) {
    named_fwd += row.op == "encoder.fc1:addmm" && row.phase == "fwd" && row.flag == "within";
    dgrad += row.phase == "dgrad" && row.kernel == "mm" && row.flag == "within";
  }
  EXPECT_EQ(named_fwd, 4);
  EXPECT_GT(dgrad, 0);
  for (const auto& row : ops_of(run))  // the named taps: the loss's own gradient is their only dgrad
    EXPECT_TRUE(row.phase != "dgrad" || row.op == "loss") << "the named taps sampled " << row.op;
}

TEST(Replay, AliasTargetGivesOtherWeightGradientsOnTheSameParametersAndBatch) {
  testing::TempDir dir;
  auto [cfg, run] = tapped_run(dir);
  RunConfig faulty = cfg;
  faulty.fault = "alias-target";
  auto a = replay_step(cfg, run, 20, kSpec, dir.file("none"));
  auto b = replay_step(faulty, run, 20, kSpec, dir.file("alias"));
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(a->loss, b->loss) << "the forward is the same";
  std::vector<store::OpRow> x = ops_of(dir.file("none")), y = ops_of(dir.file("alias"));
  ASSERT_EQ(x.size(), y.size());
  int wgrad = 0, nonzero = 0, differ = 0, dgrad = 0, dgrad_differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].op + x[i].phase + x[i].index, y[i].op + y[i].phase + y[i].index);
    if (x[i].phase == "wgrad") {
      ++wgrad;
      nonzero += x[i].observed != 0 || y[i].observed != 0;  // a dead ReLU unit's weights get 0 either way
      differ += x[i].observed != y[i].observed;
    } else if (x[i].phase == "dgrad") {  // the loss's own gradient, against the next batch's target: where
      ++dgrad;                          // that target's element differs, it is beyond the bound
      dgrad_differ += x[i].observed != y[i].observed;
      EXPECT_EQ(x[i].flag, "within");
      EXPECT_EQ(y[i].flag, x[i].observed != y[i].observed ? "beyond" : "within") << x[i].index;
    } else {
      EXPECT_EQ(x[i].observed, y[i].observed) << x[i].op << ": the forward ops are the same";
    }
  }
  EXPECT_GE(nonzero, wgrad / 2);
  EXPECT_EQ(differ, nonzero) << "every sampled weight gradient that is not 0 differs";
  EXPECT_GT(dgrad, 0);
  EXPECT_GT(dgrad_differ, 0);
}

TEST(Replay, BadInputsAreNamedAndLeaveNothingBehind) {
  testing::TempDir dir;
  auto [cfg, run] = tapped_run(dir);
  auto expect_error = [&](const RunConfig& c, const std::string& params, int64_t step, const std::string& spec,
                          const std::string& out, const std::string& message) {
    auto r = replay_step(c, params, step, spec, out);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), message);
    EXPECT_FALSE(fs::exists(out + "/ops.csv"));
    for (const auto& e : fs::directory_iterator(dir.path()))
      EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path() << " left behind";
  };
  std::string out = dir.file("out");
  expect_error(cfg, run, 15, "ops:at=15", out,
               "--params-from: " + run + ": no snapshot at step 15 (snapshots at steps: 0, 10, 20, 30)");
  expect_error(cfg, run, 20, "ops:at=10", out, "--ops: 'ops:at=10' is not due at step 20 (give at=20)");
  expect_error(cfg, run, 20, "curvature:at=20", out, "--ops: 'curvature:at=20' is not an ops probe (ops:at=STEP,k=K,...)");
  RunConfig wider = cfg;
  wider.hidden = {8, 4};
  expect_error(wider, run, 20, kSpec, out,
               "--params-from: " + store::snapshot_dir(run, 20) + ": another architecture than the replayed config "
               "(its encoder.fc1.weight is (16, 24), the replayed model's (8, 24)); its model is \"autoencoder\"");
  std::string file = dir.write("a_file", "x");
  auto r = replay_step(cfg, run, 20, kSpec, file + "/out");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("--out: ", 0), 0u) << r.status().message();
  ASSERT_TRUE(replay_step(cfg, run, 20, kSpec, out).ok());
  auto again = replay_step(cfg, run, 20, kSpec, out);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(), "--out: " + out + " exists and is not an empty directory; the replay writes a new one");
}

}  // namespace
}  // namespace saddlescope::trainer
