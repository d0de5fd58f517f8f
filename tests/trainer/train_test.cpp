#include "saddlescope/trainer/train.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/autoencoder.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/execution.h"
#include "small_run.h"
#include "manifest.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

using testing::read_lines;
using testing::small_config;
using testing::write_pixels;

// metrics.csv without its last column (wall_s: wall-clock time, the one column that is not a result).
std::string metrics_without_wall(const std::string& run_dir) {
  std::string out;
  for (const auto& line : read_lines(run_dir + "/metrics.csv")) out += line.substr(0, line.rfind(',')) + "\n";
  return out;
}

TEST(Train, CompletesWritesManifestMetricsAndCatalog) {
  testing::TempDir dir;
  RunConfig cfg = small_config(dir, write_pixels(dir));
  auto r = train(cfg, {false, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, store::RunStatus::kCompleted);
  EXPECT_EQ(r->steps_completed, 150);

  auto m = testing::manifest_json(r->run_dir);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)["status"], "completed");
  EXPECT_EQ((*m)["config"]["batch_size"], 8);
  EXPECT_EQ((*m)["config"]["hidden"], nlohmann::json({16, 4}));
  EXPECT_TRUE((*m)["fingerprint"].contains("blas"));
  EXPECT_EQ((*m)["evaluation"]["split"], "train");
  EXPECT_LT((*m)["evaluation"]["mse"].get<double>(), (*m)["evaluation"]["baseline_mse"].get<double>());
  EXPECT_TRUE(fs::exists(cfg.out + "/catalog.sqlite"));

  auto lines = read_lines(r->run_dir + "/metrics.csv");
  ASSERT_EQ(lines.size(), 151u);
  EXPECT_EQ(lines[0], "step,loss,batch_grad_norm,lr,wall_s");
  EXPECT_EQ(lines[1].rfind("0,", 0), 0u);
  EXPECT_EQ(lines[150].rfind("149,", 0), 0u);
}

TEST(Train, LossFallsOnLearnableData) {
  testing::TempDir dir;
  auto r = train(small_config(dir, write_pixels(dir)), {false, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto lines = read_lines(r->run_dir + "/metrics.csv");
  auto loss = [&](size_t row) { return std::stod(lines[row].substr(lines[row].find(',') + 1)); };
  double first = 0, last = 0;
  for (size_t i = 1; i <= 10; ++i) first += loss(i), last += loss(lines.size() - i);
  EXPECT_LT(last, 0.5 * first) << "first ten " << first / 10 << ", last ten " << last / 10;
}

// The same config and seed on the CPU gives bitwise-identical metrics, at one thread and at several.
TEST(Train, SameConfigAndSeedIsBitwiseReproducibleOnCpu) {
  testing::TempDir dir;
  std::string data = write_pixels(dir);
  for (int64_t threads : {1, 2}) {
    RunConfig cfg = small_config(dir, data);
    cfg.execution.threads = threads;
    auto a = train(cfg, {false, nullptr});
    ASSERT_TRUE(a.ok()) << a.status().message();
    std::string first = metrics_without_wall(a->run_dir);
    auto b = train(cfg, {true, nullptr});
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(first, metrics_without_wall(b->run_dir)) << "threads " << threads;
    EXPECT_EQ(read_lines(a->run_dir + "/metrics.csv").size(), 151u);
  }
  // And the seed matters: another weight seed gives other losses.
  RunConfig other = small_config(dir, data);
  other.seed = 99;
  auto c = train(other, {false, nullptr});
  ASSERT_TRUE(c.ok());
  RunConfig base = small_config(dir, data);
  auto a = train(base, {true, nullptr});
  EXPECT_NE(metrics_without_wall(a->run_dir), metrics_without_wall(c->run_dir));
}

TEST(Train, NonFiniteLossEndsAsDiverged) {
  testing::TempDir dir;
  RunConfig cfg = small_config(dir, write_pixels(dir));
  cfg.lr = 1e30;
  auto r = train(cfg, {false, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, store::RunStatus::kDiverged);
  ASSERT_TRUE(r->diverged_at_step.has_value());
  auto m = testing::manifest_json(r->run_dir);
  EXPECT_EQ((*m)["status"], "diverged");
  EXPECT_EQ((*m)["diverged_at_step"], *r->diverged_at_step);
  EXPECT_TRUE((*m)["evaluation"].is_null());
  auto lines = read_lines(r->run_dir + "/metrics.csv");
  ASSERT_EQ(lines.size(), static_cast<size_t>(*r->diverged_at_step + 2));  // header + rows up to it
  std::string last_loss = lines.back().substr(lines.back().find(',') + 1);
  EXPECT_TRUE(last_loss.rfind("nan", 0) == 0 || last_loss.rfind("inf", 0) == 0) << lines.back();
}

TEST(Train, BadInputsFailBeforeAnythingIsWritten) {
  testing::TempDir dir;
  std::string data = write_pixels(dir, 10, 4);
  auto expect_error = [&](RunConfig cfg, const std::string& what) {
    auto r = train(cfg, {false, nullptr});
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
    EXPECT_FALSE(fs::exists(cfg.out)) << "nothing written for: " << what;
  };
  RunConfig big_batch = small_config(dir, data);
  big_batch.batch_size = 11;
  expect_error(big_batch, "batch_size 11 exceeds the 10 training examples");

  float bad[] = {0.5f, 1.5f, 0.f, 0.f};
  ASSERT_TRUE(store::write_npy(dir.file("f.npy"), store::Dtype::kFloat32, {2, 2}, bad).ok());
  expect_error(small_config(dir, dir.file("f.npy")), "f.npy: element 1 is 1.5");

  ASSERT_TRUE(store::write_npy(dir.file("flat.npy"), store::Dtype::kFloat32, {4}, bad).ok());
  expect_error(small_config(dir, dir.file("flat.npy")), "flat.npy: expected shape (N, features...)");

  int64_t labels[3] = {0, 1, 2};
  ASSERT_TRUE(store::write_npy(dir.file("y.npy"), store::Dtype::kFloat64, {3}, labels).ok());
  expect_error(small_config(dir, data + "," + dir.file("y.npy")), "y.npy: expected 10 labels");

  expect_error(small_config(dir, dir.file("absent.npy")), "absent.npy: cannot open");

  RunConfig gpu = small_config(dir, data);
  gpu.execution.device = {Device::Kind::kCuda, torch::cuda::is_available() ? 99 : -1};  // cuda:99 or cuda
  expect_error(gpu, "device " + gpu.execution.device.name() + ": ");
}

TEST(Autoencoder, InitialWeightsDependOnTheSeedAlone) {
  auto weights = [](uint64_t seed) {
    Autoencoder m(784, std::vector<int64_t>{256, 64});
    auto gen = at::detail::createCPUGenerator(seed);
    torch::manual_seed(seed + 1000);  // the global generator must not matter
    m->reset_parameters(gen);
    return torch::cat({m->named_parameters()["encoder.fc1.weight"].flatten(),
                       m->named_parameters()["decoder.fc2.bias"].flatten()});
  };
  EXPECT_TRUE(torch::equal(weights(7), weights(7)));
  EXPECT_FALSE(torch::equal(weights(7), weights(8)));
  EXPECT_LE(weights(7).abs().max().item<float>(), 1.0f / std::sqrt(64.0f));
}

TEST(Autoencoder, ShapesAndOutputRange) {
  Autoencoder m(784, std::vector<int64_t>{256, 64});
  auto names = m->named_parameters().keys();
  EXPECT_EQ(names, (std::vector<std::string>{"encoder.fc1.weight", "encoder.fc1.bias", "encoder.fc2.weight",
                                             "encoder.fc2.bias", "decoder.fc1.weight", "decoder.fc1.bias",
                                             "decoder.fc2.weight", "decoder.fc2.bias"}));
  auto y = m->forward(torch::rand({5, 784}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{5, 784}));
  EXPECT_GT(y.min().item<float>(), 0.0f);
  EXPECT_LT(y.max().item<float>(), 1.0f);
}

// lr_drop_at: the same run until that step, lr/10 from it on, and the metrics say which lr was used.
TEST(Train, LearningRateDropsTenfoldAtTheGivenStep) {
  testing::TempDir dir;
  std::string data = write_pixels(dir);
  RunConfig cfg = small_config(dir, data);
  auto plain = train(cfg, {false, nullptr});
  cfg.lr_drop_at = 60;
  auto dropped = train(cfg, {false, nullptr});
  ASSERT_TRUE(plain.ok() && dropped.ok());
  auto a = read_lines(plain->run_dir + "/metrics.csv"), b = read_lines(dropped->run_dir + "/metrics.csv");
  auto field = [](const std::string& line, int i) {
    std::stringstream s(line);
    std::string f;
    for (int j = 0; j <= i; ++j) std::getline(s, f, ',');
    return f;
  };
  for (int step : {0, 59, 60}) EXPECT_EQ(field(a[step + 1], 1), field(b[step + 1], 1)) << "loss at step " << step;
  EXPECT_NE(field(a[62], 1), field(b[62], 1)) << "the step-60 update used another lr";
  EXPECT_EQ(std::stod(field(b[60], 3)), 1e-2);
  EXPECT_EQ(std::stod(field(b[61], 3)), 1e-3);
}

// deterministic = strict and an op without a deterministic kernel: a one-line error naming the key.
TEST(Execution, OpWithoutDeterministicKernelIsAClearError) {
  ExecutionConfig e;
  e.threads = 1;
  e.deterministic = "strict";
  ASSERT_TRUE(apply_execution(e).ok());
  torch::Tensor x = torch::zeros({4});
  try {
    x.put_(torch::tensor({0, 0}, torch::kInt64), torch::ones({2}), /*accumulate=*/false);
    ADD_FAILURE() << "put_ ran under deterministic = strict";
  } catch (const std::exception& error) {
    EXPECT_EQ(describe_step_failure(error),
              "deterministic = strict: put_ has no deterministic implementation on this device "
              "(deterministic = warn runs it with a warning)");
  }
  e.deterministic = "warn";
  ASSERT_TRUE(apply_execution(e).ok());
  EXPECT_NO_THROW(x.put_(torch::tensor({0, 0}, torch::kInt64), torch::ones({2}), false));
  e.deterministic = "off";
  ASSERT_TRUE(apply_execution(e).ok());
  EXPECT_EQ(describe_step_failure(std::runtime_error("first line\nsecond")), "first line");
}

}  // namespace
}  // namespace saddlescope::trainer
