#include "saddlescope/trainer/memory.h"

#include <gtest/gtest.h>

#include <map>
#include <new>
#include <stdexcept>

#include <torch/torch.h>

#include "saddlescope/base/memory.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/mnist.h"
#include "saddlescope/trainer/model.h"
#include "small_run.h"

namespace saddlescope::trainer {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

TEST(Memory, CheckNamesTheLargestUsesKey) {
  std::vector<MemoryUse> uses = {{"data npy:x.npy", "the data", 1 * kGiB},
                                 {"batch_size 100000", "a training step", 30 * kGiB},
                                 {"hidden [256, 64]", "the parameters", 2 * kGiB}};
  EXPECT_TRUE(check_memory(uses, static_cast<uint64_t>(40 * kGiB)).ok());
  EXPECT_EQ(check_memory(uses, static_cast<uint64_t>(24 * kGiB)).message(),
            "batch_size 100000: about 30.0 GiB for a training step; the run needs about 33.0 GiB in all, more than "
            "this machine's 24.0 GiB");
  // The total counts: no single use exceeds the limit here, but together they do.
  EXPECT_EQ(check_memory(uses, static_cast<uint64_t>(32 * kGiB)).message().rfind("batch_size 100000: ", 0), 0u);
  EXPECT_TRUE(check_memory({}, 0).ok());
}

TEST(Memory, AllocationFailuresNameTheKey) {
  EXPECT_EQ(allocating("hidden [65536]", "the model's parameters", [] { throw std::bad_alloc(); }).message(),
            "hidden [65536]: cannot allocate the model's parameters (out of memory)");
  // LibTorch's CPU allocator reports failure as a c10::Error with this text (LibTorch 1.13).
  auto c10_style = [] {
    throw std::runtime_error("[enforce fail at alloc_cpu.cpp:75] data. DefaultCPUAllocator: can't allocate memory: "
                             "you tried to allocate 17179869184 bytes. Error code 12 (Cannot allocate memory)\nbacktrace");
  };
  EXPECT_EQ(allocating("eval_sequences 9", "the held-out sequences", c10_style).message(),
            "eval_sequences 9: cannot allocate the held-out sequences ([enforce fail at alloc_cpu.cpp:75] data. "
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate 17179869184 bytes. Error code 12 "
            "(Cannot allocate memory))");
  EXPECT_THROW(allocating("k", "x", [] { throw std::runtime_error("shape mismatch"); }), std::runtime_error)
      << "other errors are not allocation failures";
  EXPECT_TRUE(allocating("k", "x", [] {}).ok());
}

TEST(Memory, LibTorchsRealAllocationFailureIsRecognised) {
  // 2^62 bytes: no machine has them, so LibTorch's allocator fails at once (nothing is touched).
  Status s = allocating("batch_size 1", "a test tensor", [] { torch::empty({int64_t{1} << 60}, torch::kFloat32); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("batch_size 1: cannot allocate a test tensor (", 0), 0u) << s.message();
}

TEST(Memory, GeneratedDataIsCheckedBeforeItIsGenerated) {
  testing::TempDir dir;
  RunConfig teacher;
  teacher.model = ModelKind::kLinear;
  teacher.data = "teacher";
  teacher.teacher.examples = int64_t{1} << 40;
  auto t = load_dataset(teacher);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message().rfind("teacher_examples 1099511627776: about 1.5 PiB for the generated teacher data; ", 0), 0u)
      << t.status().message();

  RunConfig moving;
  moving.model = ModelKind::kPredNet;
  moving.data = "moving-mnist";
  moving.data_dir = dir.path();  // no MNIST there: the check comes first
  moving.prednet.eval_sequences = int64_t{1} << 30;
  auto m = load_dataset(moving);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message().rfind("eval_sequences 1073741824: about 360.0 TiB for the held-out sequences; ", 0), 0u)
      << m.status().message();
}

TEST(Memory, ATrainingStepBeyondMemoryNamesBatchSize) {
  RunConfig cfg;
  cfg.model = ModelKind::kPredNet;
  cfg.data = "moving-mnist";
  cfg.data_dir = default_data_dir();
  cfg.prednet.eval_sequences = 4;
  auto data = load_dataset(cfg);
  ASSERT_TRUE(data.ok()) << data.status().message();
  ASSERT_TRUE(make_model(cfg, *data).ok()) << "batch 1 fits";
  cfg.batch_size = 1000000;  // generated sequences: no dataset size bounds the batch
  auto model = make_model(cfg, *data);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().message().rfind("batch_size 1000000: about ", 0), 0u) << model.status().message();
  EXPECT_NE(model.status().message().find(" for a training step (the batch, its activations and their gradients); the "
                                          "run needs about "), std::string::npos)
      << model.status().message();

  cfg.batch_size = 1;
  cfg.probes = {"curvature:batch=1000000"};
  auto probed = make_model(cfg, *data);
  ASSERT_FALSE(probed.ok());
  EXPECT_EQ(probed.status().message().rfind("probe curvature batch=1000000: about ", 0), 0u)
      << probed.status().message();
}

TEST(Memory, EstimatesGrowWithTheirKeys) {
  testing::TempDir dir;
  RunConfig cfg = testing::small_config(dir, testing::write_pixels(dir, 256, 24));
  auto data = load_dataset(cfg);
  ASSERT_TRUE(data.ok()) << data.status().message();
  auto model = make_model(cfg, *data);
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto step_bytes = [&](int64_t batch) {
    cfg.batch_size = batch;
    for (const auto& u : run_memory(cfg, *data, **model))
      if (u.key.rfind("batch_size", 0) == 0) return u.bytes;
    return -1.0;
  };
  // 24->16->4->16->24: the batch's inputs (24 per example) and twice every op's outputs, 120 per example
  // (four linear layers and their activations: 16 + 16 + 4 + 4 + 16 + 16 + 24 + 24) and the loss (1).
  EXPECT_DOUBLE_EQ(step_bytes(1), (24 + 2 * (120 + 1)) * 4.0);
  EXPECT_DOUBLE_EQ(step_bytes(8), (8 * 24 + 2 * (8 * 120 + 1)) * 4.0);
  auto uses = run_memory(cfg, *data, **model);
  EXPECT_EQ(uses[1].key, "hidden [16, 4]");
  EXPECT_EQ(uses[0].bytes, 256 * 24 * 4.0) << "eval is the training data itself: counted once";
}

// fc1_kernel = index_add gathers batch × inputs × outputs terms (autoencoder.cpp's bag): at MNIST's
// 784 × 512 they outweigh the activations by far, so they are a use of their own, named by the key
// that asks for them, in the step, the curvature probe and the evaluation (one chunk of 1000).
TEST(Memory, IndexAddsGatheredTermsAreCountedAndNamed) {
  testing::TempDir dir;
  RunConfig cfg = testing::small_config(dir, testing::write_pixels(dir, 2000, 24));
  cfg.batch_size = 8;
  cfg.probes = {"curvature:batch=4"};
  auto data = load_dataset(cfg);
  ASSERT_TRUE(data.ok()) << data.status().message();
  auto bytes_of = [&](const std::string& fc1_kernel) {
    cfg.fc1_kernel = fc1_kernel;
    auto model = make_model(cfg, *data);
    SADDLESCOPE_CHECK(model.ok());
    std::map<std::string, double> by_what;
    for (const auto& u : run_memory(cfg, *data, **model)) by_what[u.key + ": " + u.what] += u.bytes;
    return by_what;
  };
  auto matmul = bytes_of("matmul"), index_add = bytes_of("index_add");
  const double terms = 24 * 16 * 4.0;  // encoder.fc1: 24 inputs, 16 outputs, float32
  EXPECT_EQ(index_add.size(), matmul.size() + 2);
  EXPECT_DOUBLE_EQ(index_add["fc1_kernel index_add: encoder.fc1's gathered terms at batch_size 8"], 3 * 8 * terms);
  EXPECT_DOUBLE_EQ(index_add["fc1_kernel index_add: encoder.fc1's gathered terms at probe curvature batch=4"],
                   6 * 4 * terms);
  const std::string eval = "data " + cfg.data + ": the evaluation's forward pass";
  EXPECT_DOUBLE_EQ(index_add[eval] - matmul[eval], 2 * 1000 * terms) << "one chunk of the 2000 rows";

  // A batch whose terms alone exceed the machine names fc1_kernel, the key to change.
  cfg.fc1_kernel = "index_add";
  cfg.batch_size = 1 << 28;  // 1.2 TiB of terms
  auto model = make_model(cfg, *data);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().message().rfind("fc1_kernel index_add: about ", 0), 0u) << model.status().message();
}

}  // namespace
}  // namespace saddlescope::trainer
