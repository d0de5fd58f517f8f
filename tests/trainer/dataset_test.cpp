#include "saddlescope/trainer/dataset.h"

#include <gtest/gtest.h>

#include <map>

#include <torch/torch.h>

#include "saddlescope/store/sha256.h"
#include "saddlescope/trainer/batches.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/mnist.h"
#include "small_run.h"

namespace saddlescope::trainer {
namespace {

// Dataset::digests records the SHA-256 of every file the data came from, for the manifest.
TEST(Dataset, DigestsNameEveryFileRead) {
  testing::TempDir dir;
  std::string x = testing::write_pixels(dir, 16, 4);
  std::vector<double> labels(16, 1.0);
  ASSERT_TRUE(store::write_npy(dir.file("y.npy"), store::Dtype::kFloat64, {16}, labels.data()).ok());
  RunConfig cfg = testing::small_config(dir, x);
  auto alone = load_dataset(cfg);
  ASSERT_TRUE(alone.ok()) << alone.status().message();
  EXPECT_EQ(alone->digests, (std::map<std::string, std::string>{{x, *store::sha256_file(x)}}));
  cfg.data = "npy:" + x + "," + dir.file("y.npy");
  auto with_labels = load_dataset(cfg);
  ASSERT_TRUE(with_labels.ok()) << with_labels.status().message();
  EXPECT_EQ(with_labels->digests, (std::map<std::string, std::string>{
                                      {x, *store::sha256_file(x)},
                                      {dir.file("y.npy"), *store::sha256_file(dir.file("y.npy"))}}));

  RunConfig mnist;
  mnist.data_dir = default_data_dir();
  auto m = load_dataset(mnist);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->digests.size(), 4u);
  EXPECT_EQ(m->digests.at("mnist/train-images-idx3-ubyte"),
            "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db");

  RunConfig teacher;
  teacher.model = ModelKind::kLinear;
  teacher.data = "teacher";
  auto t = load_dataset(teacher);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t->digests.empty()) << "generated: no file";
}

// A TorchScript module's config on `data` from the project's cache, under loss cross_entropy.
RunConfig module_config(const std::string& data) {
  RunConfig cfg;
  cfg.model = ModelKind::kTorchScript;
  cfg.loss = "cross_entropy";
  cfg.data = data;
  cfg.data_dir = default_data_dir();
  return cfg;
}

// Moby Dick as next-byte examples: each row's second half is its first half shifted by one byte, the
// first 90% of the text for training and the rest held out.
// Moving MNIST's batches are made on the run's device from uint8 frames: a CUDA run's are the CPU run's
// bits (CUDA's div_ by a scalar would round half the byte values otherwise: moving_mnist.h).
TEST(Dataset, MovingMnistBatchesOnCudaAreTheHostsBits) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
  ConfigBuilder b;
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model", "prednet"}, {"data", "moving-mnist"}, {"canvas", "32"}, {"nt", "5"}})
    ASSERT_TRUE(b.set_flag(k, v).ok()) << k;
  auto cfg = b.resolve();
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto data = load_dataset(*cfg);
  ASSERT_TRUE(data.ok()) << data.status().message();
  Batches cpu(*data, 7, torch::kCPU, torch::kFloat32), cuda(*data, 7, torch::kCUDA, torch::kFloat32);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(torch::equal(cpu.next(4), cuda.next(4).cpu())) << "batch " << i;
}

TEST(Dataset, MobyDickRowsAreBytesAndTheirSuccessors) {
  RunConfig cfg = module_config("moby-dick:context=32");
  auto d = load_dataset(cfg);
  ASSERT_TRUE(d.ok()) << d.status().message();
  const int64_t cut = 1204997 * 9 / 10;
  EXPECT_EQ(d->train.size(0), (cut - 1) / 32);
  EXPECT_EQ(d->eval.size(0), (1204997 - cut - 1) / 32);
  EXPECT_EQ(d->train.size(1), 64);
  EXPECT_EQ(d->input_shape, (std::vector<int64_t>{32}));
  EXPECT_EQ(d->target_columns, 32);
  const std::string start = "CHAPTER 1. Loomings.";
  for (size_t i = 0; i < start.size(); ++i) EXPECT_EQ(d->train[0][i].item<float>(), static_cast<float>(start[i]));
  EXPECT_TRUE(d->train.narrow(1, 32, 31).equal(d->train.narrow(1, 1, 31)));  // y_t = x_{t+1}
  EXPECT_EQ(d->train[1][0].item<float>(), d->train[0][63].item<float>());    // windows tile the text
  EXPECT_EQ(d->digests.at("moby-dick/data.txt"), "fe282a57094ed62e7144fb7c804a9748fc1c909bf3b49d06e7276015f9f67240");

  cfg.loss = "mse";
  EXPECT_EQ(load_dataset(cfg).status().message(),
            "data moby-dick:context=32 holds next-byte targets: loss must be cross_entropy or module, not mse");
  cfg.model = ModelKind::kAutoencoder;
  EXPECT_EQ(load_dataset(cfg).status().message(),
            "data moby-dick:context=32 is for model torchscript (a module of your own), not autoencoder");
}

TEST(Dataset, Cifar10RowsArePixelsChannelsFirstThenTheLabel) {
  RunConfig cfg = module_config("cifar10:train=100");
  auto d = load_dataset(cfg);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->train.sizes(), (std::vector<int64_t>{100, 3073}));
  EXPECT_EQ(d->eval.sizes(), (std::vector<int64_t>{10000, 3073}));
  EXPECT_EQ(d->input_shape, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_FLOAT_EQ(d->eval[0][0].item<float>(), 158 / 255.0f);
  EXPECT_EQ(d->eval[0][3072].item<float>(), 3);  // a cat
  EXPECT_EQ(d->digests.size(), 4u);              // data_batch_1.png, test_batch.png and both label files
  cfg.loss = "mse";                              // an autoencoder's data: pixels only
  auto pixels = load_dataset(cfg);
  ASSERT_TRUE(pixels.ok()) << pixels.status().message();
  EXPECT_EQ(pixels->train.size(1), 3072);
}

}  // namespace
}  // namespace saddlescope::trainer
