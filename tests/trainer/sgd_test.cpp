// DeviceSgd against LibTorch's own SGD (bitwise on the CPU), its schedule and its saved state.
#include "saddlescope/trainer/sgd.h"

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "descent.h"

#include "saddlescope/trainer/adam.h"

namespace saddlescope::trainer {
namespace {

using testing::descend;

std::vector<torch::Tensor> start(torch::Dtype dtype) { return testing::descent_start(dtype); }

TEST(DeviceSgd, IsLibTorchsSgdBitForBitOnTheCpu) {
  for (auto dtype : {torch::kFloat32, torch::kFloat64})
    for (double momentum : {0.0, 0.9}) {
      SCOPED_TRACE(::testing::Message() << dtype << " momentum " << momentum);
      auto ours = start(dtype), theirs = start(dtype);
      DeviceSgd sgd(ours, 0.02, momentum);
      torch::optim::SGD reference(theirs, torch::optim::SGDOptions(0.02).momentum(momentum));
      torch::Tensor a = descend(dtype, 40, [&](int) { sgd.step(); }, &ours);
      torch::Tensor b = descend(dtype, 40, [&](int) { reference.step(); }, &theirs);
      EXPECT_TRUE(torch::equal(a, b)) << "max difference " << (a - b).abs().max().item<double>();
      torch::Tensor first = torch::cat({start(dtype)[0].flatten(), start(dtype)[1].flatten()}).to(torch::kFloat64);
      EXPECT_GT((a - first).abs().max().item<double>(), 0.1) << "it moved";
    }
}

TEST(DeviceSgd, ScheduledLearningRateMatchesChangingLibTorchs) {
  auto ours = start(torch::kFloat32), theirs = start(torch::kFloat32);
  DeviceSgd sgd(ours, 0.02, 0.5);
  torch::optim::SGD reference(theirs, torch::optim::SGDOptions(0.02).momentum(0.5));
  torch::Tensor a = descend(torch::kFloat32, 30, [&](int t) {
    if (t == 15) sgd.set_lr(0.002);
    sgd.step();
  }, &ours);
  torch::Tensor b = descend(torch::kFloat32, 30, [&](int t) {
    if (t == 15) static_cast<torch::optim::SGDOptions&>(reference.param_groups()[0].options()).lr(0.002);
    reference.step();
  }, &theirs);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_EQ(sgd.lr(), 0.002);
}

// Saved after 10 steps and loaded into a fresh optimiser, the next 10 steps are those of the first.
TEST(DeviceSgd, SavedStateContinuesBitForBit) {
  for (double momentum : {0.0, 0.9}) {
    auto a = start(torch::kFloat32);
    DeviceSgd sgd(a, 0.02, momentum);
    descend(torch::kFloat32, 10, [&](int) { sgd.step(); }, &a);
    std::map<std::string, torch::Tensor> state;
    sgd.save("sgd.", &state);
    EXPECT_EQ(state.size(), momentum > 0 ? 4u : 1u) << "lr, and with momentum buf.0, buf.1, started";
    std::vector<torch::Tensor> b = {a[0].detach().clone().requires_grad_(true), a[1].detach().clone().requires_grad_(true)};
    std::map<std::string, torch::Tensor> copied;
    for (const auto& [k, t] : state) copied[k] = t.clone();
    DeviceSgd resumed(b, 1.0, momentum);  // lr and buffers come from the state
    ASSERT_TRUE(resumed.load("sgd.", copied).ok());
    EXPECT_EQ(resumed.lr(), 0.02);
    torch::Tensor x = descend(torch::kFloat32, 10, [&](int) { sgd.step(); }, &a);
    torch::Tensor y = descend(torch::kFloat32, 10, [&](int) { resumed.step(); }, &b);
    EXPECT_TRUE(torch::equal(x, y)) << "momentum " << momentum;
    copied.erase("sgd.lr");
    EXPECT_EQ(resumed.load("sgd.", copied).message(), "checkpoint lacks optimiser state sgd.lr");
  }
}

TEST(DeviceOptimizer, MakesTheKindAskedForAndFreshCopies) {
  auto p = start(torch::kFloat64);
  auto adam = make_optimizer(p, {"adam", 0.01, 0});
  auto sgd = make_optimizer(p, {"sgd", 0.01, 0.9});
  EXPECT_STREQ(adam->name(), "adam");
  EXPECT_STREQ(sgd->name(), "sgd");
  sgd->set_lr(0.5);
  auto copy = sgd->fresh(start(torch::kFloat64));
  EXPECT_STREQ(copy->name(), "sgd");
  EXPECT_EQ(copy->lr(), 0.5);
  EXPECT_NE(dynamic_cast<DeviceAdam*>(adam.get()), nullptr);
}

}  // namespace
}  // namespace saddlescope::trainer
