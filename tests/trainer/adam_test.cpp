// DeviceAdam against LibTorch's own Adam, and its learning-rate schedule.
#include "saddlescope/trainer/adam.h"

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "descent.h"

namespace saddlescope::trainer {
namespace {

using testing::descend;

std::vector<torch::Tensor> start(torch::Dtype dtype) { return testing::descent_start(dtype); }

double max_relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max()).item<double>();
}

TEST(DeviceAdam, FollowsLibTorchAdamUpToRounding) {
  for (auto [dtype, tolerance] : {std::pair{torch::kFloat64, 1e-13}, std::pair{torch::kFloat32, 1e-5}}) {
    auto ours = start(dtype), theirs = start(dtype);
    DeviceAdam::Options o;
    o.lr = 0.05;
    DeviceAdam adam(ours, o);
    torch::optim::Adam reference(theirs, torch::optim::AdamOptions(0.05));
    torch::Tensor a = descend(dtype, 60, [&](int) { adam.step(); }, &ours);
    torch::Tensor b = descend(dtype, 60, [&](int) { reference.step(); }, &theirs);
    EXPECT_LT(max_relative_difference(a, b), tolerance) << dtype;
    // And it moved: the comparison is not of two unchanged starts.
    EXPECT_GT(max_relative_difference(a, torch::cat({start(dtype)[0].flatten(), start(dtype)[1].flatten()})
                                                 .to(torch::kFloat64)), 0.01);
  }
}

TEST(DeviceAdam, ScheduledLearningRateMatchesChangingLibTorchs) {
  auto ours = start(torch::kFloat64), theirs = start(torch::kFloat64);
  DeviceAdam::Options o;
  o.lr = 0.05;
  DeviceAdam adam(ours, o);
  torch::optim::Adam reference(theirs, torch::optim::AdamOptions(0.05));
  torch::Tensor a = descend(torch::kFloat64, 40, [&](int t) {
    if (t == 20) adam.set_lr(0.005);
    adam.step();
  }, &ours);
  torch::Tensor b = descend(torch::kFloat64, 40, [&](int t) {
    if (t == 20) static_cast<torch::optim::AdamOptions&>(reference.param_groups()[0].options()).lr(0.005);
    reference.step();
  }, &theirs);
  EXPECT_LT(max_relative_difference(a, b), 1e-13);
  EXPECT_EQ(adam.lr(), 0.005);
}

}  // namespace
}  // namespace saddlescope::trainer
