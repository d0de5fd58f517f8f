// Attribution on synthetic op-tap rows with planted answers: identical steps, rounding differences
// within both bounds, a code difference beyond one side's bound (the alias-target story: the loss's
// gradient), TF32-like rows beyond in both, step order, steps and rows present on one side only.
#include "saddlescope/analysis/attribution.h"

#include <gtest/gtest.h>

#include <cmath>

namespace saddlescope::analysis {
namespace {

store::OpRow row(const std::string& op, const std::string& phase, const std::string& index, double observed,
                 const std::string& flag = "within", int64_t step = 0, double ratio = 0.1) {
  store::OpRow r;
  r.step = step;
  r.op = op;
  r.phase = phase;
  r.index = index;
  r.observed = observed;
  r.exact = observed;
  r.flag = flag;
  r.bound_ratio = ratio;
  r.ulp_error = flag == "beyond" ? 1e6 : 0.5;
  r.call = phase == "wgrad" ? -1 : 0;
  return r;
}

// A step of a two-layer model: fc1 and fc2 forward, the loss and its gradient, both weight gradients.
std::vector<store::OpRow> step_rows() {
  return {row("fc1", "fwd", "0:1", 1.5),   row("fc1", "wgrad", "2:3", 0.25), row("fc2", "fwd", "0:0", -2.0),
          row("fc2", "wgrad", "1:1", 0.75), row("loss", "fwd", "0", 0.5),     row("loss", "dgrad", "0:4", 0.125)};
}

TEST(Attribution, SameBitsAreIdentical) {
  auto r = attribute_ops(step_rows(), step_rows());
  EXPECT_EQ(r.verdict, Verdict::kIdentical);
  EXPECT_EQ(r.op, "");
  EXPECT_EQ(r.step, 0);
  EXPECT_EQ(r.unmatched, 0);
  ASSERT_EQ(r.ops.size(), 6u);
  // Step order: forward ops, the loss's gradient, weight gradients from the last layer back.
  const char* expected[][2] = {{"fc1", "fwd"}, {"fc2", "fwd"},   {"loss", "fwd"},
                               {"loss", "dgrad"}, {"fc2", "wgrad"}, {"fc1", "wgrad"}};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r.ops[i].op, expected[i][0]) << i;
    EXPECT_EQ(r.ops[i].phase, expected[i][1]) << i;
    EXPECT_EQ(r.ops[i].compared, 1);
    EXPECT_EQ(r.ops[i].differing, 0);
  }
}

TEST(Attribution, DifferencesWithinBothBoundsAreRounding) {
  auto b = step_rows();
  b[1].observed = 0.2500001;  // fc1 wgrad: another reduction order, within the bound
  b[3].observed = 0.7500001;
  auto r = attribute_ops(step_rows(), b);
  EXPECT_EQ(r.verdict, Verdict::kRounding);
  EXPECT_EQ(r.op, "fc2");  // the first in step order: fc2's weight gradient comes before fc1's
  EXPECT_EQ(r.phase, "wgrad");
  EXPECT_EQ(r.config, "");
}

// The planted alias-target fault: forward identical, the loss's gradient computed against another
// target (beyond b's bound), and weight gradients that follow from it (within: their inputs were b's).
TEST(Attribution, ALossGradientBeyondOneBoundIsCodeNamingTheOpAndConfig) {
  auto b = step_rows();
  b[5] = row("loss", "dgrad", "0:4", 0.0625, "beyond", 0, 4e5);
  b[1].observed = 0.3;
  b[3].observed = 0.9;
  auto r = attribute_ops(step_rows(), b);
  EXPECT_EQ(r.verdict, Verdict::kCode);
  EXPECT_EQ(r.op, "loss");
  EXPECT_EQ(r.phase, "dgrad");
  EXPECT_EQ(r.config, "b");
  const OpVerdict& loss = r.ops[3];
  EXPECT_EQ(loss.beyond_b, 1);
  EXPECT_EQ(loss.beyond_a, 0);
  EXPECT_EQ(loss.max_ratio_b, 4e5);
  EXPECT_EQ(r.ops[4].verdict, Verdict::kRounding) << "fc2 wgrad: within b's bound for b's inputs";
  // The same with the sides swapped names a.
  r = attribute_ops(b, step_rows());
  EXPECT_EQ(r.config, "a");
}

TEST(Attribution, BeyondOnBothSidesWithDifferentValuesIsCodeOfBoth) {
  auto a = step_rows(), b = step_rows();
  a[0] = row("fc1", "fwd", "0:1", 1.51, "beyond", 0, 30);  // TF32 on both, different algorithms
  b[0] = row("fc1", "fwd", "0:1", 1.49, "beyond", 0, 30);
  auto r = attribute_ops(a, b);
  EXPECT_EQ(r.verdict, Verdict::kCode);
  EXPECT_EQ(r.op, "fc1");
  EXPECT_EQ(r.config, "both");
  // Beyond on both sides with the same bits: one code path, identical.
  r = attribute_ops(a, a);
  EXPECT_EQ(r.verdict, Verdict::kIdentical);
}

TEST(Attribution, NonFiniteOnOneSideOnlyIsCode) {
  auto b = step_rows();
  b[2] = row("fc2", "fwd", "0:0", INFINITY, "nonfinite_observed");
  auto r = attribute_ops(step_rows(), b);
  EXPECT_EQ(r.verdict, Verdict::kCode);
  EXPECT_EQ(r.op, "fc2");
  EXPECT_EQ(r.config, "b");
}

TEST(Attribution, OnlyTheFirstCommonStepAndMatchedRowsCount) {
  auto a = step_rows(), b = step_rows();
  for (auto r : step_rows()) {  // a later step in a only, and a different one in b
    r.step = 100;
    a.push_back(r);
  }
  auto later = row("fc1", "fwd", "0:1", 9.0, "beyond", 50);
  b.insert(b.begin(), later);
  b.push_back(row("fc1", "fwd", "5:5", 1.0));  // a sample a does not have
  auto r = attribute_ops(a, b);
  EXPECT_EQ(r.step, 0);
  EXPECT_EQ(r.verdict, Verdict::kIdentical);
  EXPECT_EQ(r.unmatched, 1);
  // No common step at all.
  for (auto& x : b) x.step = 7;
  r = attribute_ops(a, b);
  EXPECT_EQ(r.step, -1);
  EXPECT_TRUE(r.ops.empty());
  EXPECT_EQ(r.unmatched, static_cast<int64_t>(a.size() + b.size()));
}

}  // namespace
}  // namespace saddlescope::analysis
