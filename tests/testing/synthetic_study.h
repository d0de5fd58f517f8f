// A small study written by hand with the run store's own writers, in which every file the analysis and
// the report read is present: two configs ("sgd-a", "sgd-b") × seeds 1-3 of a 100-step run with
// metrics (every 5 steps, to keep fuzz/'s seeds small), curvature probes (a planted saddle, escaped by
// the loss rule at a seed- and config-dependent step), op taps (config b has an element beyond its rounding bound: attribution "code"), symmetry
// probes and snapshots that differ between the configs (divergence). One run of config b does not
// learn. `saddlescope analyze` of it fills every section of analysis.json, and its report draws every
// figure. Used by the reports' tests and by fuzz/make_seeds.cpp (no GoogleTest here: errors are values).
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/table.h"

namespace saddlescope::testing {

namespace synthetic_detail {

template <class Row>
Status write_table(const std::string& dir, store::RunManifest* m, const store::Table<Row>& table,
                   const std::vector<Row>& rows) {
  auto w = store::TableWriter<Row>::create(dir, table);
  if (!w) return w.status();
  for (const Row& r : rows) w->append(r);
  SADDLESCOPE_RETURN_IF_ERROR(w->flush());
  m->files[table.file] = table.version;
  return Status::Ok();
}

// Probes every 10 steps: descending until 20, on a plateau with λmin = −1 from 30, 5% lower from
// `escape_at` on, with λmin positive again.
inline std::vector<store::CurvatureRow> curvature(int64_t escape_at) {
  std::vector<store::CurvatureRow> rows;
  for (int64_t s = 0; s <= 100; s += 10) {
    store::CurvatureRow r;
    r.step = s;
    const bool descending = s < 20, escaped = s >= escape_at;
    r.probe_loss = descending ? 2.0 - 0.05 * static_cast<double>(s) : escaped ? 0.95 : 1.0;
    r.probe_grad_norm = descending ? 4.0 : 0.1;
    r.lambda_min = escaped ? 0.5 : descending ? 0.2 : -1.0;
    r.lambda_max = 10;
    r.lambda_min_residual = r.lambda_max_residual = 1e-6;
    r.tolerance = 1e-4;
    r.converged = true;
    r.iterations = 20;
    r.g_dot_vmin = 1e-3;
    r.hvp_count = 40;
    r.trace = r.trace_se = r.negative_mass = r.negative_mass_lower = r.negative_mass_upper = NAN;
    r.hessian_lipschitz = NAN;
    rows.push_back(r);
  }
  return rows;
}

}  // namespace synthetic_detail

// Writes the study's runs under <dir>/runs/ (no analysis). Errors: what a writer said.
inline Status write_synthetic_study(const std::string& dir) {
  using namespace synthetic_detail;
  for (const char* group : {"sgd-a", "sgd-b"})
    for (int64_t seed = 1; seed <= 3; ++seed) {
      const bool b = group[4] == 'b';
      const std::string id = std::string(group) + "-s" + std::to_string(seed);
      store::RunManifest m;
      m.run_id = id;
      m.config_key = std::string("linear-cpu-") + group;
      m.status = store::RunStatus::kCompleted;
      m.config = {{"model", "linear"}, {"device", "cpu"}, {"threads", 1}, {"dtype", "float32"}, {"optimizer", "sgd"},
                  {"lr", 0.01}, {"seed", seed}, {"steps", 100}, {"tf32_matmul", b}, {"perturbation", "none"}};
      m.fingerprint = {{"host", "synthetic"}, {"cpu", {{"model", "test CPU"}, {"cores", 2}}}, {"torch", "1.13.1"}};
      m.extra["study"] = {{"name", "synthetic"}, {"config", group}, {"seed", seed}};
      m.timings.started = "2026-01-01T00:00:00Z";
      m.timings.finished = "2026-01-01T00:01:00Z";
      m.steps_completed = 100;
      m.final_loss = (b ? 0.6 : 0.3) + 0.01 * static_cast<double>(seed);
      m.evaluation = store::Evaluation{"test", b && seed == 3 ? 0.09 : 0.01, "mean training image", 0.067, {}, {}};
      auto run = store::create_run_dir(dir, id, false);
      if (!run) return run.status();

      std::vector<store::MetricsRow> metrics;
      for (int64_t s = 0; s <= 100; s += 5)
        metrics.push_back({s, 1.0 / (1.0 + 0.02 * static_cast<double>(s)) + (b ? 1e-6 : 0.0), 0.5, 0.01, 0.1 * s});
      SADDLESCOPE_RETURN_IF_ERROR(write_table(*run, &m, store::kMetrics, metrics));
      SADDLESCOPE_RETURN_IF_ERROR(write_table(*run, &m, store::kCurvature, curvature((b ? 60 : 40) + 10 * seed)));
      std::vector<store::OpRow> ops;
      for (int64_t i = 0; i < 4; ++i) {
        const double exact = 0.25 * static_cast<double>(i + 1);
        const bool beyond = b && i == 3;
        const double observed = beyond ? exact * (1 + 1e-3) : exact + (b ? 1e-8 : 0.0);
        for (const char* phase : {"fwd", "wgrad"})
          ops.push_back({0, "fc1", phase, "0:" + std::to_string(i), observed, exact, beyond ? 8389.0 : b ? 0.7 : 0.0,
                         1e-6, beyond ? 250.0 : b ? 0.01 : 0.0, phase[0] == 'w' ? -1 : 0, "linear", "float32", 16,
                         beyond ? "beyond" : "within"});
      }
      SADDLESCOPE_RETURN_IF_ERROR(write_table(*run, &m, store::kOps, ops));
      SADDLESCOPE_RETURN_IF_ERROR(write_table(
          *run, &m, store::kSymmetry,
          std::vector<store::SymmetryRow>{{0, "fc1", 4, 2, 0, 0, 1}, {50, "fc1", 4, b ? 2 : 0, b ? 0 : 1e-3, 0, 1},
                                          {100, "fc1", 4, b ? 1 : 0, b ? 1e-5 : 2e-3, 0, 1}}));
      for (int64_t step : {int64_t{0}, int64_t{50}, int64_t{100}}) {
        const std::string snap = store::snapshot_dir(*run, step);
        std::error_code ec;
        std::filesystem::create_directories(snap, ec);
        if (ec) return Status::Error(snap + ": cannot create: " + ec.message());
        float w[4] = {1.0f, 0.5f, -0.25f, b && step > 0 ? 2.0f + 1e-3f * static_cast<float>(step) : 2.0f};
        SADDLESCOPE_RETURN_IF_ERROR(store::write_npy(snap + "/fc1.weight.npy", store::Dtype::kFloat32, {2, 2}, w));
      }
      m.files[store::kSnapshotsEntry] = store::kSnapshotsVersion;
      SADDLESCOPE_RETURN_IF_ERROR(store::write_manifest(*run, m));
    }
  return Status::Ok();
}

}  // namespace saddlescope::testing
