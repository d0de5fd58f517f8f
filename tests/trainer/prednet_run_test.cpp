// PredNet through the training loop: Moving MNIST generated on the fly, the previous-frame baseline,
// probes on a sequence model, and the combinations that make no sense refused before anything is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/schema.h"
#include "saddlescope/store/table.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/mnist.h"
#include "saddlescope/trainer/train.h"
#include "manifest.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

// A tiny PredNet on 32x32 one-digit sequences of 3 frames: a second or two on one core.
RunConfig tiny(const testing::TempDir& dir) {
  ConfigBuilder b;
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model", "prednet"}, {"data", "moving-mnist"}, {"canvas", "32"}, {"digits", "1"}, {"nt", "3"},
           {"prednet_stacks", "1,2,4"}, {"steps", "12"}, {"batch_size", "2"}, {"threads", "1"},
           {"eval_sequences", "8"}, {"log_every", "4"}, {"out", dir.file("study")}})
    EXPECT_TRUE(b.set_flag(k, v).ok()) << k;
  return *b.resolve();
}

TEST(PredNetRun, TrainsOnGeneratedSequencesAndScoresAgainstThePreviousFrame) {
  testing::TempDir dir;
  RunConfig cfg = tiny(dir);
  cfg.probes = {probes::parse_probe_spec("curvature:every=6,batch=2,iters=20")->resolved()};
  auto r = train(cfg, {false, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, store::RunStatus::kCompleted);
  EXPECT_EQ(r->baseline, "previous frame");
  auto m = testing::manifest_json(r->run_dir);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)["data"]["example_shape"], nlohmann::json({3, 1, 32, 32}));
  EXPECT_EQ((*m)["evaluation"]["per_frame_mse"].size(), 2u) << "frames t = 1, 2";
  EXPECT_GT((*m)["evaluation"]["baseline_mse"].get<double>(), 0);
  EXPECT_TRUE(fs::exists(r->run_dir + "/curvature.csv"));
  EXPECT_TRUE(fs::exists(r->run_dir + "/snapshots/step-00000000/l0.conv_ahat.weight.npy"));
}

TEST(PredNetRun, SameSeedSameBitsOnTheCpu) {
  testing::TempDir a, b;
  auto ra = train(tiny(a), {false, nullptr});
  auto rb = train(tiny(b), {false, nullptr});
  ASSERT_TRUE(ra.ok() && rb.ok());
  auto strip = [](const std::string& dir) {
    std::ifstream in(dir + "/metrics.csv");
    std::string all;
    for (std::string l; std::getline(in, l);) all += l.substr(0, l.rfind(',')) + "\n";
    return all;
  };
  EXPECT_EQ(strip(ra->run_dir), strip(rb->run_dir));
}

TEST(PredNetRun, MismatchedModelAndDataAreRefused) {
  testing::TempDir dir;
  auto expect_error = [&](RunConfig cfg, const std::string& what) {
    cfg.out = dir.file("bad");
    auto r = train(cfg, {false, nullptr});
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
    EXPECT_FALSE(fs::exists(cfg.out)) << what;
  };
  RunConfig on_mnist = tiny(dir);
  on_mnist.data = "mnist";
  expect_error(on_mnist, "model prednet needs frame sequences (data moving-mnist), not mnist");
  RunConfig ae = tiny(dir);
  ae.model = ModelKind::kAutoencoder;
  expect_error(ae, "model autoencoder needs examples of features, not sequences");
  RunConfig dup = tiny(dir);
  dup.init = "duplicate";
  dup.duplicate_layers = {"l0.r"};  // one channel: not a layer of units
  expect_error(dup, "duplicate_layers: this model has no layer 'l0.r' (its layers: l1.r, l2.r)");
  dup.duplicate_layers = {"l1.r"};
  dup.duplicate_units = {0, 2};
  expect_error(dup, "duplicate_units: unit 2 does not exist in layer l1.r of 2 units");
  RunConfig odd = tiny(dir);
  odd.prednet.canvas = 30;
  expect_error(odd, "canvas must be a multiple of 2^(layers-1) = 4 for 3 PredNet layers (prednet_stacks), got 30");
  RunConfig channels = tiny(dir);
  channels.prednet.stack_sizes = {3, 2, 4};
  expect_error(channels, "prednet_stacks[0] must be the frames' channels, 1, got 3");
}

// Two duplicated R channels of layer 2 (incoming gates, recurrent and top-down readers) stay bitwise
// identical under the CPU's deterministic arithmetic, and the symmetry probe sees exactly that pair.
TEST(PredNetRun, DuplicatedChannelsStayIdenticalOnTheCpuAndTheProbeSeesThem) {
  testing::TempDir dir;
  RunConfig cfg = tiny(dir);
  cfg.init = "duplicate";
  cfg.duplicate_layers = {"l2.r"};
  cfg.duplicate_units = {1, 3};
  cfg.probes = {probes::parse_probe_spec("symmetry:every=4")->resolved()};
  auto r = train(cfg, {false, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto rows = store::read_table(r->run_dir, store::kSymmetry);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  int64_t l2_rows = 0;
  for (const auto& row : *rows) {
    if (row.layer == "l1.r") EXPECT_EQ(row.identical_pairs, 0) << row.step;  // not duplicated
    if (row.layer != "l2.r") continue;
    ++l2_rows;
    EXPECT_EQ(row.identical_pairs, 1) << row.step;
    EXPECT_EQ(row.closest_a, 1);
    EXPECT_EQ(row.closest_b, 3);
  }
  EXPECT_EQ(l2_rows, 3) << "steps 0, 4 and 8";
  // The pair moved (it is not a frozen pair of dead channels): the weights at the end are not the start's.
  auto first = store::read_npy(r->run_dir + "/snapshots/step-00000000/l2.lstm.i.weight.npy");
  auto last = store::read_npy(r->run_dir + "/snapshots/step-00000012/l2.lstm.i.weight.npy");
  ASSERT_TRUE(first.ok() && last.ok());
  EXPECT_NE(first->bytes, last->bytes);
}

}  // namespace
}  // namespace saddlescope::trainer
