// The ophash probe on a planted op whose result depends on the order it sums in: two "runs" of the same
// three ops, one summing a tensor laid out column-major, are told apart at that op, from equal inputs.
#include "saddlescope/probes/op_hashes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <torch/torch.h>

#include "saddlescope/analysis/first_op.h"
#include "saddlescope/store/table.h"
#include "temp_dir.h"

namespace saddlescope::probes {
namespace {

// Steps 0..2 of: a = x·w (mul), s = Σ_rows a (sum), r = relu(s). With `transposed_from` = 1, from step 1
// on the sum reads `a` laid out column-major: the same values in another order in memory, so the
// reduction adds them in another order — a planted order-dependent op. The layout change (a copy and
// two transposes) only moves data, which the trace leaves out.
std::vector<store::OpHashRow> run(const std::string& dir, int64_t transposed_from) {
  auto spec = parse_probe_spec("ophash");
  EXPECT_TRUE(spec.ok());
  torch::manual_seed(7);
  const at::Tensor x = torch::randn({4096, 64}), w = torch::randn({64});
  std::filesystem::create_directories(dir);
  auto hashes = OpHashes::create({*spec}, {{"layer.w", w}}, dir);
  if (!hashes.ok()) {
    ADD_FAILURE() << hashes.status().message();
    return {};
  }
  for (int64_t step = 0; step < 3; ++step) {
    EXPECT_TRUE((*hashes)->due(step));
    (*hashes)->begin();
    at::Tensor a = x * w;
    if (step >= transposed_from) a = a.t().contiguous().t();
    const at::Tensor r = torch::relu(a.sum(0));
    (*hashes)->end();
    EXPECT_TRUE((*hashes)->write(step).ok());
  }
  auto rows = store::read_table(dir, store::kOpHash);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  return rows.ok() ? *rows : std::vector<store::OpHashRow>{};
}

TEST(OpHashes, APlantedOrderDependentSumIsFoundFromEqualInputs) {
  testing::TempDir dir;
  const auto a = run(dir.file("a"), 99), same = run(dir.file("same"), 99), b = run(dir.file("b"), 1);
  ASSERT_EQ(a.size(), 9u) << "three ops a step";
  EXPECT_EQ(a[0].op, "layer:mul") << "named by the parameter it reads";
  EXPECT_EQ(a[1].op, "sum");
  EXPECT_EQ(a[1].shape, "64");
  EXPECT_EQ(a[2].op, "relu");
  EXPECT_EQ(a[1].outputs, a[2].inputs) << "relu's input is sum's output";
  EXPECT_EQ(a[1].inputs.size(), 16u);

  auto none = analysis::first_divergent_op(a, same);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->found) << "the same ops on the same inputs: the same bits";

  auto f = analysis::first_divergent_op(a, b);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_TRUE(f->found) << "the column-major sum gave the same bits: no order dependence on this machine";
  EXPECT_EQ(f->step, 1);
  EXPECT_EQ(f->index, 1);
  EXPECT_EQ(f->op, "sum");
  EXPECT_EQ(f->kind, "inputs equal");
}

}  // namespace
}  // namespace saddlescope::probes
