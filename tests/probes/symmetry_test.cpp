#include "saddlescope/probes/symmetry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include <torch/torch.h>

namespace saddlescope::probes {
namespace {

TEST(Symmetry, FindsDuplicatedUnitsExactly) {
  auto gen = at::detail::createCPUGenerator(5);
  torch::Tensor W1 = torch::randn({6, 4}, gen), b1 = torch::randn({6}, gen), W2 = torch::randn({3, 6}, gen);
  // Units 1 and 4: identical incoming, bias and outgoing. Units 2 and 3: identical incoming and bias,
  // different outgoing weights: not a symmetry.
  W1[4].copy_(W1[1]);
  b1[4].copy_(b1[1]);
  W2.select(1, 4).copy_(W2.select(1, 1));
  W1[3].copy_(W1[2]);
  b1[3].copy_(b1[2]);
  // A conv layer (out 5, in 2, 3x3) whose channels 0 and 2 are copies up to one ulp-sized change.
  torch::Tensor K = torch::randn({5, 2, 3, 3}, gen), next = torch::randn({7, 5, 3, 3}, gen);
  K[2].copy_(K[0]);
  next.select(1, 2).copy_(next.select(1, 0));
  const float before = K[2][1][1][1].item<float>();
  const float after = std::nextafter(before, INFINITY);
  K[2][1][1][1] = after;

  auto r = symmetry_scan({{"fc1", W1, b1, W2}, {"fc2", W2, {}, {}}, {"conv1", K, {}, next}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  const LayerSymmetry& fc1 = (*r)[0];
  EXPECT_EQ(fc1.units, 6);
  ASSERT_EQ(fc1.identical_pairs.size(), 1u);
  EXPECT_EQ(fc1.identical_pairs[0], (std::pair<int64_t, int64_t>(1, 4)));
  EXPECT_EQ(fc1.min_relative_distance, 0.0);
  EXPECT_TRUE((*r)[1].identical_pairs.empty());
  EXPECT_GT((*r)[1].min_relative_distance, 0.0);

  // conv1: no identical pair, and the exact relative distance of the near-copies.
  const LayerSymmetry& conv = (*r)[2];
  EXPECT_TRUE(conv.identical_pairs.empty());
  EXPECT_EQ(conv.closest_pair, (std::pair<int64_t, int64_t>(0, 2)));
  torch::Tensor u0 = torch::cat({K[0].reshape(-1), next.select(1, 0).reshape(-1)}).to(torch::kFloat64);
  torch::Tensor u2 = torch::cat({K[2].reshape(-1), next.select(1, 2).reshape(-1)}).to(torch::kFloat64);
  double want = (static_cast<double>(after) - before) / std::max(u0.norm().item<double>(), u2.norm().item<double>());
  double diff = std::abs(conv.min_relative_distance - want) / want;
  std::printf("[ max diff ] near-copy relative distance %.6g vs %.6g (rel %.3g)\n",
              conv.min_relative_distance, want, diff);
  EXPECT_LE(diff, 1e-12);
}

TEST(Symmetry, SignedZerosAreEqualButNotBitwiseIdentical) {
  torch::Tensor W = torch::zeros({2, 3});
  W[1][0] = -0.0f;
  auto r = symmetry_scan({{"fc", W, {}, {}}});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].identical_pairs.empty());
  EXPECT_EQ((*r)[0].min_relative_distance, 0.0);
}

TEST(Symmetry, ShapeMismatchesNameTheLayer) {
  torch::Tensor W = torch::zeros({4, 3});
  auto bad_bias = symmetry_scan({{"enc.fc1", W, torch::zeros({5}), {}}});
  ASSERT_FALSE(bad_bias.ok());
  EXPECT_NE(bad_bias.status().message().find("enc.fc1"), std::string::npos);
  EXPECT_NE(bad_bias.status().message().find("bias"), std::string::npos);
  auto bad_next = symmetry_scan({{"enc.fc1", W, {}, torch::zeros({2, 3})}});
  ASSERT_FALSE(bad_next.ok());
  EXPECT_NE(bad_next.status().message().find("(2, 3)"), std::string::npos);
  EXPECT_FALSE(symmetry_scan({{"v", torch::zeros({4}), {}, {}}}).ok());
  auto one = symmetry_scan({{"single", torch::zeros({1, 3}), {}, {}}});
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(std::isinf((*one)[0].min_relative_distance));
}

}  // namespace
}  // namespace saddlescope::probes
