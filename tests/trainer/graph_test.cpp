// CUDA-graph steps give the bits of eager steps. These need a CUDA device: on a CPU-only build they
// skip (the CPU runs every step eagerly); they run on the GPU host.
#include "saddlescope/gpu/graph.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <torch/torch.h>

#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/train.h"
#include "small_run.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

bool have_cuda() { return gpu::cuda_graphs_available() && torch::cuda::is_available(); }

std::string bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every column of metrics.csv but wall_s, and every byte of every snapshot.
void expect_same_results(const std::string& a, const std::string& b) {
  auto la = testing::read_lines(a + "/metrics.csv"), lb = testing::read_lines(b + "/metrics.csv");
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); ++i) EXPECT_EQ(la[i].substr(0, la[i].rfind(',')), lb[i].substr(0, lb[i].rfind(',')));
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(a + "/snapshots")) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), a).string();
    EXPECT_EQ(bytes(e.path().string()), bytes(b + "/" + rel)) << rel;
    ++files;
  }
  EXPECT_GT(files, 0);
}

RunConfig tiny_prednet(const testing::TempDir& dir, const std::string& out, bool graph,
                       const std::string& perturbation,
                       const std::vector<std::pair<std::string, std::string>>& more = {}) {
  ConfigBuilder b;
  auto flags = std::vector<std::pair<std::string, std::string>>{
           {"model", "prednet"}, {"data", "moving-mnist"}, {"canvas", "32"}, {"digits", "1"}, {"nt", "3"},
           {"prednet_stacks", "1,2,4"}, {"steps", "12"}, {"batch_size", "2"}, {"device", "cuda"},
           {"eval_sequences", "8"}, {"log_every", "5"}, {"snapshot_every", "4"}, {"snapshot_grads", "true"},
           {"lr_drop_at", "6"}, {"perturbation", perturbation}, {"cuda_graph", graph ? "true" : "false"},
           {"out", dir.file(out)}};
  flags.insert(flags.end(), more.begin(), more.end());
  for (auto [k, v] : flags)
    EXPECT_TRUE(b.set_flag(k, v).ok()) << k;
  auto c = b.resolve();
  EXPECT_TRUE(c.ok()) << c.status().message();
  return *c;
}

TEST(CudaGraph, ReplaysGiveTheBitsOfEagerSteps) {
  if (!have_cuda()) GTEST_SKIP() << "needs a CUDA device";
  // stochastic-rounding: the update stays eager while the forward/backward is replayed.
  for (const char* perturbation : {"none", "gaussian:0.001", "stochastic-rounding", "shuffle-reduction"}) {
    testing::TempDir dir;
    auto eager = train(tiny_prednet(dir, "eager", false, perturbation), {false, nullptr});
    auto graph = train(tiny_prednet(dir, "graph", true, perturbation), {false, nullptr});
    ASSERT_TRUE(eager.ok()) << eager.status().message();
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    SCOPED_TRACE(perturbation);
    expect_same_results(eager->run_dir, graph->run_dir);
  }
}

// ophash on steps after the capture: those steps run eagerly, the update too (a trace that read a tensor
// back inside a capture would fail there), every op is recorded, and the bits are the eager run's.
TEST(CudaGraph, OphashStepsRunEagerlyUpdateIncluded) {
  if (!have_cuda()) GTEST_SKIP() << "needs a CUDA device";
  testing::TempDir dir;
  auto eager = train(tiny_prednet(dir, "eager", false, "none"), {false, nullptr});
  auto graph = train(tiny_prednet(dir, "graph", true, "none", {{"probe", "ophash:at=8+9"}}), {false, nullptr});
  ASSERT_TRUE(eager.ok()) << eager.status().message();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  expect_same_results(eager->run_dir, graph->run_dir);
  auto lines = testing::read_lines(graph->run_dir + "/ophash.csv");
  int update_rows[2] = {0, 0};
  for (const auto& line : lines)
    for (int s : {8, 9})
      if (line.rfind(std::to_string(s) + ",", 0) == 0 && line.find(",update,") != std::string::npos) ++update_rows[s - 8];
  EXPECT_GT(update_rows[0], 0) << "the update of step 8 traced";
  EXPECT_EQ(update_rows[0], update_rows[1]) << "the same update ops at both steps";
}

// Armed on every step, ophash lets the step's graphs be captured with its digest kernels in them and
// replays them: ophash.csv of a graphed run (steps 0-1 eager warm-up, 2 captured, 3-11 replayed) is that
// of an eager run line for line, the update's rows included, and so are the results.
TEST(CudaGraph, OphashOnEveryStepReplaysGraphsWithTheDigestsOfEagerSteps) {
  if (!have_cuda()) GTEST_SKIP() << "needs a CUDA device";
  testing::TempDir dir;
  auto eager = train(tiny_prednet(dir, "eager", false, "none", {{"probe", "ophash"}}), {false, nullptr});
  auto graph = train(tiny_prednet(dir, "graph", true, "none", {{"probe", "ophash"}}), {false, nullptr});
  ASSERT_TRUE(eager.ok()) << eager.status().message();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  expect_same_results(eager->run_dir, graph->run_dir);
  const auto a = testing::read_lines(eager->run_dir + "/ophash.csv");
  const auto b = testing::read_lines(graph->run_dir + "/ophash.csv");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "line " << i;
  int update_rows = 0;
  for (const auto& line : b) update_rows += line.rfind("11,", 0) == 0 && line.find(",update,") != std::string::npos;
  EXPECT_GT(update_rows, 0) << "step 11's update replayed with its rows";
}

// The noise probe's per-example passes as a captured graph (noise:graph=true) give the bits of eager
// passes: noise.csv the same in every column but probe_s, on PredNet and on the autoencoder (whose
// curvature probe gives the projections on v_min too).
TEST(CudaGraph, NoiseProbePassesReplayedGiveTheBitsOfEagerOnes) {
  if (!have_cuda()) GTEST_SKIP() << "needs a CUDA device";
  testing::TempDir dir;
  auto columns = [](const std::string& run) {
    std::vector<std::string> out;
    for (const auto& l : testing::read_lines(run + "/noise.csv")) out.push_back(l.substr(0, l.rfind(',')));
    return out;
  };
  for (const char* model : {"prednet", "autoencoder"}) {
    SCOPED_TRACE(model);
    std::string runs[2];
    for (int graphed = 0; graphed < 2; ++graphed) {
      const std::string spec = std::string("noise:at=0+8,k=4") + (graphed ? ",graph=true" : "");
      RunConfig cfg = std::string(model) == "prednet"
                          ? tiny_prednet(dir, std::string(model) + std::to_string(graphed), true, "none",
                                         {{"probe", spec}})
                          : testing::small_config(dir, testing::write_pixels(dir));
      if (std::string(model) == "autoencoder") {
        cfg.execution.device = {Device::Kind::kCuda, -1};
        cfg.steps = 12;
        cfg.out = dir.file(std::string(model) + std::to_string(graphed));
        cfg.probes = {probes::parse_probe_spec(spec)->resolved(),
                      probes::parse_probe_spec("curvature:at=0+8,k=1,batch=8")->resolved()};
      }
      auto r = train(cfg, {false, nullptr});
      ASSERT_TRUE(r.ok()) << r.status().message();
      runs[graphed] = r->run_dir;
    }
    const auto eager = columns(runs[0]), graphed = columns(runs[1]);
    ASSERT_EQ(eager.size(), 3u);  // the header and steps 0 and 8
    EXPECT_EQ(eager, graphed);
  }
}

// kernels = fused: the project's own kernels are captured with the rest of the step.
TEST(CudaGraph, FusedKernelsReplayGivesTheBitsOfEagerSteps) {
  if (!have_cuda()) GTEST_SKIP() << "needs a CUDA device";
  testing::TempDir dir;
  auto eager = train(tiny_prednet(dir, "eager", false, "none", {{"kernels", "fused"}}), {false, nullptr});
  auto graph = train(tiny_prednet(dir, "graph", true, "none", {{"kernels", "fused"}}), {false, nullptr});
  ASSERT_TRUE(eager.ok()) << eager.status().message();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  expect_same_results(eager->run_dir, graph->run_dir);
}

// SGD (with and without momentum, and under stochastic rounding) and the fault alias-target, whose
// target buffer is overwritten inside the captured compute graph: replays give the eager bits.
TEST(CudaGraph, SgdAndAliasTargetReplaysGiveTheBitsOfEagerSteps) {
  if (!have_cuda()) GTEST_SKIP() << "needs a CUDA device";
  using Flags = std::vector<std::pair<std::string, std::string>>;
  const std::vector<std::pair<std::string, Flags>> cases = {
      {"none", {{"optimizer", "sgd"}, {"lr", "0.05"}}},
      {"none", {{"optimizer", "sgd"}, {"momentum", "0.9"}, {"lr", "0.05"}}},
      {"stochastic-rounding", {{"optimizer", "sgd"}, {"momentum", "0.9"}, {"lr", "0.05"}}},
      {"none", {{"prednet_loss", "pixel_mse"}, {"fault", "alias-target"}}},
      {"shuffle-reduction", {{"prednet_loss", "pixel_mse"}, {"fault", "alias-target"}, {"optimizer", "sgd"}}},
  };
  int i = 0;
  for (const auto& [perturbation, flags] : cases) {
    testing::TempDir dir;
    SCOPED_TRACE(::testing::Message() << "case " << i++);
    auto eager = train(tiny_prednet(dir, "eager", false, perturbation, flags), {false, nullptr});
    auto graph = train(tiny_prednet(dir, "graph", true, perturbation, flags), {false, nullptr});
    ASSERT_TRUE(eager.ok()) << eager.status().message();
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    expect_same_results(eager->run_dir, graph->run_dir);
  }
}

// The fault on CUDA is the fault on the CPU: the same logged loss at step 0 as fault none, and other
// gradients (autoencoder and linear network, graphs on).
TEST(CudaGraph, AliasTargetKeepsTheLossAndChangesTheGradientOnCuda) {
  if (!have_cuda()) GTEST_SKIP() << "needs a CUDA device";
  testing::TempDir dir;
  for (const char* model : {"autoencoder", "linear"}) {
    SCOPED_TRACE(model);
    std::vector<std::string> grad_norms, losses;
    for (const char* fault : {"none", "alias-target"}) {
      ConfigBuilder b;
      for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
               {"model", model}, {"data", std::string(model) == "linear" ? "teacher" : "npy:" + testing::write_pixels(dir)},
               {"hidden", "16,4"}, {"steps", "6"}, {"batch_size", "4"}, {"device", "cuda"}, {"log_every", "6"},
               {"fault", fault}, {"out", dir.file(std::string(model) + fault)}})
        ASSERT_TRUE(b.set_flag(k, v).ok()) << k;
      auto cfg = b.resolve();
      ASSERT_TRUE(cfg.ok()) << cfg.status().message();
      auto r = train(*cfg, {false, nullptr});
      ASSERT_TRUE(r.ok()) << r.status().message();
      auto lines = testing::read_lines(r->run_dir + "/metrics.csv");
      ASSERT_GE(lines.size(), 2u);
      std::string row = lines[1];  // step,loss,batch_grad_norm,...
      size_t a = row.find(','), c = row.find(',', a + 1), d = row.find(',', c + 1);
      losses.push_back(row.substr(a + 1, c - a - 1));
      grad_norms.push_back(row.substr(c + 1, d - c - 1));
    }
    EXPECT_EQ(losses[0], losses[1]);
    EXPECT_NE(grad_norms[0], grad_norms[1]);
  }
}

// The embedding-bag encoder.fc1 (index_add: atomic adds unless deterministic) is captured and replayed
// like the GEMM: with deterministic algorithms the replays give the eager bits; without, the run works
// (its bits may differ run to run: that is what it is for). Duplicated PredNet channels under graphs too.
TEST(CudaGraph, IndexAddFc1AndDuplicatedChannelsReplayAsEager) {
  if (!have_cuda()) GTEST_SKIP() << "needs a CUDA device";
  testing::TempDir dir;
  auto autoencoder = [&](const std::string& out, bool graph, const std::string& deterministic) {
    ConfigBuilder b;
    for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"data", "npy:" + testing::write_pixels(dir)}, {"hidden", "16,4"}, {"steps", "12"}, {"batch_size", "4"},
             {"device", "cuda"}, {"log_every", "4"}, {"snapshot_every", "4"}, {"fc1_kernel", "index_add"},
             {"init", "duplicate"}, {"deterministic", deterministic}, {"cuda_graph", graph ? "true" : "false"},
             {"out", dir.file(out)}})
      EXPECT_TRUE(b.set_flag(k, v).ok()) << k;
    auto cfg = b.resolve();
    EXPECT_TRUE(cfg.ok()) << cfg.status().message();
    auto r = train(*cfg, {false, nullptr});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r->run_dir : std::string();
  };
  expect_same_results(autoencoder("eager", false, "strict"), autoencoder("graph", true, "strict"));
  EXPECT_FALSE(autoencoder("racing", true, "off").empty());
  for (const char* det : {"off", "strict"}) {
    SCOPED_TRACE(det);
    auto flags = std::vector<std::pair<std::string, std::string>>{
        {"init", "duplicate"}, {"duplicate_layers", "l2.r"}, {"duplicate_units", "0,3"}, {"deterministic", det}};
    auto eager = train(tiny_prednet(dir, std::string("pe-") + det, false, "none", flags), {false, nullptr});
    auto graph = train(tiny_prednet(dir, std::string("pg-") + det, true, "none", flags), {false, nullptr});
    ASSERT_TRUE(eager.ok()) << eager.status().message();
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    if (std::string(det) == "strict") expect_same_results(eager->run_dir, graph->run_dir);
  }
}

TEST(CudaGraph, WarmsUpCapturesOnceThenReplays) {
  if (!have_cuda()) GTEST_SKIP() << "needs a CUDA device";
  torch::Tensor count = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(torch::kCUDA));
  {
    gpu::SideStream stream(count.device());
    gpu::GraphedWork work(true, "test", 2);
    int host_calls = 0;
    auto fn = [&] {
      ++host_calls;
      count.add_(1);
    };
    for (int i = 0; i < 5; ++i) work.run(fn);
    EXPECT_TRUE(work.captured());
    EXPECT_EQ(host_calls, 3) << "two warm-up calls and the capture";
    work.run(fn, /*eager=*/true);
    EXPECT_EQ(host_calls, 4);
  }
  EXPECT_EQ(count.item<double>(), 6.0) << "every call did its work once";
}

TEST(CudaGraph, DisabledRunsEverythingEagerly) {
  gpu::GraphedWork work(false);
  int calls = 0;
  for (int i = 0; i < 4; ++i) work.run([&] { ++calls; });
  EXPECT_EQ(calls, 4);
  EXPECT_FALSE(work.captured());
}

}  // namespace
}  // namespace saddlescope::trainer
