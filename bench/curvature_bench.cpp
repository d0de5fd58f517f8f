// Curvature-probe costs for docs/benchmarks.md, on the MNIST autoencoder (784-256-64-256-784):
//   1. HVP time / gradient time on a 256-example probe batch (repeats: min/median/max)
//   2. HVPs that Lanczos needs for λmin and λmax to tol = 1e-3 (measured residuals), at initial and
//      at trained parameters
//   3. training-time overhead of the curvature probe at a cadence (default: the probe's default)
// Usage: bench_curvature DEVICE [STEPS] [REPEATS] [EVERY]   (needs MNIST in $SADDLESCOPE_DATA_DIR or data/)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/base/remove_tree.h"
#include "saddlescope/probes/hvp.h"
#include "saddlescope/probes/lanczos.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/trainer/autoencoder.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/execution.h"
#include "saddlescope/trainer/snapshot.h"
#include "saddlescope/trainer/train.h"

using namespace saddlescope;
using Clock = std::chrono::steady_clock;

namespace {

void sync(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize();
}

// min / median / max of `repeats` timings of f(), in milliseconds, after one warm-up call.
template <class F>
std::vector<double> time_ms(F f, int repeats, const torch::Device& d) {
  f();
  sync(d);
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = Clock::now();
    f();
    sync(d);
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2], t.back()};
}

int fail(const std::string& m) {
  std::fprintf(stderr, "bench_curvature: %s\n", m.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = argc > 1 ? argv[1] : "cpu";
  int64_t steps = argc > 2 ? std::stoll(argv[2]) : 1000;
  int repeats = argc > 3 ? std::stoi(argv[3]) : 20;
  auto probe = probes::parse_probe_spec(argc > 4 ? std::string("curvature:every=") + argv[4] : "curvature");
  if (!probe) return fail(probe.status().message());
  trainer::ConfigBuilder b;
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"device", device_name}, {"batch_size", "64"}, {"steps", std::to_string(steps)}, {"seed", "7"},
           {"out", "/tmp/bench-curvature"}, {"snapshot_every", std::to_string(steps)}})
    if (Status s = b.set_flag(k, v); !s.ok()) return fail(s.message());
  auto cfg = b.resolve();
  if (!cfg) return fail(cfg.status().message());
  if (auto a = trainer::apply_execution(cfg->execution); !a) return fail(a.status().message());
  auto data = trainer::load_dataset(*cfg);
  if (!data) return fail(data.status().message());
  torch::Device device(device_name);

  // 3. Overhead: the same run with and without the probe, after a short warm-up run so that neither
  // pays the device's start-up (CUDA context, cuBLAS handles, allocator growth).
  (void)remove_tree(cfg->out);
  trainer::RunConfig warm = *cfg;
  warm.steps = 50;
  warm.log_every = 50;
  if (auto w = trainer::train(warm, {true, nullptr}); !w) return fail(w.status().message());
  auto plain = trainer::train(*cfg, {true, nullptr});
  if (!plain) return fail(plain.status().message());
  trainer::RunConfig probed = *cfg;
  probed.probes = {probe->resolved()};
  auto with = trainer::train(probed, {true, nullptr});
  if (!with) return fail(with.status().message());

  // 1 and 2, at the initial and the trained parameters.
  trainer::Autoencoder model(784, cfg->hidden);
  auto gen = at::detail::createCPUGenerator(7);
  model->reset_parameters(gen);
  model->to(device);
  torch::Tensor x = data->train.narrow(0, 0, 256).to(device);
  auto params = model->parameters();
  std::printf("device %s, %lld steps at batch 64, probe batch 256, %d repeats\n", device_name.c_str(),
              static_cast<long long>(steps), repeats);
  for (const char* when : {"initial", "trained"}) {
    if (std::string(when) == "trained") {
      auto named = model->named_parameters();
      torch::NoGradGuard no_grad;
      model->to(torch::kCPU);
      auto cpu_named = model->named_parameters();
      if (Status s = trainer::load_parameters(trainer::snapshot_dir(plain->run_dir, steps), cpu_named); !s.ok())
        return fail(s.message());
      model->to(device);
      params = model->parameters();
    }
    probes::LossFn loss = [&] { return torch::mse_loss(model->forward(x), x); };
    auto grad = time_ms([&] { (void)torch::autograd::grad({loss()}, params); }, repeats, device);
    auto H = probes::make_hvp(loss, params);
    if (!H) return fail(H.status().message());
    torch::Tensor v = torch::randn({H->n}, torch::TensorOptions().device(device));
    auto hvp = time_ms([&] { (void)H->apply(v); }, repeats, device);
    auto build = time_ms([&] { (void)probes::make_hvp(loss, params); }, repeats, device);
    probes::LanczosOptions o;
    o.tol = 1e-3;
    o.max_iterations = 300;
    auto lgen = at::detail::createCPUGenerator(0);
    auto t0 = Clock::now();
    auto eig = probes::lanczos_extreme(*H, o, lgen);
    sync(device);
    double lanczos_s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!eig) return fail(eig.status().message());
    std::printf("| %s | %s | %.3f / %.3f / %.3f | %.3f / %.3f / %.3f | %.2f | %.3f / %.3f / %.3f | %.4g (res %.2g) | %.4g (res %.2g) | %lld%s | %.2f |\n",
                device_name.c_str(), when, grad[0], grad[1], grad[2], hvp[0], hvp[1], hvp[2], hvp[1] / grad[1],
                build[0], build[1], build[2], eig->lambda_min(), eig->smallest.front().residual, eig->lambda_max(),
                eig->largest.front().residual, static_cast<long long>(eig->hvp_count),
                eig->converged ? "" : " (not converged)", lanczos_s);
  }
  int64_t every = probe->every;
  std::printf("overhead: train_s without probe %.2f, with %s %.2f (probe %.2f s in %lld probe steps): +%.1f%%\n",
              plain->train_s, probe->text.c_str(), with->train_s, with->train_s - plain->train_s,
              static_cast<long long>((steps + every - 1) / every), 100.0 * (with->train_s - plain->train_s) / plain->train_s);
  return 0;
}
