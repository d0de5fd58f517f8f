// The planted fault alias-target (trainer/step.h): the loss's target buffer overwritten by the next
// batch's target between forward and backward. The logged loss stays right, the gradient is the one
// against the next batch's target, exactly; fault none changes nothing (golden_test, and the run ids).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/initial.h"
#include "saddlescope/trainer/perturbation.h"
#include "saddlescope/trainer/step.h"
#include "saddlescope/trainer/train.h"
#include "small_run.h"
#include "temp_dir.h"

namespace saddlescope::trainer {
namespace {

RunConfig linear_config(const testing::TempDir& dir) {
  RunConfig c;
  c.model = ModelKind::kLinear;
  c.data = "teacher";
  c.teacher.examples = 64;
  c.linear_hidden = 2;
  c.batch_size = 8;
  c.lr = 1e-2;
  c.init_scale = 0.5;
  c.steps = 20;
  c.log_every = 10;
  c.execution.threads = 1;
  c.seed = 1;
  c.out = dir.file("study");
  c.data_dir = dir.path();
  return c;
}

RunConfig prednet_config(const testing::TempDir& dir) {
  ConfigBuilder b;
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model", "prednet"}, {"data", "moving-mnist"}, {"canvas", "28"}, {"digits", "1"}, {"nt", "3"},
           {"prednet_stacks", "1,2"}, {"prednet_loss", "pixel_mse"}, {"steps", "4"}, {"batch_size", "2"},
           {"threads", "1"}, {"eval_sequences", "4"}, {"log_every", "2"}, {"out", dir.file("study")}})
    EXPECT_TRUE(b.set_flag(k, v).ok()) << k;
  return *b.resolve();
}

std::string train_with(RunConfig cfg, const std::string& fault) {
  cfg.fault = fault;
  cfg.snapshot_grads = true;
  auto r = train(cfg, {true, nullptr});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->run_dir : "";
}

// Step 0: the same logged loss, other gradients.
void expect_same_loss_other_gradients(const RunConfig& cfg) {
  std::string none = train_with(cfg, "none"), faulty = train_with(cfg, "alias-target");
  auto a = store::RunDir::open(none), b = store::RunDir::open(faulty);
  ASSERT_TRUE(a.ok() && b.ok());
  auto ma = a->metrics(), mb = b->metrics();
  ASSERT_TRUE(ma.ok() && mb.ok());
  EXPECT_EQ(ma->at(0).loss, mb->at(0).loss) << "the forward's loss is the right one";
  EXPECT_NE(ma->at(0).batch_grad_norm, mb->at(0).batch_grad_norm) << "the gradient is against another target";
  auto ga = a->snapshot_grads(0), gb = b->snapshot_grads(0);
  ASSERT_TRUE(ga.ok() && gb.ok());
  int differ = 0;
  for (const auto& [name, arr] : *ga) differ += arr.bytes != gb->at(name).bytes;
  EXPECT_EQ(differ, static_cast<int>(ga->size())) << "every parameter's gradient changes";
  EXPECT_NE(b->manifest().run_id, a->manifest().run_id);
  EXPECT_NE(b->manifest().run_id.find("-fault.alias-target-"), std::string::npos) << b->manifest().run_id;
}

TEST(AliasTarget, ChangesTheGradientButNotTheLoggedLossOfStepZero) {
  testing::TempDir dir;
  {
    SCOPED_TRACE("autoencoder");
    expect_same_loss_other_gradients(testing::small_config(dir, testing::write_pixels(dir)));
  }
  {
    SCOPED_TRACE("linear");
    expect_same_loss_other_gradients(linear_config(dir));
  }
  {
    SCOPED_TRACE("prednet pixel_mse");
    expect_same_loss_other_gradients(prednet_config(dir));
  }
}

// One step by hand: the buffer holds the next batch's target afterwards, the network's input is
// untouched, and the gradients are exactly those of the MSE against the next batch's target.
TEST(AliasTarget, TheOverwrittenTargetIsTheNextBatchsAndTheGradientIsAgainstIt) {
  testing::TempDir dir;
  for (RunConfig cfg : {testing::small_config(dir, testing::write_pixels(dir)), linear_config(dir)}) {
    SCOPED_TRACE(model_name(cfg.model));
    auto data = load_dataset(cfg);
    ASSERT_TRUE(data.ok()) << data.status().message();
    Perturber none{Perturbation{}};
    nlohmann::json unused;
    auto faulty = initial_model(cfg, *data, none, &unused), reference = initial_model(cfg, *data, none, &unused);
    ASSERT_TRUE(faulty.ok() && reference.ok());
    torch::Tensor x0 = data->train.narrow(0, 0, 4).to(torch::kFloat32);
    torch::Tensor x1 = data->train.narrow(0, 4, 4).to(torch::kFloat32);
    torch::Tensor x0_copy = x0.clone();
    TrainStep step(**faulty, none, OptimizerOptions{}, /*graphs=*/false, /*alias_target=*/true);
    step.compute(x0, false, x1);
    EXPECT_TRUE(torch::equal(step.fault_target(), (*faulty)->loss_target(x1))) << "the next batch's target";
    EXPECT_TRUE(torch::equal(x0, x0_copy)) << "the input is not overwritten";

    Model& m = **reference;
    torch::Tensor right = m.loss(x0);
    EXPECT_EQ(step.loss().item<float>(), right.item<float>()) << "the logged loss is the right one";
    m.loss_against(x0, m.loss_target(x1).clone()).backward();  // the MSE against the next target
    auto got = (*faulty)->module().named_parameters(), want = m.module().named_parameters();
    for (const auto& item : want)
      EXPECT_TRUE(torch::equal(got[item.key()].grad(), item.value().grad())) << item.key();
  }
}

TEST(AliasTarget, PredNetL0IsAConfigError) {
  ConfigBuilder b;
  ASSERT_TRUE(b.set_flag("model", "prednet").ok());
  ASSERT_TRUE(b.set_flag("data", "moving-mnist").ok());
  ASSERT_TRUE(b.set_flag("fault", "alias-target").ok());
  auto c = b.resolve();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind("--fault: alias-target needs a loss whose backward reads its target", 0), 0u)
      << c.status().message();
}

}  // namespace
}  // namespace saddlescope::trainer
