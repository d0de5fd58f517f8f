// Curvature-probe costs for docs/benchmarks.md, on the MNIST autoencoder (784-256-64-256-784, batch 64)
// or PredNet on Moving MNIST (batch 4; default size: stacks 1,32,64,128 on 64×64, nt 10; small:
// stacks 1,8,16,32 on 32×32, nt 10), with the probe's defaults for the model (batch 256 / 8):
//   1. HVP time / gradient time on the probe batch (repeats: min/median/max), and the operator build
//   2. HVPs that Lanczos needs for λmin and λmax to tol = 1e-3 (measured residuals), at initial and
//      at trained parameters
//   3. training-time overhead of the curvature probe at a cadence (default: the probe's default), from
//      PAIRS alternating runs without and with the probe after a warm-up run: train_s of each, and the
//      probe's own seconds (manifest timings.probe_s), min/median/max; and from the medians, what a probe
//      step costs in training steps and so in overhead at the probe's cadence (EVERY may exceed STEPS)
// On CUDA the HVP is timed eagerly and as the probe runs it (captured once, replayed: graph=true).
// Usage: bench_curvature DEVICE [STEPS] [REPEATS] [EVERY] [--model autoencoder|prednet] [--size default|small]
//                        [--threads N] [--batch N] [--probe-batch N] [--pairs N] [--spec OPTIONS]
//   (needs MNIST in $SADDLESCOPE_DATA_DIR or data/; OPTIONS are extra probe options, e.g. float64=true)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/base/remove_tree.h"
#include "saddlescope/gpu/graph.h"
#include "saddlescope/probes/hvp.h"
#include "saddlescope/probes/lanczos.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/execution.h"
#include "saddlescope/trainer/model.h"
#include "saddlescope/trainer/moving_mnist.h"
#include "saddlescope/trainer/snapshot.h"
#include "saddlescope/trainer/train.h"
#include "timing.h"

using namespace saddlescope;
using Clock = std::chrono::steady_clock;

namespace {

// bench::time_ms after one untimed call of f (first-call set-up is not what is measured).
template <class F>
bench::Spread timed_after_warmup(F f, int repeats, const torch::Device& d) {
  f();
  return bench::time_ms(f, repeats, d);
}

std::string mmm(const bench::Spread& s, const char* format = "%.3f") {
  std::string out;
  for (double x : {s.min, s.median, s.max}) {
    char buf[32];
    std::snprintf(buf, sizeof buf, format, x);
    out += (out.empty() ? "" : " / ") + std::string(buf);
  }
  return out;
}

int fail(const std::string& m) {
  std::fprintf(stderr, "bench_curvature: %s\n", m.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  std::map<std::string, std::string> flags = {{"--model", "autoencoder"}, {"--size", "default"}, {"--threads", ""},
                                              {"--probe-batch", ""}, {"--pairs", "3"}, {"--spec", ""},
                                              {"--batch", ""}};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      positional.push_back(a);
    } else if (!flags.count(a) || i + 1 == argc) {
      return fail("unknown flag or missing value: " + a);
    } else {
      flags[a] = argv[++i];
    }
  }
  std::string device_name = positional.size() > 0 ? positional[0] : "cpu";
  int64_t steps = positional.size() > 1 ? std::stoll(positional[1]) : 1000;
  int repeats = positional.size() > 2 ? std::stoi(positional[2]) : 20;
  const std::string model = flags["--model"], size = flags["--size"];
  auto kind = trainer::parse_model(model);
  if (!kind || *kind == trainer::ModelKind::kLinear) return fail("--model must be autoencoder or prednet");
  const bool prednet = *kind == trainer::ModelKind::kPredNet;
  if (size != "default" && size != "small") return fail("--size must be default or small");

  std::vector<std::pair<std::string, std::string>> keys = {
      {"device", device_name}, {"steps", std::to_string(steps)}, {"seed", "7"}, {"model", model},
      {"out", "/tmp/bench-curvature"}, {"snapshot_every", std::to_string(steps)}};
  if (prednet) {
    keys.insert(keys.end(), {{"data", "moving-mnist"}, {"batch_size", "4"}, {"eval_sequences", "4"}});
    if (size == "small") keys.insert(keys.end(), {{"prednet_stacks", "1,8,16,32"}, {"canvas", "32"}});
  } else {
    if (size != "default") return fail("--size small is for --model prednet");
    keys.insert(keys.end(), {{"data", "mnist"}, {"batch_size", "64"}});
  }
  if (!flags["--threads"].empty()) keys.push_back({"threads", flags["--threads"]});
  if (!flags["--batch"].empty()) keys.push_back({"batch_size", flags["--batch"]});
  trainer::ConfigBuilder b;
  for (const auto& [k, v] : keys)
    if (Status s = b.set_flag(k, v); !s.ok()) return fail(s.message());
  auto cfg = b.resolve();
  if (!cfg) return fail(cfg.status().message());

  std::string spec_text = "curvature";
  auto add_option = [&](const std::string& o) { spec_text += (spec_text == "curvature" ? ":" : ",") + o; };
  if (positional.size() > 3) add_option("every=" + positional[3]);
  if (!flags["--probe-batch"].empty()) add_option("batch=" + flags["--probe-batch"]);
  if (!flags["--spec"].empty()) add_option(flags["--spec"]);
  auto probe = probes::parse_probe_spec(spec_text, trainer::probe_defaults(*kind));
  if (!probe) return fail(probe.status().message());
  const int64_t probe_batch = probe->get_int("batch");

  auto applied = trainer::apply_execution(cfg->execution);
  if (!applied) return fail(applied.status().message());
  auto data = trainer::load_dataset(*cfg);
  if (!data) return fail(data.status().message());
  torch::Device device(device_name);

  // 3. Overhead: a warm-up run so that no timed run pays the device's start-up (CUDA context, cuBLAS
  // handles, allocator growth), then alternating runs without and with the probe: on a shared machine
  // the load drifts, and alternation spreads the drift over both.
  (void)remove_tree(cfg->out);
  trainer::RunConfig warm = *cfg;
  warm.steps = std::min<int64_t>(steps, 50);
  warm.log_every = warm.steps;
  warm.out = cfg->out + "/warm";
  if (auto w = trainer::train(warm, {true, nullptr}); !w) return fail(w.status().message());
  trainer::RunConfig probed = *cfg;
  probed.probes = {probe->resolved()};
  std::vector<double> plain_s, with_s, probe_s;
  std::string plain_dir;
  for (int pair = 0; pair < std::stoi(flags["--pairs"]); ++pair) {
    auto plain = trainer::train(*cfg, {true, nullptr});
    if (!plain) return fail(plain.status().message());
    plain_dir = plain->run_dir;
    auto with = trainer::train(probed, {true, nullptr});
    if (!with) return fail(with.status().message());
    auto manifest = store::read_manifest(with->run_dir);
    if (!manifest) return fail(manifest.status().message());
    plain_s.push_back(plain->train_s);
    with_s.push_back(with->train_s);
    probe_s.push_back(manifest->timings.probe_s);
  }

  // 1 and 2, at the initial and the trained parameters.
  auto made = trainer::make_model(*cfg, *data);
  if (!made) return fail(made.status().message());
  std::shared_ptr<trainer::Model> net = *made;
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(cfg->seed));
  if (Status s = net->initialise(gen, "default"); !s.ok()) return fail(s.message());
  net->module().to(device);
  torch::Tensor x = prednet ? trainer::frames_to_input(data->sequences->batch(int64_t{1} << 40, probe_batch))
                            : data->train.narrow(0, 0, std::min(probe_batch, data->train.size(0)));
  x = x.to(device);
  int64_t n_params = 0;
  for (const auto& p : net->module().parameters()) n_params += p.numel();
  std::printf("%s %s (%lld parameters), device %s, %lld threads, %lld steps at batch %lld, probe batch %lld, "
              "%d repeats\n", model.c_str(), size.c_str(), static_cast<long long>(n_params), device_name.c_str(),
              static_cast<long long>(cfg->execution.threads), static_cast<long long>(steps),
              static_cast<long long>(cfg->batch_size), static_cast<long long>(x.size(0)), repeats);
  std::printf("| parameters | gradient ms | HVP ms | HVP / gradient (medians) | HVP ms, CUDA graph | operator build ms "
              "| lambda_min (residual) | lambda_max (residual) | HVPs for lambda_min, lambda_max to 1e-3 | Lanczos s |\n");
  gpu::SideStream stream(device);  // where the probe runs in training: graphs cannot capture the default stream
  const bool graph = device.is_cuda() && probe->get_bool("graph");
  for (const char* when : {"initial", "trained"}) {
    if (std::string(when) == "trained") {
      net->module().to(torch::kCPU);
      auto named = net->module().named_parameters();
      if (Status s = trainer::load_parameters(store::snapshot_dir(plain_dir, steps), named); !s.ok())
        return fail(s.message());
      net->module().to(device);
    }
    auto params = net->module().parameters();
    probes::LossFn loss = [&] { return net->loss(x); };
    auto grad = timed_after_warmup([&] { (void)torch::autograd::grad({loss()}, params); }, repeats, device);
    auto H = probes::make_hvp(loss, params);
    if (!H) return fail(H.status().message());
    torch::Tensor v = torch::randn({H->n}, torch::TensorOptions().device(device));
    auto hvp = timed_after_warmup([&] { (void)H->apply(v); }, repeats, device);
    auto G = probes::make_hvp(loss, params, graph);  // the probe's operator: replayed HVPs on CUDA
    if (!G) return fail(G.status().message());
    std::string graph_ms = "—";
    if (graph) {
      (void)G->apply(v);  // the eager call before the capture
      graph_ms = mmm(timed_after_warmup([&] { (void)G->apply(v); }, repeats, device));
    }
    auto build = timed_after_warmup([&] { (void)probes::make_hvp(loss, params); }, repeats, device);
    probes::LanczosOptions o;
    o.tol = 1e-3;
    o.max_iterations = 300;
    auto lgen = at::detail::createCPUGenerator(0);
    auto t0 = Clock::now();
    auto eig = probes::lanczos_extreme(*G, o, lgen);
    bench::sync(device);
    double lanczos_s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!eig) return fail(eig.status().message());
    std::printf("| %s | %s | %s | %.2f | %s | %s | %.4g (%.2g) | %.4g (%.2g) | %lld%s | %.2f |\n", when,
                mmm(grad).c_str(), mmm(hvp).c_str(), hvp.median / grad.median, graph_ms.c_str(), mmm(build).c_str(), eig->lambda_min(),
                eig->smallest.front().residual, eig->lambda_max(), eig->largest.front().residual,
                static_cast<long long>(eig->hvp_count), eig->converged ? "" : " (not converged)", lanczos_s);
  }
  auto p = bench::spread(plain_s), w = bench::spread(with_s), q = bench::spread(probe_s);
  int64_t every = probe->every > 0 ? probe->every : steps, probe_steps = (steps + every - 1) / every;
  double step_s = p.median / static_cast<double>(steps), per_probe = q.median / static_cast<double>(probe_steps);
  std::printf("overhead of %s, %zu pairs of %lld-step runs (%lld probe steps each):\n"
              "  train_s without %s, with %s; probe_s %s\n"
              "  overhead (medians) %+.1f%%; probe_s / train_s without (medians) %.1f%%\n"
              "  a probe step costs %.3f s = %.0f training steps; at every=%lld that is %.1f%% of training\n",
              probe->resolved().c_str(), plain_s.size(), static_cast<long long>(steps),
              static_cast<long long>(probe_steps), mmm(p, "%.2f").c_str(), mmm(w, "%.2f").c_str(),
              mmm(q, "%.3f").c_str(), 100.0 * (w.median - p.median) / p.median, 100.0 * q.median / p.median, per_probe,
              per_probe / step_s, static_cast<long long>(every), 100.0 * per_probe / (step_s * every));
  return 0;
}
