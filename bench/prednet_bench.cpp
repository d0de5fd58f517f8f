// PredNet training-step time for docs/benchmarks.md: ms/step at the defaults (64x64, stacks 1-32-64-128,
// nt = 10, L0), eager or CUDA graphs, min/median/max over repeats; and the trainer's own overhead
// (data generation, metrics, logging) as the full `train()`'s time per step over the bare step's.
// Usage: bench_prednet DEVICE BATCH MODE THREADS STEPS REPEATS [trainer]
//   MODE: eager | graph (graph needs cuda), with "+fused" for kernels = fused (eager+fused, graph+fused);
//   trainer: also time train() (REPEATS runs of STEPS steps, each
//   in a process of its own, timed between metric reads: min/median/max per step, and the overhead of
//   the medians)
// Prints one markdown table row. Needs MNIST in $SADDLESCOPE_DATA_DIR or data/.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/base/remove_tree.h"
#include "saddlescope/store/csv.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/fingerprint.h"
#include "saddlescope/trainer/moving_mnist.h"
#include "saddlescope/trainer/step.h"
#include "saddlescope/trainer/train.h"
#include "prednet_setup.h"
#include "timing.h"

using namespace saddlescope;

namespace {

int fail(const std::string& m) {
  std::fprintf(stderr, "bench_prednet: %s\n", m.c_str());
  return 1;
}

// One trainer run of STEPS steps, ms per step. The trainer reads its metrics every kWindow steps, which
// waits for the device, so the step after a read starts on an idle device: metrics.csv's wall_s at
// such steps are device-synchronised clocks. Their difference over whole windows from step kWindow on
// is the loop's true cost per step, chunk switches and metric reads included, with start-up (capture,
// the first chunk; a few hundred ms that vary between runs) left out. Between reads the host runs
// ahead of the device, so other steps' wall_s would not do.
Result<double> trainer_ms(const trainer::RunConfig& cfg) {
  constexpr int64_t kWindow = 100;
  if (cfg.steps < 3 * kWindow || cfg.steps % kWindow != 0)
    return Status::Error("trainer overhead needs STEPS a multiple of 100, >= 300");
  trainer::RunConfig c = cfg;
  c.log_every = kWindow;
  (void)remove_tree(c.out);
  auto run = trainer::train(c, {false, nullptr});
  if (!run) return run.status();
  auto metrics = store::read_csv(run->run_dir + "/metrics.csv");
  (void)remove_tree(c.out);
  if (!metrics) return metrics.status();
  const int wall = metrics->column("wall_s");
  const int64_t first = kWindow, last = cfg.steps - kWindow;
  return (metrics->rows[last][wall] - metrics->rows[first][wall]) * 1e3 / static_cast<double>(last - first);
}

// REPEATS of trainer_ms, each in a fresh process (this program with `trainer-only`), as
// `saddlescope train` runs: what a process did before can change a run's speed (on the H200 a second
// train() in one process once ran 14% slower than the first; see gpu::SideStream).
Result<std::vector<double>> trainer_ms_alone(char** argv, int repeats) {
  std::error_code ec;
  std::string cmd = "'" + std::filesystem::read_symlink("/proc/self/exe", ec).string() + "'";  // not the shell's
  if (ec) return Status::Error("/proc/self/exe: " + ec.message());
  for (int i = 1; i <= 5; ++i) cmd += std::string(" '") + argv[i] + "'";
  cmd += " 1 trainer-only";  // REPEATS is not used there; its errors go to our stderr
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return Status::Error("cannot run " + cmd);
    std::string out;
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    double x;
    if (::pclose(p) != 0 || !(std::istringstream(out) >> x)) return Status::Error("trainer-only run failed (its errors above)");
    ms.push_back(x);
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) return fail("usage: bench_prednet DEVICE BATCH eager|graph[+fused] THREADS STEPS REPEATS [trainer]");
  const std::string device_name = argv[1], batch = argv[2], threads = argv[4];
  std::string mode = argv[3];
  const bool fused = mode.size() > 6 && mode.substr(mode.size() - 6) == "+fused";
  if (fused) mode.resize(mode.size() - 6);
  const int64_t steps = std::stoll(argv[5]);
  const int repeats = std::stoi(argv[6]);
  const std::string extra = argc > 7 ? argv[7] : "";
  if (!extra.empty() && extra != "trainer" && extra != "trainer-only")
    return fail("the last argument must be trainer, got '" + extra + "'");
  if (mode != "eager" && mode != "graph") return fail("MODE must be eager or graph, got '" + mode + "'");

  std::vector<std::pair<std::string, std::string>> flags = {
      {"model", "prednet"}, {"data", "moving-mnist"}, {"device", device_name}, {"batch_size", batch},
      {"threads", threads}, {"steps", std::to_string(steps)}, {"eval_sequences", "8"}, {"seed", "1"},
      {"out", "/tmp/bench-prednet"}, {"kernels", fused ? "fused" : "libtorch"}};
  if (device_name != "cpu") flags.emplace_back("cuda_graph", mode == "graph" ? "true" : "false");
  else if (mode == "graph") return fail("graph mode needs a CUDA device");
  auto setup = bench::prednet_setup(flags);
  if (!setup) return fail(setup.status().message());
  const trainer::RunConfig& cfg = setup->cfg;
  const trainer::Dataset& data = setup->data;
  torch::Device device(device_name);
  if (extra == "trainer-only") {  // the child of trainer_ms_alone
    auto ms = trainer_ms(cfg);
    if (!ms) return fail(ms.status().message());
    std::printf("%.6f\n", *ms);
    return 0;
  }

  // The bare step: the trainer's TrainStep on batches generated beforehand.
  auto model = trainer::make_model(cfg, data);
  if (!model) return fail(model.status().message());
  auto gen = at::detail::createCPUGenerator(1);
  if (Status s = (*model)->initialise(gen, "default"); !s.ok()) return fail(s.message());
  (*model)->module().to(device);
  std::vector<torch::Tensor> batches;
  for (int64_t i = 0; i < 8; ++i)
    batches.push_back(trainer::frames_to_input(data.sequences->batch(i * cfg.batch_size, cfg.batch_size)).to(device));
  trainer::Perturber none{trainer::Perturbation{}};
  bench::Spread bare{};
  {
    gpu::SideStream stream(device);
    trainer::TrainStep step(**model, none, trainer::optimizer_options(cfg), mode == "graph");
    int64_t i = 0;
    auto run = [&](int64_t n) {
      for (int64_t s = 0; s < n; ++s, ++i) {
        step.compute(batches[i % batches.size()]);
        step.update();
      }
    };
    run(3);  // warm-up: cuDNN/cuBLAS set-up, and the graph capture
    bare = bench::time_ms([&] { run(steps); }, repeats, device, static_cast<double>(steps));
    if (!std::isfinite(step.loss().item<double>())) return fail("the loss is not finite");
  }

  std::string overhead = "";
  if (extra == "trainer") {
    auto ms = trainer_ms_alone(argv, repeats);
    if (!ms) return fail(ms.status().message());
    bench::Spread t = bench::spread(*ms);
    overhead = fmt::format(" {:.2f} / {:.2f} / {:.2f} ({:+.1f}%) |", t.min, t.median, t.max,
                           100 * (t.median / bare.median - 1));
  }
  nlohmann::json fp = trainer::environment_fingerprint();
  std::printf("| %s | %s | %s | %s | %.2f | %.2f | %.2f |%s\n", device_name.c_str(), batch.c_str(), argv[3],
              threads.c_str(), bare.min, bare.median, bare.max, overhead.c_str());
  std::fprintf(stderr, "fingerprint: %s\n", fp.dump().c_str());
  return 0;
}
