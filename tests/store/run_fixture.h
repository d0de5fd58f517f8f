// Run directories written by hand for the store's tests: a manifest through write_manifest and CSV
// tables through TableWriter — the writers the trainer uses — so the tests read what runs write.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/table.h"

namespace saddlescope::testing {

inline std::string this_host() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// A manifest as the trainer writes it for an autoencoder run on the CPU: every execution axis in the
// config; completed runs have a final loss, an evaluation and timings.
inline store::RunManifest make_manifest(const std::string& id, store::RunStatus status, int64_t seed = 0,
                                        const std::string& config_key = "autoencoder-cpu") {
  store::RunManifest m;
  m.run_id = id;
  m.config_key = config_key;
  m.status = status;
  m.config = {{"model", "autoencoder"}, {"device", "cpu"}, {"threads", 1}, {"dtype", "float32"},
              {"deterministic", "off"}, {"cudnn", true}, {"cudnn_benchmark", false},
              {"cudnn_deterministic", false}, {"tf32_matmul", false}, {"tf32_cudnn", true},
              {"cublas_workspace", "default"}, {"cuda_graph", true}, {"perturbation", "none"},
              {"perturbation_seed", 0}, {"init", "default"}, {"init_scale", 1.0}, {"seed", seed},
              {"data_seed", seed}, {"steps", 10}, {"batch_size", 8}, {"lr", 0.001}};
  m.fingerprint = {{"host", "test"}, {"torch", "1.13.0"}};
  m.timings.started = "2026-01-01T00:00:00Z";
  if (status != store::RunStatus::kRunning) {
    m.timings.finished = "2026-01-01T00:01:00Z";
    m.timings.train_s = 60;
  }
  if (status == store::RunStatus::kCompleted) {
    m.steps_completed = 10;
    m.final_loss = 0.5 / (1 + seed);
    m.evaluation = store::Evaluation{"test", 0.01 * (1 + seed), "mean training image", 0.067, {}, {}};
  }
  return m;
}

// Writes `rows` to <dir>/<table.file> through TableWriter and lists the file in `m`.
template <class Row>
void write_rows(const std::string& dir, store::RunManifest* m, const store::Table<Row>& table,
                const std::vector<Row>& rows) {
  auto w = store::TableWriter<Row>::create(dir, table);
  ASSERT_TRUE(w.ok()) << w.status().message();
  for (const Row& r : rows) w->append(r);
  ASSERT_TRUE(w->flush().ok());
  m->files[table.file] = table.version;
}

// `n` metrics rows: loss = (1 + seed) / (1 + step).
inline std::vector<store::MetricsRow> metrics_rows(int64_t n, int64_t seed = 0) {
  std::vector<store::MetricsRow> rows;
  for (int64_t s = 0; s < n; ++s) rows.push_back({s, (1.0 + seed) / (1.0 + s), 0.1, 0.001, 0.01 * s});
  return rows;
}

// Curvature rows at steps 0, every, 2·every, ... < steps: λmin rising from -1 to 0; trace off (NaN).
inline std::vector<store::CurvatureRow> curvature_rows(int64_t steps, int64_t every) {
  std::vector<store::CurvatureRow> rows;
  for (int64_t s = 0; s < steps; s += every) {
    store::CurvatureRow r;
    r.step = s;
    r.lambda_min = -1.0 + double(s) / double(steps);
    r.lambda_max = 2.0;
    r.converged = true;
    r.trace = r.trace_se = NAN;
    r.negative_mass = r.negative_mass_lower = r.negative_mass_upper = NAN;
    r.hessian_lipschitz = NAN;
    r.hvp_count = 20;
    rows.push_back(r);
  }
  return rows;
}

// A final snapshot at m->steps_completed (one parameter), listed in `m`.
inline void write_final_snapshot(const std::string& dir, store::RunManifest* m) {
  std::string snap = store::snapshot_dir(dir, m->steps_completed);
  std::filesystem::create_directories(snap);
  float w[2] = {1, 2};
  ASSERT_TRUE(store::write_npy(snap + "/w.npy", store::Dtype::kFloat32, {2}, w).ok());
  m->files[store::kSnapshotsEntry] = store::kSnapshotsVersion;
}

// Creates <study>/runs/<m.run_id>/ with `metrics` metrics rows (and, when `curvature_every` > 0,
// curvature rows), a final snapshot when completed, then the manifest. Returns the directory.
inline std::string add_run(const std::string& study, store::RunManifest m, int64_t metrics = 10,
                           int64_t curvature_every = 0) {
  auto dir = store::create_run_dir(study, m.run_id, false);
  EXPECT_TRUE(dir.ok()) << dir.status().message();
  if (!dir.ok()) return "";
  write_rows(*dir, &m, store::kMetrics, metrics_rows(metrics, m.config.value("seed", int64_t{0})));
  if (curvature_every > 0) write_rows(*dir, &m, store::kCurvature, curvature_rows(metrics, curvature_every));
  if (m.status == store::RunStatus::kCompleted) write_final_snapshot(*dir, &m);
  Status st = store::write_manifest(*dir, m);
  EXPECT_TRUE(st.ok()) << st.message();
  return *dir;
}

}  // namespace saddlescope::testing
