// PredNet training-step time for docs/benchmarks.md: ms/step at the defaults (64x64, stacks 1-32-64-128,
// nt = 10, L0), eager or CUDA graphs, min/median/max over repeats; and the trainer's own overhead
// (data generation, metrics, logging) as the full `train()`'s time per step over the bare step's.
// Usage: bench_prednet DEVICE BATCH MODE THREADS STEPS REPEATS [trainer]
//   MODE: eager | graph (graph needs cuda);  trainer: also time train() (REPEATS pairs of runs, STEPS and
//   3*STEPS steps, each timed after its step 20: min/median/max per step, and the overhead of the medians)
// Prints one markdown table row. Needs MNIST in $SADDLESCOPE_DATA_DIR or data/.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/base/remove_tree.h"
#include "saddlescope/store/csv.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/execution.h"
#include "saddlescope/trainer/fingerprint.h"
#include "saddlescope/trainer/moving_mnist.h"
#include "saddlescope/trainer/step.h"
#include "saddlescope/trainer/train.h"
#include "timing.h"

using namespace saddlescope;

namespace {

int fail(const std::string& m) {
  std::fprintf(stderr, "bench_prednet: %s\n", m.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) return fail("usage: bench_prednet DEVICE BATCH eager|graph THREADS STEPS REPEATS [trainer]");
  const std::string device_name = argv[1], batch = argv[2], mode = argv[3], threads = argv[4];
  const int64_t steps = std::stoll(argv[5]);
  const int repeats = std::stoi(argv[6]);
  const bool trainer_overhead = argc > 7 && std::string(argv[7]) == "trainer";
  if (mode != "eager" && mode != "graph") return fail("MODE must be eager or graph, got '" + mode + "'");

  trainer::ConfigBuilder b;
  std::vector<std::pair<std::string, std::string>> flags = {
      {"model", "prednet"}, {"data", "moving-mnist"}, {"device", device_name}, {"batch_size", batch},
      {"threads", threads}, {"steps", std::to_string(steps)}, {"eval_sequences", "8"}, {"seed", "1"},
      {"out", "/tmp/bench-prednet"}};
  if (device_name != "cpu") flags.emplace_back("cuda_graph", mode == "graph" ? "true" : "false");
  else if (mode == "graph") return fail("graph mode needs a CUDA device");
  for (const auto& [k, v] : flags)
    if (Status s = b.set_flag(k, v); !s.ok()) return fail(s.message());
  auto cfg = b.resolve();
  if (!cfg) return fail(cfg.status().message());
  if (auto a = trainer::apply_execution(cfg->execution); !a) return fail(a.status().message());
  auto data = trainer::load_dataset(*cfg);
  if (!data) return fail(data.status().message());
  torch::Device device(device_name);

  // The bare step: the trainer's TrainStep on batches generated beforehand.
  auto model = trainer::make_model(*cfg, *data);
  if (!model) return fail(model.status().message());
  auto gen = at::detail::createCPUGenerator(1);
  if (Status s = (*model)->initialise(gen, "default"); !s.ok()) return fail(s.message());
  (*model)->module().to(device);
  std::vector<torch::Tensor> batches;
  for (int64_t i = 0; i < 8; ++i)
    batches.push_back(trainer::frames_to_input(data->sequences->batch(i * cfg->batch_size, cfg->batch_size)).to(device));
  trainer::Perturber none{trainer::Perturbation{}};
  bench::Spread bare{};
  {
    gpu::SideStream stream(device);
    trainer::TrainStep step(**model, none, trainer::DeviceAdam::Options{}, mode == "graph");
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
  if (trainer_overhead) {
    // Pairs of trainer runs, STEPS and 3*STEPS long. Each run's steady part is its time after step
    // kSettled (warm-up, capture and the first chunk of data are behind it; metrics.csv's wall_s), so
    // start-up, whose cost varies by a few hundred ms from run to run, drops out; the difference of a
    // pair over 2*STEPS steps is the per-step cost of the whole loop, chunk switches and metric reads
    // included. REPEATS pairs give its spread.
    constexpr int64_t kSettled = 20;
    if (steps <= kSettled) return fail("trainer overhead needs STEPS > 20");
    std::vector<double> per_step_ms;
    for (int r = 0; r < repeats; ++r) {
      double steady[2];
      for (int64_t i : {0, 1}) {
        trainer::RunConfig c = *cfg;
        c.steps = (1 + 2 * i) * steps;
        c.log_every = std::min<int64_t>(100, c.steps);
        (void)remove_tree(c.out);
        auto run = trainer::train(c, {false, nullptr});
        if (!run) return fail(run.status().message());
        auto metrics = store::read_csv(run->run_dir + "/metrics.csv");
        if (!metrics) return fail(metrics.status().message());
        steady[i] = run->train_s - metrics->rows[kSettled][metrics->column("wall_s")];
      }
      per_step_ms.push_back((steady[1] - steady[0]) * 1e3 / static_cast<double>(2 * steps));
    }
    bench::Spread t = bench::spread(per_step_ms);
    overhead = fmt::format(" {:.2f} / {:.2f} / {:.2f} ({:+.1f}%) |", t.min, t.median, t.max,
                           100 * (t.median / bare.median - 1));
    (void)remove_tree(cfg->out);
  }
  nlohmann::json fp = trainer::environment_fingerprint();
  std::printf("| %s | %s | %s | %s | %.2f | %.2f | %.2f |%s\n", device_name.c_str(), batch.c_str(), mode.c_str(),
              threads.c_str(), bare.min, bare.median, bare.max, overhead.c_str());
  std::fprintf(stderr, "fingerprint: %s\n", fp.dump().c_str());
  return 0;
}
