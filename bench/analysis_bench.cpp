// `saddlescope analyze` at scale: a synthetic study of R runs × S steps (10 groups, metrics every step,
// curvature every 100 steps with a planted saddle episode, snapshots at 0 and S of 1,000 parameters),
// written once, then analyze_study timed over repeats (min / median / max), with a baseline group (9
// comparisons, 9·R/10 paired runs) and over every pair of groups (45 comparisons).
// Run: build/bench/bench_analysis [RUNS [STEPS [REPEATS [DIR]]]]   (defaults 1000 10000 3 /tmp/...)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "saddlescope/analysis/study_analysis.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/table.h"

namespace {

using namespace saddlescope;

constexpr int kGroups = 10;
constexpr int64_t kParams = 1000;

template <class Row>
void write(const std::string& dir, store::RunManifest* m, const store::Table<Row>& table, const std::vector<Row>& rows) {
  auto w = store::TableWriter<Row>::create(dir, table);
  if (!w) throw std::runtime_error(w.status().message());
  for (const Row& r : rows) w->append(r);
  if (Status s = w->flush(); !s.ok()) throw std::runtime_error(s.message());
  m->files[table.file] = table.version;
}

void add_run(const std::string& study, int group, int64_t seed, int64_t steps) {
  const std::string id = fmt::format("g{}-s{}", group, seed);
  store::RunManifest m;
  m.run_id = id;
  m.config_key = fmt::format("key-g{}", group);
  m.status = store::RunStatus::kCompleted;
  m.config = {{"model", "autoencoder"}, {"device", "cpu"}, {"seed", seed}, {"optimizer", "adam"}, {"steps", steps}};
  m.extra["study"] = {{"name", "bench"}, {"config", fmt::format("g{}", group)}, {"seed", seed}};
  m.fingerprint = {{"host", "bench"}};
  m.timings.started = "2026-01-01T00:00:00Z";
  m.timings.finished = "2026-01-01T01:00:00Z";
  m.steps_completed = steps;
  m.final_loss = 0.1 + 0.01 * group + 1e-4 * static_cast<double>(seed % 7);
  auto dir = store::create_run_dir(study, id, false);
  if (!dir) throw std::runtime_error(dir.status().message());
  const int64_t escape = steps / 4 + 100 * group + 10 * (seed % 5);
  std::vector<store::MetricsRow> metrics;
  metrics.reserve(static_cast<size_t>(steps));
  for (int64_t s = 0; s < steps; ++s)
    metrics.push_back({s, 1.0 / (1.0 + 1e-3 * static_cast<double>(s)) + 1e-6 * group, 0.5, 1e-3, 1e-3 * static_cast<double>(s)});
  write(*dir, &m, store::kMetrics, metrics);
  std::vector<store::CurvatureRow> curvature;
  for (int64_t s = 0; s < steps; s += 100) {
    store::CurvatureRow r;
    r.step = s;
    const bool plateau = s >= steps / 8 && s < escape;
    r.probe_loss = plateau ? 0.5 : s < steps / 8 ? 2.0 - static_cast<double>(s) / static_cast<double>(steps) : 0.3;
    r.probe_grad_norm = plateau ? 0.01 : 1.0;
    r.lambda_min = plateau ? -0.5 : 0.1;
    r.lambda_max = 10;
    r.g_dot_vmin = 1e-4;
    r.trace = r.trace_se = r.negative_mass = r.negative_mass_lower = r.negative_mass_upper = r.hessian_lipschitz = NAN;
    curvature.push_back(r);
  }
  write(*dir, &m, store::kCurvature, curvature);
  std::vector<float> w(static_cast<size_t>(kParams));
  for (int64_t step : {int64_t{0}, steps}) {
    for (int64_t i = 0; i < kParams; ++i) w[static_cast<size_t>(i)] = 1.0f + (step > 0 ? 1e-4f * static_cast<float>(group) : 0.0f);
    const std::string snap = store::snapshot_dir(*dir, step);
    std::filesystem::create_directories(snap);
    if (Status s = store::write_npy(snap + "/w.npy", store::Dtype::kFloat32, {kParams}, w.data()); !s.ok())
      throw std::runtime_error(s.message());
  }
  m.files[store::kSnapshotsEntry] = store::kSnapshotsVersion;
  if (Status s = store::write_manifest(*dir, m); !s.ok()) throw std::runtime_error(s.message());
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t runs = argc > 1 ? std::atoll(argv[1]) : 1000;
  const int64_t steps = argc > 2 ? std::atoll(argv[2]) : 10000;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  const std::string study = argc > 4 ? argv[4] : fmt::format("/tmp/saddlescope-analysis-bench-{}x{}", runs, steps);
  if (!std::filesystem::exists(study + "/runs")) {
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < runs; ++i) add_run(study, static_cast<int>(i % kGroups), i / kGroups, steps);
    std::printf("wrote %lld runs x %lld steps to %s in %.1f s\n", static_cast<long long>(runs),
                static_cast<long long>(steps), study.c_str(), seconds_since(t0));
  }
  for (const char* baseline : {"g0", ""}) {
    analysis::AnalysisOptions o;
    o.baseline = baseline;
    o.permutations = 9999;
    o.resamples = 9999;
    std::vector<double> t;
    size_t comparisons = 0;
    for (int r = 0; r < repeats; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      auto a = analysis::analyze_study(study, o);
      t.push_back(seconds_since(t0));
      if (!a) {
        std::fprintf(stderr, "%s\n", a.status().message().c_str());
        return 1;
      }
      comparisons = (*a)["comparisons"].size();
    }
    std::sort(t.begin(), t.end());
    std::printf("analyze %lld runs x %lld steps, %s (%zu comparisons): min %.2f s, median %.2f s, max %.2f s\n",
                static_cast<long long>(runs), static_cast<long long>(steps),
                *baseline ? "baseline g0" : "every pair", comparisons, t.front(), t[t.size() / 2], t.back());
  }
  return 0;
}
