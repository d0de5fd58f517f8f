#include "saddlescope/trainer/dataset.h"

#include <gtest/gtest.h>

#include <map>

#include "saddlescope/store/sha256.h"
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

}  // namespace
}  // namespace saddlescope::trainer
