// model = torchscript (trainer/torchscript.h): a user's module trains like the built-in models — the
// seed study's autoencoder scripted in Python gives the built-in's metrics bit for bit — and every bad
// module or loss is a one-line error before a run directory exists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/train.h"
#include "small_run.h"
#include "temp_dir.h"

namespace saddlescope::trainer {
namespace {

namespace fs = std::filesystem;

using testing::python;

void run_python(const std::string& args) {
  const std::string cmd = python() + " " + args;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// The modules of make_modules.py for the small data (24 features, 4 classes), and the autoencoder.
struct Modules {
  explicit Modules(const testing::TempDir& dir) : dir(dir.path()) {
    run_python(fmt_args(SADDLESCOPE_SOURCE_DIR "/tests/trainer/make_modules.py", dir.path() + " 24 4"));
    run_python(fmt_args(SADDLESCOPE_SOURCE_DIR "/examples/models/autoencoder.py",
                        "--out " + dir.file("autoencoder.pt") + " --features 24 --hidden 16,4"));
  }
  static std::string fmt_args(const std::string& script, const std::string& args) { return script + " " + args; }
  std::string operator[](const std::string& name) const { return dir + "/" + name + ".pt"; }
  std::string dir;
};

// Labels i % 4: the small data's prototype of row i (small_run.h).
std::string write_labels(const testing::TempDir& dir, int64_t n = 256) {
  std::vector<uint8_t> y(n);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<uint8_t>(i % 4);
  std::string path = dir.file("y.npy");
  store::write_npy(path, store::Dtype::kUInt8, {n}, y.data());
  return path;
}

using testing::with_keys;

std::vector<std::string> metrics_without_wall_time(const std::string& run_dir) {
  std::vector<std::string> rows;
  for (const auto& line : testing::read_lines(run_dir + "/metrics.csv")) rows.push_back(line.substr(0, line.rfind(',')));
  return rows;
}

class TorchScript : public ::testing::Test {
 protected:
  // The ops.csv rows of `steps` steps of module `name` with op taps every step (k = 6); none on a failure.
  std::vector<store::OpRow> op_rows(const std::string& name, int64_t steps) {
    base.steps = steps;
    auto cfg = with_keys(base, {{"model", "torchscript"}, {"model_file", modules[name]}, {"probe", {"ops:every=1,k=6"}}});
    EXPECT_TRUE(cfg.ok()) << cfg.status().message();
    if (!cfg.ok()) return {};
    auto r = train(*cfg, {false, nullptr});
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return {};
    auto rows = store::RunDir::open(r->run_dir)->ops();
    EXPECT_TRUE(rows.ok());
    return rows.ok() ? *rows : std::vector<store::OpRow>{};
  }

  testing::TempDir dir;
  Modules modules{dir};
  RunConfig base = testing::small_config(dir, testing::write_pixels(dir));
};

TEST_F(TorchScript, TheScriptedAutoencoderTrainsBitwiseAsTheBuiltIn) {
  base.snapshot_every = 0;
  auto built_in = train(base, {false, nullptr});
  ASSERT_TRUE(built_in.ok()) << built_in.status().message();

  // The same weights (the built-in run's step-0 snapshot, by parameter name), data order and steps.
  auto cfg = with_keys(base, {{"model", "torchscript"}, {"model_file", modules["autoencoder"]},
                           {"init_from", built_in->run_dir + "/snapshots/step-00000000"}});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto scripted = train(*cfg, {false, nullptr});
  ASSERT_TRUE(scripted.ok()) << scripted.status().message();

  const auto want = metrics_without_wall_time(built_in->run_dir), got = metrics_without_wall_time(scripted->run_dir);
  ASSERT_GT(want.size(), 3u);
  EXPECT_EQ(got, want);
  EXPECT_EQ(scripted->final_loss, built_in->final_loss);
  EXPECT_EQ(*scripted->eval_mse, *built_in->eval_mse);
  EXPECT_EQ(scripted->baseline, "mean training target");
}

TEST_F(TorchScript, TheManifestAndRunIdFollowTheFilesBytesNotItsPath) {
  auto a = with_keys(base, {{"model", "torchscript"}, {"model_file", modules["autoencoder"]}});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->model_sha256.size(), 64u);

  fs::copy_file(modules["autoencoder"], dir.file("elsewhere.pt"));
  auto b = with_keys(base, {{"model", "torchscript"}, {"model_file", dir.file("elsewhere.pt")}});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->identity(), b->identity());

  auto c = with_keys(base, {{"model", "torchscript"}, {"model_file", modules["classifier"]}});
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->identity(), c->identity());
  EXPECT_NE(a->identity().find(a->model_sha256), std::string::npos);

  // A resumed run names the digest it started with: a changed file is an error.
  auto changed = with_keys(base, {{"model", "torchscript"}, {"model_file", modules["autoencoder"]},
                               {"model_sha256", c->model_sha256}});
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.status().message().find("the file changed"), std::string::npos) << changed.status().message();

  // The built-in models' run ids do not change: no torchscript key is in their identity.
  EXPECT_EQ(base.identity().find("model_sha256"), std::string::npos);
  EXPECT_EQ(base.identity().find("\"loss\""), std::string::npos);
}

TEST_F(TorchScript, AClassifierLearnsAndRecordsCrossEntropyAndAccuracy) {
  base.data = "npy:" + base.data.substr(4) + "," + write_labels(dir);
  base.steps = 200;
  auto cfg = with_keys(base, {{"model", "torchscript"}, {"model_file", modules["classifier"]}, {"loss", "cross_entropy"},
                           {"probe", {"curvature:every=100,batch=64", "symmetry:every=100"}}});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto r = train(*cfg, {false, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto run = store::RunDir::open(r->run_dir);
  ASSERT_TRUE(run.ok());
  const store::Evaluation& e = *run->manifest().evaluation;
  EXPECT_EQ(e.baseline, "training class frequencies");
  ASSERT_TRUE(e.cross_entropy && e.baseline_cross_entropy && e.accuracy);
  EXPECT_NEAR(*e.baseline_cross_entropy, std::log(4.0), 1e-9);  // four balanced classes
  EXPECT_LT(*e.cross_entropy, 0.5 * *e.baseline_cross_entropy);
  EXPECT_GT(*e.accuracy, 0.9);
  EXPECT_LT(e.mse, e.baseline_mse);
  // The probes ran on the module: curvature rows at steps 0 and 100 at least, symmetry over fc1.weight and fc2.weight.
  EXPECT_GE(testing::read_lines(r->run_dir + "/curvature.csv").size(), 3u);
  const auto symmetry = testing::read_lines(r->run_dir + "/symmetry.csv");
  bool fc1 = false;
  for (const auto& l : symmetry) fc1 |= l.find("fc1.weight") != std::string::npos;
  EXPECT_TRUE(fc1);
}

TEST_F(TorchScript, TheModulesOwnLossIsTheObjective) {
  auto cfg = with_keys(base, {{"model", "torchscript"}, {"model_file", modules["module_loss"]}, {"loss", "module"}});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto r = train(*cfg, {false, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Its loss is a mean absolute error: below the first step's, and not the MSE the evaluation reports.
  const auto rows = testing::read_lines(r->run_dir + "/metrics.csv");
  const double first = std::stod(rows[1].substr(rows[1].find(',') + 1));
  EXPECT_LT(r->final_loss, first);
  EXPECT_NE(r->final_loss, *r->eval_mse);
}

// Generic taps (probes/op_observer.h) on a module: forward and backward ATen ops measured against the
// exact values, every one within its bound; the ops the reference cannot evaluate listed by name.
TEST_F(TorchScript, GenericOpTapsMeasureEveryAtenOpAndListTheRest) {
  base.data = "npy:" + base.data.substr(4) + "," + write_labels(dir);
  base.steps = 60;
  auto cfg = with_keys(base, {{"model", "torchscript"}, {"model_file", modules["classifier"]}, {"loss", "cross_entropy"},
                           {"probe", {"ops:every=50,k=4"}}});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto r = train(*cfg, {false, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto rows = store::RunDir::open(r->run_dir)->ops();
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  std::set<std::string> measured, unevaluated;
  for (const auto& row : *rows) {
    if (row.flag == "not_evaluated") {
      unevaluated.insert(row.kernel);
      EXPECT_GE(row.terms, 1);
      continue;
    }
    EXPECT_EQ(row.flag, "within") << row.op << " " << row.phase << " " << row.kernel << " " << row.index;
    measured.insert(row.op + " " + row.phase + " " + row.kernel);
  }
  for (const char* want : {"fc1:addmm fwd addmm", "fc2:addmm fwd addmm", "relu fwd relu", "fc2:addmm dgrad mm",
                           "fc2:addmm wgrad mm", "fc1:addmm wgrad mm", "fc2:addmm wgrad sum"})
    EXPECT_EQ(measured.count(want), 1u) << want << " among " << ::testing::PrintToString(measured);
  // The loss, cross_entropy_loss, whole (its inner log_softmax and nll_loss are not tapped), and its two
  // backwards, each in an autograd node of its own and named by the inner forward op that made it.
  for (const char* want : {"cross_entropy_loss fwd cross_entropy_loss", "nll_loss_forward dgrad nll_loss_backward",
                           "_log_softmax dgrad _log_softmax_backward_data"})
    EXPECT_EQ(measured.count(want), 1u) << want << " among " << ::testing::PrintToString(measured);
  for (const char* want : {"cross_entropy_loss", "nll_loss_backward", "_log_softmax_backward_data", "_log_softmax"})
    EXPECT_EQ(unevaluated.count(want), 0u) << want;
  // Steps 0 and 50 only.
  for (const auto& row : *rows) EXPECT_TRUE(row.step == 0 || row.step == 50) << row.step;
}

// Convolutions, strided, padded, grouped and dilated: forward, data gradient, weight gradient and bias
// gradient elements within their bounds, and tanh, relu, sigmoid, mse_loss beside them.
TEST_F(TorchScript, GenericTapsEvaluateConvolutionsForwardAndBackward) {
  const std::vector<store::OpRow> rows = op_rows("convnet", 2);
  ASSERT_FALSE(rows.empty());
  std::map<std::string, int> measured;
  for (const auto& row : rows) {
    if (row.flag == "not_evaluated") continue;
    EXPECT_EQ(row.flag, "within") << row.op << " " << row.phase << " " << row.kernel << " " << row.index;
    ++measured[row.op + " " + row.phase + " " + row.kernel];
  }
  for (const char* want : {"conv1:convolution fwd convolution", "conv2:convolution fwd convolution",
                           "conv2:convolution dgrad convolution_backward", "conv2:convolution wgrad convolution_backward",
                           "conv1:convolution wgrad convolution_backward", "conv2:convolution wgrad convolution_backward.grad_bias",
                           "tanh fwd tanh", "relu fwd relu", "sigmoid fwd sigmoid", "mse_loss fwd mse_loss"})
  {
    // Two tap steps of k = 6 samples; the loss has one element, a bias gradient four (the channels).
    const std::string w = want;
    const int per_step = w.find("mse_loss") != std::string::npos ? 1 : w.find("grad_bias") != std::string::npos ? 4 : 6;
    EXPECT_EQ(measured[want], 2 * per_step) << want << " among " << ::testing::PrintToString(measured);
  }
  // conv1 reads the data, which needs no gradient: no dgrad rows for it.
  EXPECT_EQ(measured.count("conv1:convolution dgrad convolution_backward"), 0u);
}

// conv2d given one-element lists ([1] for stride and padding: both axes) reaches convolution with them
// as they are; the taps evaluate it like any other.
TEST_F(TorchScript, GenericTapsEvaluateAConvolutionGivenOneValueForBothAxes) {
  const std::vector<store::OpRow> rows = op_rows("conv_lists", 1);
  ASSERT_FALSE(rows.empty());
  std::map<std::string, int> measured;
  for (const auto& row : rows) {
    EXPECT_NE(row.flag == "not_evaluated" ? row.kernel : "", "convolution") << row.op << " " << row.phase;
    if (row.flag != "not_evaluated") ++measured[row.op + " " + row.phase];
  }
  EXPECT_EQ(measured["convolution fwd"], 6) << ::testing::PrintToString(measured);
  EXPECT_EQ(measured["convolution wgrad"], 6 + 1) << ::testing::PrintToString(measured);  // weight, bias
}

// The scripted autoencoder tapped generically, every element: the same observed and exact values as the
// built-in model's own taps of its Linear layers and activations.
TEST_F(TorchScript, GenericTapsAgreeWithTheBuiltInTaps) {
  base.steps = 1;
  base.batch_size = 4;
  base.probes = {"ops:every=1,k=100000,clamp=true,wgrad=false"};
  auto built_in = train(base, {false, nullptr});
  ASSERT_TRUE(built_in.ok()) << built_in.status().message();
  auto cfg = with_keys(base, {{"model", "torchscript"}, {"model_file", modules["autoencoder"]},
                           {"init_from", built_in->run_dir + "/snapshots/step-00000000"}});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto generic = train(*cfg, {false, nullptr});
  ASSERT_TRUE(generic.ok()) << generic.status().message();
  // (kernel, which op of that kernel in forward order, index) -> (observed, exact), over every forward
  // element. The built-in names each layer (encoder.fc1.relu); the module calls one relu three times.
  auto values = [](const std::string& run, std::map<std::string, std::string> kernels, bool by_call) {
    std::map<std::tuple<std::string, int64_t, std::string>, std::pair<double, double>> v;
    std::map<std::string, std::vector<std::string>> seen;  // kernel -> ops in order
    auto rows = store::RunDir::open(run)->ops();
    EXPECT_TRUE(rows.ok());
    for (const auto& row : *rows) {
      if (row.phase != "fwd" || !kernels.count(row.kernel)) continue;
      auto& ops = seen[row.kernel];
      const std::string op = by_call ? row.op + "#" + std::to_string(row.call) : row.op;
      if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
      const auto ordinal = static_cast<int64_t>(std::find(ops.begin(), ops.end(), op) - ops.begin());
      v[{kernels[row.kernel], ordinal, row.index}] = {row.observed, row.exact};
    }
    return v;
  };
  const auto want = values(built_in->run_dir, {{"linear", "matmul"}, {"relu", "relu"}, {"sigmoid", "sigmoid"}}, false);
  const auto got = values(generic->run_dir, {{"addmm", "matmul"}, {"relu", "relu"}, {"sigmoid", "sigmoid"}}, true);
  ASSERT_EQ(want.size(), 4u * (16 + 4 + 16 + 24) * 2);  // every output of the four layers and activations
  EXPECT_EQ(got, want);
}

// Each bad module, loss or key: one line naming what was wrong, and nothing written.
TEST_F(TorchScript, BadModulesAndLossesAreOneLineErrorsBeforeAnyRunDirectory) {
  dir.write("not_a_module.pt", "this is not a zip archive");
  struct Case {
    std::map<std::string, nlohmann::json> keys;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{{"model_file", dir.file("not_a_module.pt")}}, "not a TorchScript module saved with torch.jit.save"},
      {{{"model_file", dir.file("missing.pt")}}, "missing.pt"},
      {{{"model_file", modules["wrong_input"]}}, "forward fails on input of shape (2, 24) Float"},
      {{{"model_file", modules["no_params"]}}, "the module has no parameters to train"},
      {{{"model_file", modules["float32_only"]}, {"dtype", "float64"}}, "forward fails on input of shape (2, 24) Double"},
      {{{"model_file", modules["tuple_out"]}}, "forward(x) must return the prediction as one tensor, got Tuple"},
      {{{"model_file", modules["classifier"]}}, "loss mse: model_file " + modules["classifier"] + " predicts 8 values"},
      {{{"model_file", modules["classifier"]}, {"loss", "cross_entropy"}}, "loss cross_entropy needs class labels"},
      {{{"model_file", modules["autoencoder"]}, {"loss", "module"}}, "has no scripted method loss(prediction, target)"},
      {{{"model_file", modules["autoencoder"]}, {"loss", "cross_entropy"}, {"fault", "alias-target"}},
       "alias-target needs a loss whose backward reads its target"},
      {{{"model_file", modules["autoencoder"]}, {"init", "duplicate"}}, "needs duplicate_layers"},
      {{}, "model torchscript needs model_file"},
  };
  for (const auto& c : cases) {
    std::map<std::string, nlohmann::json> keys = c.keys;
    keys["model"] = "torchscript";
    auto cfg = with_keys(base, keys);
    Status s = cfg.ok() ? train(*cfg, {false, nullptr}).status() : cfg.status();
    ASSERT_FALSE(s.ok()) << c.expected;
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
    EXPECT_FALSE(fs::exists(base.out + "/runs")) << c.expected;
  }
  // Labels that are not classes of the prediction.
  std::vector<uint8_t> y(256, 7);
  store::write_npy(dir.file("y7.npy"), store::Dtype::kUInt8, {256}, y.data());
  auto cfg = with_keys(base, {{"model", "torchscript"}, {"model_file", modules["classifier"]}, {"loss", "cross_entropy"},
                           {"data", "npy:" + base.data.substr(4) + "," + dir.file("y7.npy")}});
  ASSERT_TRUE(cfg.ok());
  Status s = train(*cfg, {false, nullptr}).status();
  EXPECT_NE(s.message().find("has label 7, but model_file " + modules["classifier"] + " predicts 4 classes"),
            std::string::npos) << s.message();
  // A torchscript key on another model.
  auto other = with_keys(base, {{"loss", "cross_entropy"}});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(), "test: config.loss: loss applies to model torchscript only (model is autoencoder)");
}

}  // namespace
}  // namespace saddlescope::trainer
