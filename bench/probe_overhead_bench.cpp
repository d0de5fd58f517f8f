// Training-time overhead of a probe at its cadence (default: op taps at the ops probe's default) for
// docs/benchmarks.md: the same run with and without `--probe PROBE`, alternated REPEATS times after a
// warm-up run, on the MNIST autoencoder (batch 64) and a small PredNet on Moving MNIST.
// Usage: bench_probe_overhead DEVICE [REPEATS] [AE_STEPS] [PREDNET_STEPS] [PROBE]
//   (PROBE: a probe spec, default `ops`; MNIST in $SADDLESCOPE_DATA_DIR or data/)
// Prints min / median / max of the training loop's seconds (manifest timings.train_s), the overhead of
// the medians, and the seconds spent inside the probe (timings.tap_s for op taps, timings.probe_s for the
// others), which is the overhead without the machine's noise.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "saddlescope/base/remove_tree.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/fingerprint.h"
#include "saddlescope/trainer/train.h"

using namespace saddlescope;

namespace {

int fail(const std::string& m) {
  std::fprintf(stderr, "bench_probe_overhead: %s\n", m.c_str());
  return 1;
}

Result<trainer::RunConfig> config(const std::vector<std::pair<std::string, std::string>>& flags) {
  trainer::ConfigBuilder b;
  for (const auto& [k, v] : flags) SADDLESCOPE_RETURN_IF_ERROR(b.set_flag(k, v));
  return b.resolve();
}

struct Timing {
  double train_s = 0, tap_s = 0;
};

Result<Timing> timed(const trainer::RunConfig& cfg) {
  auto r = trainer::train(cfg, {true, nullptr});
  if (!r) return r.status();
  auto m = store::read_manifest(r->run_dir);
  if (!m) return m.status();
  return Timing{r->train_s, m->timings.tap_s + m->timings.probe_s};
}

std::string stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return fmt::format("{:.2f} / {:.2f} / {:.2f}", v.front(), v[v.size() / 2], v.back());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string device = argc > 1 ? argv[1] : "cpu";
  const int repeats = argc > 2 ? std::stoi(argv[2]) : 5;
  const std::string ae_steps = argc > 3 ? argv[3] : "2000";
  const std::string prednet_steps = argc > 4 ? argv[4] : "300";
  auto spec = probes::parse_probe_spec(argc > 5 ? argv[5] : "ops");
  if (!spec) return fail(spec.status().message());
  const std::string out = "/tmp/bench-taps";
  struct Model {
    const char* name;
    std::vector<std::pair<std::string, std::string>> flags;
  };
  const std::vector<Model> models = {
      {"autoencoder 784-256-64-256-784, MNIST, batch 64",
       {{"model", "autoencoder"}, {"data", "mnist"}, {"batch_size", "64"}, {"steps", ae_steps}}},
      {"PredNet stacks 1,16,32, Moving MNIST 32x32, nt 10, batch 4",
       {{"model", "prednet"}, {"data", "moving-mnist"}, {"canvas", "32"}, {"prednet_stacks", "1,16,32"},
        {"nt", "10"}, {"batch_size", "4"}, {"eval_sequences", "8"}, {"steps", prednet_steps}}},
  };
  const nlohmann::json fp = trainer::environment_fingerprint();
  std::printf("device %s, %d repeats, probe %s\nfingerprint: %s; %s; %s; threads %s; toolkit %s\n", device.c_str(),
              repeats, spec->resolved().c_str(), fp["cpu"]["model"].dump().c_str(), fp["libtorch"].dump().c_str(),
              fp["blas"].value("openblas_config", fp["blas"].value("name", "?")).c_str(), fp["threads"].dump().c_str(),
              fp["toolkit"].dump().c_str());
  for (const Model& model : models) {
    auto flags = model.flags;
    flags.insert(flags.end(), {{"device", device}, {"seed", "7"}, {"threads", "1"}, {"out", out},
                               {"snapshot_every", "0"}, {"log_every", "100"}});
    auto cfg = config(flags);
    if (!cfg) return fail(cfg.status().message());
    (void)remove_tree(out);
    trainer::RunConfig warm = *cfg;
    warm.steps = 20;
    if (auto w = timed(warm); !w) return fail(w.status().message());
    trainer::RunConfig tapped = *cfg;
    tapped.probes = {spec->resolved()};
    std::vector<double> plain_s, tapped_s, tap_s;
    for (int i = 0; i < repeats; ++i) {
      // Alternate the order, so that neither run always follows the other.
      for (bool with : i % 2 ? std::vector<bool>{true, false} : std::vector<bool>{false, true}) {
        auto t = timed(with ? tapped : *cfg);
        if (!t) return fail(t.status().message());
        (with ? tapped_s : plain_s).push_back(t->train_s);
        if (with) tap_s.push_back(t->tap_s);
      }
    }
    const int64_t tap_steps = (cfg->steps + spec->every - 1) / spec->every;  // steps 0, every, 2·every, ...
    std::printf("| %s | %lld steps, %lld probe steps | %s | %s | %+.1f%% | %.3f s (%.1f ms per probe step, %.2f%% of the run) |\n",
                model.name, static_cast<long long>(cfg->steps), static_cast<long long>(tap_steps),
                stats(plain_s).c_str(), stats(tapped_s).c_str(),
                100.0 * (median(tapped_s) - median(plain_s)) / median(plain_s), median(tap_s),
                1000.0 * median(tap_s) / static_cast<double>(tap_steps), 100.0 * median(tap_s) / median(tapped_s));
    std::fflush(stdout);
  }
  (void)remove_tree(out);
  return 0;
}
