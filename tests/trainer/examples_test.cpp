// The shipped example modules (examples/models/): each scripted small, trained a few steps on its real
// data set through TorchScript, with the probes a user would arm. Their learning is measured by the
// studies (studies/any-model-*.toml, docs/results/any-model/); here, what the instruments see.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/data_package.h"
#include "saddlescope/trainer/train.h"
#include "small_run.h"
#include "temp_dir.h"

namespace saddlescope::trainer {
namespace {

using testing::with_keys;

class Examples : public ::testing::Test {
 protected:
  // Scripts examples/models/<script> with `args` into <dir>/<name>.pt.
  std::string script(const std::string& name, const std::string& py, const std::string& args) {
    const std::string out = dir.file(name + ".pt");
    const std::string cmd = testing::python() + " " SADDLESCOPE_SOURCE_DIR "/examples/models/" + py + " --out " + out +
                            " " + args;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return out;
  }

  // The run directory of `steps` steps of `file` on `data` with `probes`; "" on a failure.
  std::string run(const std::string& file, const std::string& data, std::vector<std::string> probes, int64_t steps = 2) {
    RunConfig base;
    base.out = dir.file("study");
    base.data_dir = default_data_dir();
    base.execution.threads = 1;
    base.batch_size = 8;
    base.seed = 1;
    base.data_seed = 1;
    base.steps = steps;
    auto cfg = with_keys(base, {{"model", "torchscript"}, {"model_file", file}, {"data", data},
                                {"loss", "cross_entropy"}, {"probe", probes}});
    EXPECT_TRUE(cfg.ok()) << cfg.status().message();
    if (!cfg.ok()) return "";
    auto r = train(*cfg, {false, nullptr});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r->run_dir : "";
  }

  // "<op> <phase> <kernel> <flag>" of every ops.csv row.
  static std::set<std::string> op_kinds(const std::string& run_dir) {
    std::set<std::string> kinds;
    auto rows = store::RunDir::open(run_dir)->ops();
    EXPECT_TRUE(rows.ok());
    if (rows.ok())
      for (const auto& r : *rows) kinds.insert(r.kernel + " " + r.phase + (r.flag == "not_evaluated" ? " listed" : " measured"));
    return kinds;
  }

  testing::TempDir dir;
};

// ConstNet (issue 39): every channel of every convolution a bitwise copy of the others at step 0.
TEST_F(Examples, ConstNetStartsWithEveryChannelOfALayerABitwiseCopy) {
  const std::string file = script("constnet", "resnet.py", "--width 4 --init constant");
  const std::string r = run(file, "cifar10:train=64", {"symmetry:every=1"}, 1);
  ASSERT_FALSE(r.empty());
  auto rows = store::RunDir::open(r)->symmetry();
  ASSERT_TRUE(rows.ok());
  int checked = 0;
  for (const auto& row : *rows) {
    if (row.step != 0 || row.layer == "head.weight") continue;  // the head's units are the classes
    EXPECT_EQ(row.identical_pairs, row.units * (row.units - 1) / 2) << row.layer;
    EXPECT_EQ(row.min_relative_distance, 0) << row.layer;
    ++checked;
  }
  EXPECT_EQ(checked, 9);  // stem, two convolutions a stage and two 1x1 projections
}

TEST_F(Examples, TheResNetsTapsCoverConvolutionsBatchNormAndTheHead) {
  const std::string r = run(script("resnet", "resnet.py", "--width 4"), "cifar10:train=64", {"ops:every=1,k=4"});
  ASSERT_FALSE(r.empty());
  const auto kinds = op_kinds(r);
  for (const char* want : {"convolution fwd measured", "convolution_backward dgrad measured",
                           "convolution_backward wgrad measured", "addmm fwd measured", "mm wgrad measured"})
    EXPECT_TRUE(kinds.count(want)) << want;
  bool batch_norm = false;
  for (const auto& k : kinds) batch_norm |= k.rfind("batch_norm fwd", 0) == 0;
  EXPECT_TRUE(batch_norm);
}

TEST_F(Examples, TheGptsTapsCoverBmmSoftmaxAndLayerNorm) {
  const std::string r = run(script("gpt", "gpt.py", "--context 16 --width 16 --heads 2 --layers 1"),
                            "moby-dick:context=16", {"ops:every=1,k=4"});
  ASSERT_FALSE(r.empty());
  const auto kinds = op_kinds(r);
  for (const char* want : {"addmm fwd measured", "bmm fwd measured", "bmm dgrad measured"})
    EXPECT_TRUE(kinds.count(want)) << want;
  bool softmax = false, layer_norm = false;
  for (const auto& k : kinds) {
    softmax |= k.rfind("softmax fwd", 0) == 0;
    layer_norm |= k.rfind("layer_norm fwd", 0) == 0;
  }
  EXPECT_TRUE(softmax);
  EXPECT_TRUE(layer_norm);
  // The attention's parameter-free ops are named by their module's full path, the ModuleList's name
  // included, though TorchScript unrolls the loop over it and records only "0.attn".
  auto rows = store::RunDir::open(r)->ops();
  ASSERT_TRUE(rows.ok());
  std::set<std::string> ops;
  for (const auto& row : *rows) ops.insert(row.op);
  EXPECT_TRUE(ops.count("blocks.0.attn:softmax"));
  EXPECT_TRUE(ops.count("blocks.0.attn:bmm"));
}

}  // namespace
}  // namespace saddlescope::trainer
