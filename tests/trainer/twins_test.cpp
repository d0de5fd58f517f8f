// Twins (trainer/twins.h): the copies init duplicate made are found parameter by parameter, an edited
// copy is named with its size, and a snapshot that cannot answer is an error naming the run.
#include "saddlescope/trainer/twins.h"

#include <gtest/gtest.h>

#include <map>

#include <torch/torch.h>

#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/model.h"
#include "saddlescope/trainer/snapshot.h"
#include "saddlescope/trainer/train.h"
#include "small_run.h"
#include "temp_dir.h"

namespace saddlescope::trainer {
namespace {

// 24->16->4->16->24 with units 0 and 1 of encoder.fc1 copies: three steps, snapshots with gradients.
std::pair<RunConfig, std::string> twin_run(const testing::TempDir& dir) {
  RunConfig cfg = testing::small_config(dir, testing::write_pixels(dir));
  cfg.steps = 3;
  cfg.snapshot_every = 1;
  cfg.snapshot_grads = true;
  cfg.init = "duplicate";
  cfg.duplicate_layers = {"encoder.fc1"};
  cfg.duplicate_units = {0, 1};
  auto r = train(cfg, {true, nullptr});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return {cfg, r.ok() ? r->run_dir : ""};
}

const Duplication kPair{{"encoder.fc1"}, {0, 1}};

std::map<std::string, TwinDifference> by_name(const std::vector<TwinDifference>& d) {
  std::map<std::string, TwinDifference> m;
  for (const auto& t : d) m[t.parameter] = t;
  return m;
}

TEST(Twins, FindsEveryCopyOfADuplicatedUnitAndNoneDiffersOnOneThread) {
  testing::TempDir dir;
  auto [cfg, run] = twin_run(dir);
  for (bool grads : {false, true}) {
    auto d = twin_differences(cfg, run, 1, grads, kPair);
    ASSERT_TRUE(d.ok()) << d.status().message();
    auto m = by_name(*d);  // unit 1's incoming row, its bias, its outgoing column
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(m["encoder.fc1.weight"].copies, 24);
    EXPECT_EQ(m["encoder.fc1.bias"].copies, 1);
    EXPECT_EQ(m["encoder.fc2.weight"].copies, 4);
    for (const auto& t : *d) {
      EXPECT_EQ(t.differing, 0) << t.parameter;
      EXPECT_EQ(t.max_abs, 0) << t.parameter;
    }
    if (!grads) EXPECT_GT(m["encoder.fc1.weight"].scale, 0);  // (a dead unit's gradient is 0)
  }
  // Every unit a copy of unit 0: 15 copies per part.
  auto all = twin_differences(cfg, run, 0, false, Duplication{{"encoder.fc1"}, {}});
  ASSERT_TRUE(all.ok()) << all.status().message();
  auto m = by_name(*all);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m["encoder.fc1.weight"].copies, 15 * 24);
  EXPECT_GT(m["encoder.fc1.weight"].differing, 0);  // the run's other units are no copies of unit 0
}

TEST(Twins, AnEditedCopyIsCountedWithItsDifference) {
  testing::TempDir dir;
  auto [cfg, run] = twin_run(dir);
  const std::string file = *store::RunDir::open(run)->snapshot_path(2) + "/encoder.fc2.weight.grad.npy";
  torch::Tensor g = torch::from_blob(store::read_npy(file)->bytes.data(), {4, 16}).clone();
  g[2][1] = g[2][0] + 0.25f;  // unit 1's outgoing gradient, no longer its original's
  ASSERT_TRUE(write_tensor(file, g).ok());
  auto d = twin_differences(cfg, run, 2, true, kPair);
  ASSERT_TRUE(d.ok()) << d.status().message();
  auto m = by_name(*d);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m["encoder.fc1.weight"].differing, 0);
  EXPECT_EQ(m["encoder.fc1.bias"].differing, 0);
  EXPECT_EQ(m["encoder.fc2.weight"].differing, 1);
  EXPECT_NEAR(m["encoder.fc2.weight"].max_abs, 0.25, 1e-6);
  auto params = twin_differences(cfg, run, 2, false, kPair);  // the parameters were not touched
  ASSERT_TRUE(params.ok());
  for (const auto& t : *params) EXPECT_EQ(t.differing, 0) << t.parameter;
}

TEST(Twins, SnapshotsThatCannotAnswerAreErrorsNamingTheRun) {
  testing::TempDir dir;
  auto [cfg, run] = twin_run(dir);
  auto last = twin_differences(cfg, run, 3, true, kPair);  // the final snapshot has no gradients
  ASSERT_FALSE(last.ok());
  EXPECT_NE(last.status().message().find(run + ": its snapshot at step 3 holds no gradients"), std::string::npos)
      << last.status().message();
  auto missing = twin_differences(cfg, run, 7, false, kPair);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("7"), std::string::npos) << missing.status().message();
  auto layer = twin_differences(cfg, run, 0, false, Duplication{{"encoder.fc9"}, {0, 1}});
  ASSERT_FALSE(layer.ok());
  EXPECT_NE(layer.status().message().find("no layer 'encoder.fc9'"), std::string::npos) << layer.status().message();
  auto unit = twin_differences(cfg, run, 0, false, Duplication{{"encoder.fc1"}, {0, 16}});
  ASSERT_FALSE(unit.ok());
  EXPECT_NE(unit.status().message().find("unit 16 does not exist"), std::string::npos) << unit.status().message();
  RunConfig wider = cfg;
  wider.hidden = {20, 4};
  auto arch = twin_differences(wider, run, 0, false, kPair);
  ASSERT_FALSE(arch.ok());
  EXPECT_NE(arch.status().message().find("is not of this model (encoder.fc1.weight has another shape)"),
            std::string::npos)
      << arch.status().message();
  // An array of another dtype (a snapshot is never written so) is refused, not read as floats.
  const std::string file = *store::RunDir::open(run)->snapshot_path(2) + "/encoder.fc2.weight.grad.npy";
  std::vector<uint8_t> bytes(4 * 16, 7);
  ASSERT_TRUE(store::write_npy(file, store::Dtype::kUInt8, {4, 16}, bytes.data()).ok());
  auto u8 = twin_differences(cfg, run, 2, true, kPair);
  ASSERT_FALSE(u8.ok());
  EXPECT_NE(u8.status().message().find("holds encoder.fc2.weight as |u1, not float32 or float64"), std::string::npos)
      << u8.status().message();
}

}  // namespace
}  // namespace saddlescope::trainer
