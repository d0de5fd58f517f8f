// Each perturbation changes exactly what it claims, and the execution settings are applied and recorded.
#include "saddlescope/trainer/perturbation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/analysis/divergence.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/snapshot.h"
#include "saddlescope/trainer/train.h"
#include "manifest.h"
#include "small_run.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

using testing::small_config;
using testing::write_pixels;

// Trains `cfg` (snapshots every 10 steps) and returns its run directory.
std::string run(RunConfig cfg) {
  cfg.snapshot_every = 10;
  auto r = train(cfg, {true, nullptr});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->run_dir : "";
}

analysis::Divergence compare(const std::string& a, const std::string& b) {
  auto d = analysis::diverge(a, b);
  EXPECT_TRUE(d.ok()) << d.status().message();
  return d.ok() ? *d : analysis::Divergence{};
}

class PerturbationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = write_pixels(dir_);
    plain_ = run(small_config(dir_, data_));
  }
  RunConfig with(const std::string& spec) {
    RunConfig c = small_config(dir_, data_);
    ConfigBuilder b;  // parse the spec as a user would write it
    EXPECT_TRUE(b.set_flag("perturbation", spec).ok());
    c.perturbation = b.resolve()->perturbation;
    c.perturbation.seed = 11;
    return c;
  }
  testing::TempDir dir_;
  std::string data_, plain_;
};

TEST_F(PerturbationTest, BitflipChangesOneParameterByOneUlpAtStepZero) {
  auto d = compare(plain_, run(with("bitflip")));
  const auto& s0 = d.snapshots.front();
  EXPECT_EQ(s0.step, 0);
  EXPECT_EQ(s0.differing, 1);
  EXPECT_EQ(s0.max_ulp_distance, 1);
  EXPECT_EQ(s0.first_param, "decoder.fc2.bias");
  EXPECT_EQ(d.first_param_step, 0);
}

TEST_F(PerturbationTest, BitflipOfANamedElement) {
  std::string dir = run(with("bitflip:encoder.fc1.weight:5"));
  auto d = compare(plain_, dir);
  EXPECT_EQ(d.snapshots.front().first_param, "encoder.fc1.weight");
  auto m = testing::manifest_json(dir);
  EXPECT_EQ((*m)["perturbation_applied"]["index"], 5);
  EXPECT_NE((*m)["perturbation_applied"]["before"], (*m)["perturbation_applied"]["after"]);
}

TEST_F(PerturbationTest, ShuffleReductionSameLossUpToRoundingDifferentBits) {
  std::string dir = run(with("shuffle-reduction"));
  auto d = compare(plain_, dir);
  EXPECT_EQ(d.snapshots.front().differing, 0) << "same initial weights";
  ASSERT_TRUE(d.first_loss_step.has_value()) << "another summation order must change some bits";
  // Same examples at every step: until the trajectories drift, losses agree to rounding.
  auto la = testing::read_lines(plain_ + "/metrics.csv"), lb = testing::read_lines(dir + "/metrics.csv");
  auto loss = [](const std::string& row) { return std::stod(row.substr(row.find(',') + 1)); };
  double first_a = loss(la[*d.first_loss_step + 1]), first_b = loss(lb[*d.first_loss_step + 1]);
  EXPECT_NEAR(first_a, first_b, 1e-6 * first_a) << "at the first differing step " << *d.first_loss_step;
  EXPECT_LT(d.snapshots.back().rel_l2, 1e-3);
}

TEST_F(PerturbationTest, GaussianNoiseStartsAfterTheFirstGradient) {
  // Step 0's loss is computed before any noise. Adam's first update is ≈ lr·sign(g), which a small
  // relative noise rarely changes, so the losses may first differ at step 1 or 2.
  for (const char* spec : {"gaussian:1e-3", "gaussian:1e-3:element"}) {
    auto d = compare(plain_, run(with(spec)));
    ASSERT_TRUE(d.first_loss_step.has_value()) << spec;
    EXPECT_GE(*d.first_loss_step, 1) << spec;
    EXPECT_LE(*d.first_loss_step, 3) << spec;
    EXPECT_GT(d.snapshots.back().rel_l2, 0) << spec;
  }
}

TEST_F(PerturbationTest, StochasticRoundingRunDiffersButTrains) {
  std::string dir = run(with("stochastic-rounding"));
  auto d = compare(plain_, dir);
  EXPECT_EQ(d.first_param_step, 10) << "step 0 identical, later rounding differs";
  auto m = testing::manifest_json(dir);
  EXPECT_LT((*m)["evaluation"]["mse"].get<double>(), (*m)["evaluation"]["baseline_mse"].get<double>());
}

TEST_F(PerturbationTest, TheSeedOfTheNoiseMatters) {
  RunConfig a = with("gaussian:1e-3"), b = with("gaussian:1e-3");
  b.perturbation.seed = 12;
  auto d = compare(run(a), run(b));
  EXPECT_TRUE(d.first_loss_step.has_value());
}

TEST_F(PerturbationTest, BadTargetsFailBeforeAnythingIsWritten) {
  for (const auto& [spec, message] :
       std::vector<std::pair<std::string, std::string>>{
           {"bitflip:encoder.fc9.weight", "the model has no parameter 'encoder.fc9.weight'"},
           {"bitflip:decoder.fc2.bias:24", "index 24 is out of range for decoder.fc2.bias (24 elements)"}}) {
    RunConfig c = with(spec);
    c.out = dir_.file("bad");
    auto r = train(c, {false, nullptr});
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status().message();
    EXPECT_FALSE(fs::exists(c.out));
  }
}

TEST(StochasticRound, NeighboursOnlyAndUnbiased) {
  auto gen = at::detail::createCPUGenerator(1);
  torch::Tensor x = torch::rand({64}, gen, torch::kFloat64) * 3 - 1;
  constexpr int kDraws = 4000;
  torch::Tensor sum = torch::zeros({64}, torch::kFloat64);
  torch::Tensor down = x.to(torch::kFloat32);
  for (int i = 0; i < kDraws; ++i) {
    torch::Tensor r = stochastic_round(x, torch::rand({64}, gen, torch::kFloat64));
    torch::Tensor r64 = r.to(torch::kFloat64);
    // Each result is the nearest float32 or the neighbour on x's other side.
    auto lo = torch::nextafter(down, torch::full_like(down, -INFINITY)).to(torch::kFloat64);
    auto hi = torch::nextafter(down, torch::full_like(down, INFINITY)).to(torch::kFloat64);
    ASSERT_TRUE(((r64 >= lo) & (r64 <= hi)).all().item<bool>());
    sum += r64;
  }
  // Mean error in units of the float32 spacing: ~ 0.5/sqrt(kDraws) per element if unbiased.
  torch::Tensor spacing = (torch::nextafter(down, torch::full_like(down, INFINITY)).to(torch::kFloat64) -
                           down.to(torch::kFloat64)).abs();
  double worst = ((sum / kDraws - x).abs() / spacing).max().item<double>();
  std::printf("max |mean - x| = %.4f float32 spacings (tolerance 0.05)\n", worst);
  EXPECT_LT(worst, 0.05);
  // Values already in float32 stay put.
  torch::Tensor exact = down.to(torch::kFloat64);
  EXPECT_TRUE(torch::equal(stochastic_round(exact, torch::rand({64}, gen, torch::kFloat64)), down));
}

TEST(Execution, Float64RunStartsFromTheFloat32Values) {
  testing::TempDir dir;
  RunConfig c = small_config(dir, write_pixels(dir));
  std::string f32 = run(c);
  c.execution.dtype = Dtype::kFloat64;
  std::string f64 = run(c);
  auto d = compare(f64, f32);
  EXPECT_FALSE(d.same_format);
  EXPECT_EQ(d.snapshots.front().differing, 0);
  EXPECT_GT(d.snapshots.back().rel_l2, 0);
  EXPECT_LT(d.snapshots.back().rel_l2, 1e-2);
}

TEST(Execution, InitFromGivesBitIdenticalStartWhateverTheSeed) {
  testing::TempDir dir;
  RunConfig a = small_config(dir, write_pixels(dir));
  std::string first = run(a);
  RunConfig b = a;
  b.seed = 77;
  b.init_from = first;
  auto d = compare(first, run(b));
  EXPECT_EQ(d.snapshots.front().differing, 0);
  RunConfig wrong = a;
  wrong.hidden = {8, 4};
  wrong.init_from = first;
  wrong.out = dir.file("wrong");
  auto r = train(wrong, {false, nullptr});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("shape (16, 24) does not match the model's encoder.fc1.weight (8, 24)"),
            std::string::npos)
      << r.status().message();
  EXPECT_FALSE(fs::exists(wrong.out));

  // Non-finite initial weights are named with their file and index, not reported as "diverged at step 0".
  std::string weights = store::snapshot_dir(first, 0) + "/encoder.fc1.weight.npy";
  auto w = store::read_npy(weights);
  ASSERT_TRUE(w.ok());
  for (float bad : {NAN, -INFINITY}) {
    reinterpret_cast<float*>(w->bytes.data())[5] = bad;
    ASSERT_TRUE(store::write_npy(weights, w->dtype, w->shape, w->bytes.data()).ok());
    RunConfig nonfinite = b;
    nonfinite.out = dir.file("nonfinite");
    auto n = train(nonfinite, {false, nullptr});
    ASSERT_FALSE(n.ok());
    EXPECT_EQ(n.status().message(), "init_from: " + weights + ": element 5 is " + (std::isnan(bad) ? "nan" : "-inf") +
                                        "; initial weights must be finite");
    EXPECT_FALSE(fs::exists(nonfinite.out));
  }
}

TEST(Execution, SettingsAreAppliedAndRecorded) {
  testing::TempDir dir;
  RunConfig c = small_config(dir, write_pixels(dir));
  c.execution.deterministic = "strict";
  c.execution.threads = 2;
  auto m = testing::manifest_json(run(c));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)["execution"]["deterministic_algorithms"], true);
  EXPECT_EQ((*m)["execution"]["deterministic_warn_only"], false);
  EXPECT_EQ((*m)["execution"]["intra_op_threads"], 2);
  EXPECT_EQ((*m)["config"]["deterministic"], "strict");
  EXPECT_NE((*m)["run_id"].get<std::string>().find("-det-"), std::string::npos);
  at::globalContext().setDeterministicAlgorithms(false, false);
}

}  // namespace
}  // namespace saddlescope::trainer
