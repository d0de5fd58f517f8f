// Batch invariance (trainer/invariance.h): a composition that is invariant by construction is reported
// invariant; a reduction split by batch size is found and named, with its shape of difference; every
// bad option is a one-line error naming its flag.
#include <gtest/gtest.h>

#include <cstdlib>

#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/invariance.h"
#include "small_run.h"
#include "temp_dir.h"

namespace saddlescope::trainer {
namespace {

class Invariance : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string cmd = testing::python() + " " SADDLESCOPE_SOURCE_DIR "/tests/trainer/make_modules.py " + dir.path() + " 24 4";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  RunConfig module(const std::string& name) {
    auto c = testing::with_keys(base, {{"model", "torchscript"}, {"model_file", dir.path() + "/" + name + ".pt"}});
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? *c : base;
  }
  testing::TempDir dir;
  RunConfig base = testing::small_config(dir, testing::write_pixels(dir));
  InvarianceOptions options = [] {
    InvarianceOptions o;
    o.examples = 4;
    o.batch_sizes = {2, 8};
    o.repeats = 2;
    return o;
  }();
};

TEST_F(Invariance, AnElementwiseCompositionIsInvariant) {
  for (bool backward : {false, true}) {
    options.backward = backward;
    auto r = check_invariance(module("elementwise"), options, nullptr);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->invariant);
    ASSERT_EQ(r->cases.size(), 6u);  // 2 batch sizes x 3 positions
    for (const auto& c : r->cases) {
      EXPECT_EQ(c.equal, 4);
      EXPECT_EQ(c.max_ulp, 0);
      EXPECT_TRUE(c.first_op.empty()) << c.first_op;
    }
    EXPECT_EQ(r->cases[5].row, 7);  // last of 8
    EXPECT_EQ(r->cases[4].row, 4);  // middle of 8
    ASSERT_EQ(r->timings.size(), 3u);  // batch 1, 2, 8
    EXPECT_LE(r->timings[0].min_s, r->timings[0].median_s);
  }
}

TEST_F(Invariance, AReductionSplitByBatchSizeIsFoundAndNamed) {
  for (bool backward : {false, true}) {
    options.backward = backward;
    auto r = check_invariance(module("split_sum"), options, nullptr);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_FALSE(r->invariant);
    int64_t differing = 0;
    for (const auto& c : r->cases) {
      if (c.equal == c.examples) continue;
      ++differing;
      EXPECT_GT(c.max_ulp, 0);
      // x·w is the same per element in any batch; the sum that the batch splits in two is the first op
      // that differs, in its values (same shape), and each half sum is within its own rounding bound.
      EXPECT_EQ(c.first_op, "sum");
      EXPECT_EQ(c.phase, "fwd");
      EXPECT_EQ(c.how, "values");
      EXPECT_EQ(c.op_index, 1) << "after mul";
      EXPECT_GT(c.op_max_ulp, 0);
      EXPECT_EQ(c.bound, "within");
      EXPECT_GT(c.samples, 0);
    }
    EXPECT_GT(differing, 0) << "random data: some rows must round differently split in two";
    auto j = to_json(*r);
    EXPECT_FALSE(j["invariant"].get<bool>());
    EXPECT_EQ(j["cases"].size(), 6u);
  }
}

// An op named by nothing (the root module's own weight) is matched to the taps through the op inside it:
// linear's mm is evaluated, alone in float32 and in the batch in float64, each within its bound.
TEST_F(Invariance, AnUnnamedOpIsCheckedThroughTheOpInsideIt) {
  auto r = check_invariance(module("linear_f64"), options, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->invariant);
  for (const auto& c : r->cases) {
    ASSERT_NE(c.equal, c.examples) << "float64 in the batch: every example differs somewhere";
    EXPECT_EQ(c.first_op, "linear");
    EXPECT_EQ(c.how, "values");
    EXPECT_EQ(c.bound, "within");
    EXPECT_GT(c.samples, 0);
  }
}

TEST_F(Invariance, TheBuiltInAutoencoderIsInvariantOrNamesTheOp) {
  options.k = 4;
  auto r = check_invariance(base, options, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const auto& c : r->cases)
    if (c.equal != c.examples) {
      EXPECT_FALSE(c.first_op.empty()) << "batch " << c.batch << " " << c.position;
    }
  EXPECT_EQ(r->model, "autoencoder");
}

TEST_F(Invariance, BadOptionsNameTheirFlag) {
  auto error = [&](InvarianceOptions o) {
    auto r = check_invariance(base, o, nullptr);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  InvarianceOptions o = options;
  o.batch_sizes = {1, 8};
  EXPECT_EQ(error(o), "--batch-sizes: 1 is not a batch of several examples (at least 2)");
  o = options;
  o.batch_sizes = {300};
  EXPECT_EQ(error(o).rfind("--batch-sizes: a batch of 300 beside 4 examples needs 304 evaluation rows", 0), 0u) << error(o);
  o = options;
  o.positions = {"end"};
  EXPECT_EQ(error(o), "--positions: 'end' is not first, middle or last");
  o = options;
  o.examples = 0;
  EXPECT_EQ(error(o).rfind("--examples:", 0), 0u);
  o = options;
  o.k = -1;
  EXPECT_EQ(error(o).rfind("--k:", 0), 0u);
}

}  // namespace
}  // namespace saddlescope::trainer
