#include "saddlescope/analysis/first_op.h"

#include <gtest/gtest.h>

namespace saddlescope::analysis {
namespace {

store::OpHashRow row(int64_t step, int64_t index, const std::string& op, const std::string& in, const std::string& out) {
  return {step, index, "fwd", op, "4x4", "Float", in, out};
}

// Run A and B: steps 0..4 of three ops each, the same digests, except what each test plants.
std::vector<store::OpHashRow> run() {
  std::vector<store::OpHashRow> rows;
  for (int64_t s = 0; s < 5; ++s)
    for (int64_t i = 0; i < 3; ++i)
      rows.push_back(row(s, i, i == 1 ? "fc:linear" : "relu", "in" + std::to_string(s * 3 + i), "out" + std::to_string(s * 3 + i)));
  return rows;
}

TEST(FirstOp, TheFirstOpWhoseOutputsDifferFromEqualInputs) {
  auto a = run(), b = run();
  b[3 * 3 + 1].outputs = "other";  // step 3, op 1: same inputs, other bits
  b[3 * 3 + 2].inputs = b[3 * 3 + 2].outputs = "later";  // and what follows from it
  b[4 * 3 + 0].outputs = "later";
  auto f = first_divergent_op(a, b);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(f->found);
  EXPECT_EQ(f->step, 3);
  EXPECT_EQ(f->index, 1);
  EXPECT_EQ(f->kind, "inputs equal");
  EXPECT_EQ(f->op, "fc:linear");
  EXPECT_EQ(f->steps_compared, 4) << "steps 0 to 3 compared, the walk stops there";
  EXPECT_EQ(describe(*f), "first divergent op: step 3, op 1 of the step, fc:linear (fwd, 4x4 Float): inputs equal, outputs differ");
}

// A step's batch (its "input" row) that differs is where the runs parted, whatever follows: the data
// entered the step apart, which no op's inputs would say by themselves.
TEST(FirstOp, ABatchThatDiffersIsTheDataNotAnOp) {
  auto a = run(), b = run();
  for (auto* rows : {&a, &b})
    rows->insert(rows->begin() + 2 * 3, {2, 0, "input", "batch", "4x10x1x32x32", "Float", "", "batch2"});
  b[2 * 3].outputs = "other batch";
  b[2 * 3 + 1].inputs = b[2 * 3 + 1].outputs = "later";
  auto f = first_divergent_op(a, b);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->step, 2);
  EXPECT_EQ(f->index, 0);
  EXPECT_EQ(f->kind, "batch differs");
  EXPECT_EQ(describe(*f), "first divergent op: step 2: the step's batch differs (4x10x1x32x32 Float), before any op: "
                          "the data or their pipeline");
  b[2 * 3].outputs = "batch2";  // equal batches: the op after them is found as before
  f = first_divergent_op(a, b);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, "inputs differ");
  EXPECT_EQ(f->index, 1);
}

// An op of several results (ophash.csv joins their digests and shapes with '+') says which one parted.
TEST(FirstOp, NamesTheResultThatPartedAmongSeveral) {
  auto a = run(), b = run();
  for (auto* r : {&a[4], &b[4]}) {
    r->op = "ConvolutionBackward0:convolution_backward";
    r->phase = "bwd";
    r->shape = "4x40x16x16+32x40x3x3+32";
    r->outputs = "aaaa+bbbb+cccc";
  }
  b[4].outputs = "aaaa+dddd+cccc";  // the weight gradient's bits differ, the others agree
  auto f = first_divergent_op(a, b);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->step, 1);
  EXPECT_EQ(f->result, "the weight gradient");
  EXPECT_EQ(f->result_shape, "32x40x3x3");
  EXPECT_EQ(describe(*f), "first divergent op: step 1, op 1 of the step, ConvolutionBackward0:convolution_backward (bwd, "
                          "4x40x16x16+32x40x3x3+32 Float): inputs equal, outputs differ: the weight gradient, 32x40x3x3");
  b[4].outputs = "eeee+dddd+cccc";  // the input gradient first, the weight gradient too
  f = first_divergent_op(a, b);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->result, "the input gradient");
  EXPECT_EQ(f->also, std::vector<std::string>{"the weight gradient"});
  EXPECT_NE(describe(*f).find(": the input gradient, 4x40x16x16 (also the weight gradient)"), std::string::npos)
      << describe(*f);
  a[4].op = b[4].op = "AddmmBackward0:mm";
  a[4].shape = b[4].shape = "64x256+-+256x784";
  a[4].outputs = "aaaa++bbbb", b[4].outputs = "aaaa++dddd";
  f = first_divergent_op(a, b);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->result, "result 3 of 3") << "any other op: its place among the results";
  EXPECT_EQ(f->result_shape, "256x784");
}

TEST(FirstOp, InputsThatAlreadyDifferAndOpsThatDiffer) {
  auto a = run(), b = run();
  b[2 * 3 + 0].inputs = b[2 * 3 + 0].outputs = "apart";  // the step began apart
  auto f = first_divergent_op(a, b);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, "inputs differ");
  EXPECT_EQ(f->step, 2);
  EXPECT_EQ(f->index, 0);

  b = run();
  b[1 * 3 + 2].op = "tanh";  // another code path
  f = first_divergent_op(a, b);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, "ops differ");
  EXPECT_EQ(f->op_b, "tanh");
  EXPECT_EQ(describe(*f), "first divergent op: step 1, op 2 of the step: ops differ: relu against tanh (another code path)");

  b = run();
  b.erase(b.begin() + 2);  // B ran one op fewer at step 0
  for (auto& r : b) if (r.step == 0 && r.index == 2) FAIL();
  f = first_divergent_op(a, b);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, "ops differ");
  EXPECT_EQ(f->step, 0);
  EXPECT_EQ(f->op_b, "");
}

TEST(FirstOp, EqualRunsAndRunsWithNoCommonStep) {
  auto a = run();
  auto f = first_divergent_op(a, a);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->found);
  EXPECT_EQ(describe(*f), "no divergent op in the 5 steps both runs recorded");
  std::vector<store::OpHashRow> other = {row(7, 0, "relu", "x", "y")};
  auto none = first_divergent_op(a, other);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "no step recorded by both runs' ophash.csv (train both with --probe ophash at the same steps)");
}

}  // namespace
}  // namespace saddlescope::analysis
