// Op taps in training runs: the autoencoder and PredNet write ops.csv (summarised by analysis/op_summary), the taps
// change no bit of the trajectory, CPU kernels stay within the rounding bound, and bad specs fail
// before anything is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "saddlescope/analysis/divergence.h"
#include "saddlescope/analysis/op_summary.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/schema.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/store/csv.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/train.h"
#include "small_run.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

std::string run(RunConfig cfg, const std::vector<std::string>& probe_specs) {
  for (const auto& s : probe_specs) cfg.probes.push_back(probes::parse_probe_spec(s)->resolved());
  cfg.snapshot_every = 50;
  auto r = train(cfg, {true, nullptr});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->run_dir : "";
}

void expect_same_trajectory(const std::string& plain, const std::string& tapped) {
  auto d = analysis::diverge(plain, tapped);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_FALSE(d->first_loss_step) << "taps must not change the losses";
  EXPECT_FALSE(d->first_param_step) << "taps must not change the parameters";
}

store::CsvText ops_csv(const std::string& run_dir) {
  auto t = store::read_csv_text(run_dir + "/ops.csv");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : store::CsvText{};
}

TEST(OpTapRun, AutoencoderRowsWithinTheBoundAndTheSameBits) {
  testing::TempDir dir;
  RunConfig cfg = small_config(dir, testing::write_pixels(dir));
  std::string plain = run(cfg, {});
  for (const char* dtype : {"float32", "float64"}) {
    cfg.execution.dtype = *parse_dtype(dtype);
    cfg.out = dir.file(std::string("tapped-") + dtype);
    std::string base = dtype == std::string("float32") ? plain : run(cfg, {});
    std::string tapped = run(cfg, {"ops:every=50,k=4"});
    expect_same_trajectory(base, tapped);

    store::CsvText t = ops_csv(tapped);
    EXPECT_EQ(t.columns, store::kOps.names());
    // Steps 0, 50, 100; per step 4 linear ops x (4 fwd + 4 wgrad), 4 activations x 4, the loss and 4
    // elements of its gradient.
    ASSERT_EQ(t.rows.size(), 3u * (4 * 8 + 4 * 4 + 1 + 4)) << dtype;
    std::set<std::string> ops;
    for (const auto& r : t.rows) {
      ops.insert(r[1] + "/" + r[2]);
      EXPECT_EQ(r[static_cast<size_t>(t.column("dtype"))], dtype);
      EXPECT_EQ(r[static_cast<size_t>(t.column("flag"))], "within")
          << dtype << " " << r[1] << " " << r[2] << " " << r[3] << ": the CPU kernels are within the bound";
    }
    EXPECT_EQ(ops.size(), 4u * 2 + 4 + 2);
    EXPECT_TRUE(ops.count("decoder.fc2.sigmoid/fwd") && ops.count("encoder.fc1/wgrad") && ops.count("loss/fwd") &&
                ops.count("loss/dgrad"));
    auto rows = store::RunDir::open(tapped)->ops();
    ASSERT_TRUE(rows.ok()) << rows.status().message();
    EXPECT_EQ(analysis::summarize_ops(*rows).size(), ops.size());
  }
}

// A small PredNet (two layers, 28x28, 3 frames) trained 6 steps plainly and again with taps every 5
// steps, k = 6, with the `extra` flags; the taps must not change the trajectory. Returns the tapped run.
std::string tapped_prednet(const testing::TempDir& dir, std::vector<std::pair<std::string, std::string>> extra) {
  ConfigBuilder b;
  std::vector<std::pair<std::string, std::string>> flags = {
      {"model", "prednet"}, {"data", "moving-mnist"}, {"canvas", "28"}, {"digits", "1"}, {"nt", "3"},
      {"prednet_stacks", "1,2"}, {"steps", "6"}, {"batch_size", "2"}, {"threads", "1"}, {"eval_sequences", "4"},
      {"log_every", "3"}, {"out", dir.file("plain")}};
  flags.insert(flags.end(), extra.begin(), extra.end());
  for (auto [k, v] : flags) EXPECT_TRUE(b.set_flag(k, v).ok()) << k;
  auto resolved = b.resolve();
  EXPECT_TRUE(resolved.ok()) << resolved.status().message();
  if (!resolved.ok()) return "";
  RunConfig cfg = *resolved;
  std::string plain = run(cfg, {});
  cfg.out = dir.file("tapped");
  std::string tapped = run(cfg, {"ops:every=5,k=6"});
  expect_same_trajectory(plain, tapped);
  return tapped;
}

TEST(OpTapRun, PredNetTapsEveryFrameAndTheWeightGradientOverAllFrames) {
  testing::TempDir dir;
  std::string tapped = tapped_prednet(dir, {{"prednet_loss", "pixel_mse"}});

  store::CsvText t = ops_csv(tapped);
  const size_t op = 1, phase = 2, call = static_cast<size_t>(t.column("call"));
  std::set<std::string> convs_with_wgrad, frames;
  int loss_dgrad = 0;
  for (const auto& r : t.rows) {
    EXPECT_EQ(r[static_cast<size_t>(t.column("flag"))], "within") << r[op] << " " << r[phase] << " " << r[3];
    loss_dgrad += r[op] == "loss" && r[phase] == "dgrad";
    if (r[phase] == "wgrad") {
      EXPECT_EQ(r[call], "-1") << "a weight gradient sums every frame";
      convs_with_wgrad.insert(r[op]);
    } else if (r[op] != "loss") {
      frames.insert(r[call]);
    }
  }
  // Two layers: l0 has lstm (the four gates as one convolution) and conv_ahat; l1 also conv_a.
  EXPECT_EQ(convs_with_wgrad.size(), 2u + 3u);
  EXPECT_TRUE(convs_with_wgrad.count("l1.conv_a") && convs_with_wgrad.count("l0.lstm"));
  EXPECT_EQ(frames, (std::set<std::string>{"0", "1", "2"})) << "samples are drawn over every frame";
  // The loss's own gradient is sampled too (the attribution's evidence for a wrong target): k per tap step.
  EXPECT_EQ(loss_dgrad, 2 * 6);
  auto rows = store::read_table(tapped, store::kOps);
  ASSERT_TRUE(rows.ok());
  for (const auto& s : analysis::summarize_ops(*rows))
    if (s.phase == "wgrad") EXPECT_EQ(s.samples, 2 * 6) << s.op << ": steps 0 and 5, k = 6";
}

// kernels = fused: the fused cell's sigmoid and tanh are tapped against the same exact references,
// within the bound; Â's ReLU, fused with its clamp into the error units, and A's, fused with the
// max-pool, are not ops of their own.
TEST(OpTapRun, FusedPredNetTapsItsActivationsWithinTheBound) {
  testing::TempDir dir;
  std::string tapped = tapped_prednet(dir, {{"kernels", "fused"}});

  store::CsvText t = ops_csv(tapped);
  std::set<std::string> ops;
  for (const auto& r : t.rows) {
    EXPECT_EQ(r[static_cast<size_t>(t.column("flag"))], "within") << r[1] << " " << r[2] << " " << r[3];
    ops.insert(r[1]);
  }
  for (const char* op : {"l0.lstm.ifo.sigmoid", "l0.lstm.c.tanh", "l0.cell.tanh", "l1.lstm.ifo.sigmoid",
                         "l1.cell.tanh", "l1.conv_a", "l0.conv_ahat"})
    EXPECT_TRUE(ops.count(op)) << op;
  EXPECT_FALSE(ops.count("l0.conv_ahat.relu"));
  EXPECT_FALSE(ops.count("l1.conv_a.relu"));
}

TEST(OpTapRun, BadSpecsFailBeforeAnythingIsWritten) {
  testing::TempDir dir;
  RunConfig cfg = small_config(dir, testing::write_pixels(dir));
  cfg.out = dir.file("bad");
  auto expect_error = [&](const std::string& spec, const std::string& message) {
    cfg.probes = {probes::parse_probe_spec(spec)->resolved()};
    auto r = train(cfg, {false, nullptr});
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status().message();
    EXPECT_FALSE(fs::exists(cfg.out));
  };
  // Batch 8: encoder.fc2 (16 -> 4) has 32 outputs and 64 weights.
  expect_error("ops:k=40", "k = 40 exceeds the 32 output elements of encoder.fc2 (at this batch size)");
  expect_error("ops:only=encoder.fc9", "no op is named 'encoder.fc9' in this model (its ops: encoder.fc1, ");
}

}  // namespace
}  // namespace saddlescope::trainer
