// Probes in a training run: they write what they claim and never change the trajectory; the symmetric
// saddle stays exactly symmetric under deterministic CPU arithmetic until noise breaks it.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/analysis/divergence.h"
#include "saddlescope/probes/probe.h"
#include "saddlescope/store/csv.h"
#include "saddlescope/store/schema.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/table.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/autoencoder.h"
#include "saddlescope/trainer/train.h"
#include "small_run.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

using testing::small_config;
using testing::write_pixels;

std::string run(RunConfig cfg, std::vector<std::string> probe_specs) {
  for (const auto& s : probe_specs) cfg.probes.push_back(probes::parse_probe_spec(s)->resolved());
  cfg.snapshot_every = 50;
  auto r = train(cfg, {true, nullptr});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->run_dir : "";
}

store::CsvTable table(const std::string& path) {
  auto t = store::read_csv(path);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : store::CsvTable{};
}

TEST(ProbeRun, CurvatureRowsAndNoEffectOnTheTrajectory) {
  testing::TempDir dir;
  RunConfig cfg = small_config(dir, write_pixels(dir));
  std::string plain = run(cfg, {});
  cfg.out = dir.file("probed");
  std::string probed =
      run(cfg, {"curvature:every=50,k=2,batch=64,trace=10", "symmetry:every=75", "noise:every=50,k=4"});

  auto d = analysis::diverge(plain, probed);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_FALSE(d->first_loss_step) << "probes must not change the losses";
  EXPECT_FALSE(d->first_param_step) << "probes must not change the parameters";

  store::CsvTable c = table(probed + "/curvature.csv");
  EXPECT_EQ(c.columns, store::kCurvature.names());
  ASSERT_EQ(c.rows.size(), 3u);  // steps 0, 50, 100 of 150
  for (const auto& row : c.rows) {
    double lmin = row[c.column("lambda_min")], lmax = row[c.column("lambda_max")];
    EXPECT_LE(lmin, lmax);
    EXPECT_EQ(row[c.column("converged")], 1);
    EXPECT_LE(row[c.column("lambda_min_residual")], row[c.column("tolerance")]);
    EXPECT_GT(row[c.column("hvp_count")], 2);
    EXPECT_TRUE(std::isfinite(row[c.column("trace")]));
    EXPECT_TRUE(std::isfinite(row[c.column("hessian_lipschitz")])) << "one step after every probe step";
  }
  EXPECT_EQ(c.rows[1][c.column("step")], 50);
  auto lines = testing::read_lines(probed + "/curvature_eigen.csv");
  EXPECT_EQ(lines.size(), 1u + 3 * 4);  // header + 3 steps x (2 smallest + 2 largest)
  auto sym = testing::read_lines(probed + "/symmetry.csv");
  EXPECT_EQ(sym.size(), 1u + 2 * 4);  // steps 0 and 75, four layers each
  store::CsvTable n = table(probed + "/noise.csv");
  EXPECT_EQ(n.columns, store::kNoise.names());
  EXPECT_EQ(n.rows.size(), 3u);  // steps 0, 50, 100
}

TEST(ProbeRun, DuplicatedUnitsStayIdenticalOnTheCpuUntilNoiseBreaksThem) {
  testing::TempDir dir;
  RunConfig cfg = small_config(dir, write_pixels(dir));
  cfg.init = "duplicate";
  std::string sym = run(cfg, {"symmetry:every=50"});
  auto lines = testing::read_lines(sym + "/symmetry.csv");
  // 24 -> 16 -> 4 -> 16 -> 24: the hidden layers have C(16,2) = 120, C(4,2) = 6, 120 identical pairs.
  for (const char* step : {"0", "50", "100"})
    for (const auto& [layer, pairs] : std::vector<std::pair<std::string, std::string>>{
             {"encoder.fc1", "120"}, {"encoder.fc2", "6"}, {"decoder.fc1", "120"}}) {
      std::string prefix = std::string(step) + "," + layer + ",";
      auto row = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(prefix, 0) == 0; });
      ASSERT_NE(row, lines.end()) << prefix;
      EXPECT_EQ(row->substr(prefix.size(), row->find(',', prefix.size() + 3) - prefix.size()),
                std::string(layer == "encoder.fc2" ? "4," : "16,") + pairs)
          << *row;
    }
  cfg.perturbation.kind = "gaussian";
  cfg.perturbation.sigma = 1e-6;
  cfg.out = dir.file("noisy");
  auto noisy = testing::read_lines(run(cfg, {"symmetry:every=50"}) + "/symmetry.csv");
  auto row = std::find_if(noisy.begin(), noisy.end(), [](const std::string& l) { return l.rfind("50,encoder.fc1,", 0) == 0; });
  ASSERT_NE(row, noisy.end());
  EXPECT_EQ(row->rfind("50,encoder.fc1,16,0,", 0), 0u) << "noise of 1e-6 breaks the symmetry: " << *row;
}

// One pair made of units 2 and 9 of encoder.fc1 alone: the probe sees that pair and no other, under
// either fc1 kernel. (Whether a later step keeps it depends on the BLAS: with one pair among distinct
// units, the pair's sums have distinct terms, and a GEMM may order them differently for units in
// different register tiles — studies/symmetric-saddle.toml measures it; this test does not pin it.)
TEST(ProbeRun, OnePairOfDuplicatedUnitsInOneLayerUnderEitherFc1Kernel) {
  testing::TempDir dir;
  RunConfig cfg = small_config(dir, write_pixels(dir));
  cfg.init = "duplicate";
  cfg.duplicate_layers = {"encoder.fc1"};
  cfg.duplicate_units = {2, 9};
  for (const char* kernel : {"matmul", "index_add"}) {
    cfg.fc1_kernel = kernel;
    cfg.out = dir.file(kernel);
    auto rows = store::read_table(run(cfg, {"symmetry:every=50"}), store::kSymmetry);
    ASSERT_TRUE(rows.ok()) << rows.status().message();
    ASSERT_EQ(rows->size(), 3u * 4) << "steps 0, 50, 100; four layers";
    for (const auto& row : *rows) {
      if (row.step != 0) continue;
      const bool fc1 = row.layer == "encoder.fc1";
      EXPECT_EQ(row.identical_pairs, fc1 ? 1 : 0) << kernel << " " << row.layer;
      if (fc1) EXPECT_EQ(std::make_pair(row.closest_a, row.closest_b), std::make_pair(int64_t{2}, int64_t{9}));
    }
  }
}

// index_add computes the same encoder.fc1 as the GEMM, to float32 rounding: outputs and every gradient.
TEST(ProbeRun, TheIndexAddFc1IsTheSameFunctionAsTheMatmul) {
  auto gen = at::detail::createCPUGenerator(5);
  const std::vector<int64_t> hidden = {7, 3};
  Autoencoder gemm(20, hidden, std::string("matmul")), bag(20, hidden, std::string("index_add"));
  gemm->reset_parameters(gen);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < gemm->parameters().size(); ++i) bag->parameters()[i].copy_(gemm->parameters()[i]);
  }
  torch::Tensor x = torch::rand({5, 20}, gen);
  x.masked_fill_(x < 0.4, 0);  // pixels that are 0 still add a term, as in MNIST
  for (auto* net : {&gemm, &bag}) (*net)->forward(x).pow(2).sum().backward();
  EXPECT_TRUE(torch::allclose(gemm->forward(x), bag->forward(x), 1e-6, 1e-6));
  for (size_t i = 0; i < gemm->parameters().size(); ++i)
    EXPECT_TRUE(torch::allclose(gemm->parameters()[i].grad(), bag->parameters()[i].grad(), 1e-5, 1e-6)) << i;
}

TEST(ProbeRun, BadProbesFailBeforeAnythingIsWritten) {
  testing::TempDir dir;
  RunConfig cfg = small_config(dir, write_pixels(dir));
  cfg.out = dir.file("bad");
  cfg.probes = {probes::parse_probe_spec("curvature:k=5000,iters=5000")->resolved()};
  auto r = train(cfg, {false, nullptr});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("k = 5000 exceeds the model's 956 parameters"), std::string::npos)
      << r.status().message();
  cfg.probes = {probes::parse_probe_spec("symmetry")->resolved(), probes::parse_probe_spec("symmetry:every=3")->resolved()};
  r = train(cfg, {false, nullptr});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("probe 'symmetry' given twice"), std::string::npos);
  EXPECT_FALSE(fs::exists(cfg.out));
}

// Issue 42: a run whose parameters blow up is diverged, not failed, when the curvature probe meets them
// before the loss check does (the linear network escaping the origin under SGD at a large rate).
// Each probe alone, and seeds whose blow-up the loss check or the probes' check meets first.
TEST(ProbeRun, ARunThatBlowsUpBeforeAProbeIsDivergedNotFailed) {
  testing::TempDir dir;
  for (const char* probe : {"curvature:every=5", "symmetry:every=5", "ops:every=5,k=2"})
  for (int seed : {1, 2, 3}) {
    SCOPED_TRACE(std::string(probe) + ", seed " + std::to_string(seed));
    ConfigBuilder b;
    for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"model", "linear"}, {"data", "teacher"}, {"optimizer", "sgd"}, {"lr", "0.05"}, {"init_scale", "1e-6"},
             {"perturbation", "gaussian:1e-9:absolute"}, {"probe", probe}, {"steps", "400"},
             {"threads", "1"}, {"seed", std::to_string(seed)}, {"out", dir.file("blowup")}})
      ASSERT_TRUE(b.set_flag(k, v).ok()) << k;
    auto cfg = b.resolve();
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    auto r = train(*cfg, {false, nullptr});
    ASSERT_TRUE(r.ok()) << "seed " << seed << ": " << r.status().message();
    EXPECT_EQ(r->status, store::RunStatus::kDiverged) << "seed " << seed;
    ASSERT_TRUE(r->diverged_at_step) << "seed " << seed;
    auto run = store::RunDir::open(r->run_dir);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->manifest().status, store::RunStatus::kDiverged);
    EXPECT_EQ(run->manifest().diverged_at_step, r->diverged_at_step);
    EXPECT_FALSE(run->manifest().diverged_reason.empty());
    EXPECT_TRUE(run->manifest().error.empty()) << run->manifest().error;
    // No curvature row at or after the step that diverged.
    if (std::string(probe).rfind("curvature", 0) == 0) {
      auto curvature = run->curvature();
      ASSERT_TRUE(curvature.ok());
      for (const auto& row : *curvature) EXPECT_LT(row.step, *r->diverged_at_step);
    }
  }
}

// The noise probe (issue 36) on the linear network at its saddle, the origin, with the whole training set
// as the batch: the gradient there is exactly 0 in float32 and float64 alike (every product has a zero
// factor), so the rounding perturbation is exactly 0, and a full batch has no sampling noise. With
// gaussian:σ:absolute its draw of the injected noise is σ√d within 10% (d = 48 parameters). At batch 16
// of 256 the sampling noise is positive and the rounding perturbation of float32's order.
TEST(ProbeRun, TheNoiseProbeAtTheLinearSaddleAndAwayFromIt) {
  testing::TempDir dir;
  auto noise_rows = [&](const std::vector<std::pair<std::string, std::string>>& extra) {
    ConfigBuilder b;
    std::vector<std::pair<std::string, std::string>> flags = {
        {"model", "linear"}, {"linear_hidden", "2"}, {"data", "teacher"}, {"teacher_noise", "0.1"},
        {"optimizer", "sgd"}, {"lr", "0.01"}, {"steps", "20"}, {"threads", "1"},
        {"out", dir.file("noise")}};
    flags.insert(flags.end(), extra.begin(), extra.end());
    if (std::none_of(extra.begin(), extra.end(), [](const auto& f) { return f.first == "probe"; }))
      flags.push_back({"probe", "noise:every=10,k=8"});
    for (auto [k, v] : flags) EXPECT_TRUE(b.set_flag(k, v).ok()) << k;
    auto cfg = b.resolve();
    EXPECT_TRUE(cfg.ok()) << cfg.status().message();
    auto r = train(*cfg, {false, nullptr});
    EXPECT_TRUE(r.ok()) << r.status().message();
    auto run = store::RunDir::open(r->run_dir);
    EXPECT_TRUE(run.ok());
    EXPECT_EQ(run->manifest().files.count(store::kNoise.file), 1u) << "the manifest lists noise.csv";
    auto rows = run->noise();
    EXPECT_TRUE(rows.ok()) << rows.status().message();
    return rows.ok() ? *rows : std::vector<store::NoiseRow>{};
  };
  const std::vector<std::pair<std::string, std::string>> saddle = {{"init", "zero"}, {"batch_size", "256"}};
  auto at_origin = noise_rows(saddle);
  ASSERT_EQ(at_origin.size(), 2u);  // steps 0 and 10
  for (const auto& row : at_origin) {
    EXPECT_EQ(row.batch, 256);
    EXPECT_EQ(row.examples, 8);
    EXPECT_EQ(row.grad_norm, 0.0);
    EXPECT_EQ(row.rounding_norm, 0.0) << "step " << row.step;
    EXPECT_EQ(row.sampling_norm, 0.0) << "a full batch has no sampling noise";
    EXPECT_TRUE(std::isnan(row.ratio));
    EXPECT_EQ(row.perturbation_norm, 0.0);
  }
  auto noisy = saddle;
  noisy.push_back({"perturbation", "gaussian:1e-3:absolute"});
  auto injected = noise_rows(noisy);
  ASSERT_EQ(injected.size(), 2u);
  for (const auto& row : injected) EXPECT_NEAR(row.perturbation_norm, 1e-3 * std::sqrt(48.0), 0.1e-3 * std::sqrt(48.0));
  EXPECT_EQ(injected[0].rounding_norm, 0.0) << "at the origin before any noise moved it";

  auto sgd = noise_rows({{"init_scale", "0.1"}, {"batch_size", "16"}});
  ASSERT_EQ(sgd.size(), 2u);
  for (const auto& row : sgd) {
    EXPECT_EQ(row.batch, 16);
    EXPECT_GT(row.sampling_norm, 0);
    EXPECT_GT(row.rounding_norm, 0);
    EXPECT_LT(row.rounding_relative, 1e-5) << "float32 against float64 on one gradient";
    EXPECT_DOUBLE_EQ(row.ratio, row.rounding_norm / row.sampling_norm);
  }
  // graph=true captures the passes on CUDA only; on the CPU it changes nothing, bit for bit
  // (CudaGraph.NoiseProbePassesReplayedGiveTheBitsOfEagerOnes holds the captured ones to the same).
  auto sgd_graph = noise_rows({{"init_scale", "0.1"}, {"batch_size", "16"}, {"probe", "noise:every=10,k=8,graph=true"}});
  ASSERT_EQ(sgd_graph.size(), sgd.size());
  for (size_t i = 0; i < sgd.size(); ++i) {
    EXPECT_EQ(sgd_graph[i].sampling_norm, sgd[i].sampling_norm);
    EXPECT_EQ(sgd_graph[i].rounding_norm, sgd[i].rounding_norm);
  }
}

// SGD's sampling noise from per-example gradients, against its formula worked by hand: the gradients
// (1, 0), (3, 0), (2, 3) have mean (2, 1) and squared deviations 2, 2, 4: tr Σ = 8/2 = 4.
TEST(NoiseProbe, SamplingNoiseIsTheCovarianceTraceOverTheBatch) {
  const double squares = 1 + 9 + 13, sum2 = 6 * 6 + 3 * 3;
  EXPECT_DOUBLE_EQ(probes::sampling_noise(squares, sum2, 3, 4, 0), std::sqrt(4.0 / 4));      // unbounded data
  EXPECT_DOUBLE_EQ(probes::sampling_noise(squares, sum2, 3, 4, 9), std::sqrt(4.0 / 4 * 5 / 8));  // 4 of 9
  EXPECT_EQ(probes::sampling_noise(squares, sum2, 3, 9, 9), 0.0) << "the whole set: no sampling noise";
  EXPECT_TRUE(std::isnan(probes::sampling_noise(1, 1, 1, 4, 0))) << "one gradient has no spread";
}

// The projections on v_min, worked by hand: per-example losses ½pᵀAp + b_iᵀp with A = diag(−1, 2) at
// p = 0, so g_i = b_i and v_min = ±e1 (λmin = −1). b = (1, 0), (3, 0), (2, 3): first components 1, 3, 2
// with variance 1, so at B = 3 drawn from unbounded data the sampling noise along v_min is √(1/3) and
// in all (tr Σ = 4) √(4/3). The float64 copy's loss carries an extra cᵀp, c = (1e-3, 2e-3): the
// "rounding" g₃₂ − g₆₄ = −c, 1e-3 along v_min. The noise spec comes first: the curvature probe still
// runs before it.
TEST(NoiseProbe, ProjectionsOnTheCurvatureProbesVmin) {
  testing::TempDir dir;
  const at::Tensor b = torch::tensor({1.0f, 0.0f, 3.0f, 0.0f, 2.0f, 3.0f}).view({3, 2});
  const at::Tensor a = torch::tensor({-1.0f, 2.0f});
  at::Tensor p = torch::zeros({2}).requires_grad_(true);
  // The probe examples are the rows of b, named by their indices.
  auto loss_of = [a, b](const at::Tensor& q, const at::Tensor& rows) {
    const at::Tensor bi = b.index_select(0, rows).to(q.scalar_type());
    return 0.5 * (a.to(q.scalar_type()) * q * q).sum() + (bi.matmul(q)).mean();
  };
  auto first_rows = [](int64_t first, int64_t count) { return torch::arange(first, first + count, at::kLong); };
  probes::ModelView view;
  view.params = {p};
  view.probe_loss = [=](int64_t batch) { return loss_of(p, first_rows(0, batch)); };
  view.probe_rows = first_rows;
  view.loss_on = [=](const at::Tensor& rows) { return loss_of(p, rows); };
  view.float64 = [=](int64_t batch) {
    at::Tensor q = p.detach().to(at::kDouble).requires_grad_(true);
    const at::Tensor c = torch::tensor({1e-3, 2e-3}, at::kDouble);
    return std::make_pair(std::vector<at::Tensor>{q}, probes::LossFn([=] { return loss_of(q, first_rows(0, batch)) + c.dot(q); }));
  };
  view.probe_examples = 3;
  view.batch_size = 3;
  std::vector<probes::ProbeSpec> specs = {*probes::parse_probe_spec("noise:every=10,k=3"),
                                          *probes::parse_probe_spec("curvature:every=20,k=1")};
  auto set = probes::ProbeSet::create(specs, 2, dir.path());
  ASSERT_TRUE(set.ok()) << set.status().message();
  for (int64_t step : {0, 10}) ASSERT_TRUE(set->run(step, view).ok());
  ASSERT_TRUE(set->finish().ok());
  auto rows = store::read_table(dir.path(), store::kNoise);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  const store::NoiseRow& r = (*rows)[0];
  EXPECT_NEAR(r.lambda_min, -1.0, 1e-6);
  EXPECT_NEAR(r.rounding_norm, std::sqrt(5e-6), 1e-9);
  EXPECT_NEAR(r.rounding_vmin, 1e-3, 1e-9);
  EXPECT_NEAR(r.sampling_norm, std::sqrt(4.0 / 3), 1e-6);
  EXPECT_NEAR(r.sampling_vmin, std::sqrt(1.0 / 3), 1e-6);
  const store::NoiseRow& off = (*rows)[1];  // step 10: no curvature probe there
  EXPECT_TRUE(std::isnan(off.lambda_min) && std::isnan(off.rounding_vmin) && std::isnan(off.sampling_vmin));
  EXPECT_NEAR(off.sampling_norm, r.sampling_norm, 1e-12);
}

// A probe that fails numerically on finite parameters (here a probe loss that overflows float32) is
// recorded as a failed evaluation and the run goes on.
TEST(ProbeRun, AProbeFailingOnFiniteParametersIsRecordedAndTheRunGoesOn) {
  testing::TempDir dir;
  at::Tensor p = torch::full({3}, 0.5f).requires_grad_(true);
  probes::ModelView view;
  view.params = {p};
  view.probe_loss = [p](int64_t) { return (p * 1e30f).pow(2).sum(); };  // (5e29)^2 overflows float32
  view.probe_examples = 1;
  auto specs = std::vector<probes::ProbeSpec>{*probes::parse_probe_spec("curvature:every=1,k=1,iters=3")};
  auto set = probes::ProbeSet::create(specs, 3, dir.path());
  ASSERT_TRUE(set.ok()) << set.status().message();
  for (int64_t step : {0, 1}) {
    Status s = set->run(step, view);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  EXPECT_TRUE(set->finish().ok());
  ASSERT_EQ(set->failures().size(), 2u);
  EXPECT_EQ(set->failures()[0].probe, "curvature");
  EXPECT_NE(set->failures()[0].reason.find("non-finite probe loss"), std::string::npos) << set->failures()[0].reason;
  const auto lines = testing::read_lines(dir.file("curvature.csv"));
  ASSERT_EQ(lines.size(), 3u);  // the header and a row per step
  EXPECT_NE(lines[1].find("nan"), std::string::npos) << lines[1];
}

TEST(ProbeSpec, ErrorsSayWhatWasExpected) {
  auto expect = [](const std::string& text, const std::string& message) {
    auto s = probes::parse_probe_spec(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.status().message(), "probe '" + text + "': " + message);
  };
  expect("hessian", "unknown probe 'hessian' (known: curvature, symmetry, noise, ophash, ops)");
  expect("noise:k=1", "k must be >= 2, got 1");
  expect("noise:sgd_batch=-1", "sgd_batch must be >= 0, got -1");
  expect("curvature:every=0", "every must be >= 1 (or give steps with at=), got 0");
  expect("curvature:k=0", "k must be >= 1, got 0");
  expect("curvature:k=two", "k must be an integer, got 'two'");
  expect("curvature:tol=-1", "tol must be a number > 0, got '-1'");
  expect("curvature:float64=yes", "float64 must be true or false, got 'yes'");
  expect("curvature:at=5+x", "at must be steps >= 0 joined by '+', got '5+x'");
  expect("curvature:k", "expected KEY=VALUE, got 'k'");
  expect("curvature:iters=3,k=4", "iters must be >= k, got iters=3, k=4");
  expect("symmetry:k=1", "unknown option 'k' (symmetry takes every, at)");
  auto ok = probes::parse_probe_spec("curvature:every=0,at=0+100");
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->due(100));
  EXPECT_FALSE(ok->due(50));
}

TEST(CurvatureAt, EvaluatesOnceAndNamesMissingSnapshots) {
  testing::TempDir dir;
  RunConfig cfg = small_config(dir, write_pixels(dir));
  std::string trained = run(cfg, {});
  RunConfig probe = cfg;
  probe.init_from = trained;
  auto e = curvature_at(probe, 100, "curvature:k=1,batch=64");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_LE(e->row.lambda_min, e->row.lambda_max);
  EXPECT_EQ(e->detail["lambda_min"].get<double>(), e->row.lambda_min);
  EXPECT_EQ(e->detail["parameter_count"], 956);
  auto missing = curvature_at(probe, 7, "curvature");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no snapshot at step 7"), std::string::npos);
  auto wrong = curvature_at(cfg, 100, "curvature");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "--at-step needs --init-from RUN_DIR");
  auto sym = curvature_at(cfg, -1, "symmetry");
  ASSERT_FALSE(sym.ok());
  EXPECT_NE(sym.status().message().find("expected a curvature probe"), std::string::npos);
}

}  // namespace
}  // namespace saddlescope::trainer
