// Writes the seed corpora of the store's, the analysis's and the report's fuzz targets with
// saddlescope's own writers, so that seeds are files saddlescope really writes:
//   fuzz_make_seeds fuzz/corpus
// (fuzz/make_seeds.sh runs it and adds the seeds made with other tools: configs, studies, IDX, tar.)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "saddlescope/analysis/study_analysis.h"
#include "saddlescope/base/remove_tree.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/schema.h"
#include "synthetic_study.h"

using namespace saddlescope;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  auto r = store::read_file(path);
  SADDLESCOPE_CHECK(r.ok());
  return *r;
}

void put(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

store::RunManifest manifest(const std::string& id) {
  store::RunManifest m;
  m.run_id = id;
  m.config_key = "autoencoder-cpu";
  m.status = store::RunStatus::kCompleted;
  m.config = {{"model", "autoencoder"}, {"device", "cpu"}, {"threads", 1}, {"dtype", "float32"}, {"seed", 0}};
  m.fingerprint = {{"host", "seed"}, {"torch", "1.13.1"}};
  m.timings.started = "2026-01-01T00:00:00Z";
  m.timings.finished = "2026-01-01T00:01:00Z";
  m.steps_completed = 2;
  m.final_loss = 0.5;
  m.evaluation = store::Evaluation{"test", 0.01, "mean training image", 0.067, {}, {}};
  return m;
}

// A completed run with metrics.csv, curvature.csv and a snapshot at step 0.
void write_run(const std::string& study, const std::string& id) {
  std::string run = study + "/runs/" + id;
  fs::create_directories(run + "/snapshots/step-00000000");
  fs::create_directories(run + "/snapshots/step-00000002");
  store::RunManifest m = manifest(id);
  auto w = store::TableWriter<store::MetricsRow>::create(run, store::kMetrics);
  w->append({0, 1.0, 0.1, 0.001, 0.0});
  w->append({1, 0.5, 0.1, 0.001, 0.01});
  SADDLESCOPE_CHECK(w->flush().ok());
  m.files[store::kMetrics.file] = store::kMetrics.version;
  float x[6] = {1, 2, 3, 4, 5, 6};
  for (const char* step : {"00000000", "00000002"})
    SADDLESCOPE_CHECK(store::write_npy(run + "/snapshots/step-" + step + "/fc1.weight.npy", store::Dtype::kFloat32, {2, 3}, x).ok());
  m.files["snapshots"] = 1;
  SADDLESCOPE_CHECK(store::write_manifest(run, m).ok());
}

template <class Row>
void table_seed(const std::string& corpus, int selector, const store::Table<Row>& table, const std::vector<Row>& rows) {
  std::string tmp = corpus + "/.tmp-table";
  fs::create_directories(tmp);
  auto w = store::TableWriter<Row>::create(tmp, table);
  for (const Row& r : rows) w->append(r);
  SADDLESCOPE_CHECK(w->flush().ok());
  put(corpus + "/fuzz_tables/" + table.file, std::string(1, static_cast<char>(selector)) + slurp(tmp + "/" + table.file));
  (void)remove_tree(tmp);
}

// The files below `study` in fuzz_merge's input format ("@@ F path\ncontent" per file).
std::string serialize(const std::string& study) {
  std::string out;
  std::vector<fs::path> paths;
  for (auto& e : fs::recursive_directory_iterator(study)) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) {
    std::string rel = fs::relative(p, study).string();
    if (rel.find("/.") != std::string::npos || rel[0] == '.') continue;  // locks
    if (fs::is_directory(p)) out += (out.empty() ? "" : "\n") + std::string("@@ D ") + rel;
    else out += (out.empty() ? "" : "\n") + std::string("@@ F ") + rel + "\n" + slurp(p.string());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds CORPUS_DIR\n");
    return 2;
  }
  const std::string corpus = argv[1];
  const std::string tmp = corpus + "/.tmp";
  (void)remove_tree(tmp);
  fs::create_directories(tmp);

  // .npy: every dtype, 0-d to 2-d.
  float f[6] = {0.5f, -1, 2, 3, 4, 5};
  double d = 3.25;
  uint8_t u[4] = {0, 1, 254, 255};
  SADDLESCOPE_CHECK(store::write_npy(tmp + "/a.npy", store::Dtype::kFloat32, {2, 3}, f).ok());
  SADDLESCOPE_CHECK(store::write_npy(tmp + "/b.npy", store::Dtype::kFloat64, {}, &d).ok());
  SADDLESCOPE_CHECK(store::write_npy(tmp + "/c.npy", store::Dtype::kUInt8, {4}, u).ok());
  for (const char* n : {"a.npy", "b.npy", "c.npy"}) put(corpus + "/fuzz_npy/" + n, slurp(tmp + "/" + n));

  // manifest.json
  SADDLESCOPE_CHECK(store::write_manifest(tmp, manifest("autoencoder-cpu-t1-s0-0123abcd")).ok());
  put(corpus + "/fuzz_manifest/manifest.json", slurp(tmp + "/manifest.json"));

  // Every table, two rows each.
  table_seed<store::MetricsRow>(corpus, 0, store::kMetrics, {{0, 1.0, 0.1, 0.001, 0.0}, {1, 0.5, NAN, 1e-5, 0.01}});
  store::CurvatureRow c;
  c.lambda_min = -1;
  c.lambda_max = 2;
  c.trace = NAN;
  table_seed<store::CurvatureRow>(corpus, 1, store::kCurvature, {c, c});
  table_seed<store::CurvatureEigenRow>(corpus, 2, store::kCurvatureEigen, {{0, "min", 0, -1, 1e-4}, {0, "max", 0, 2, 1e-4}});
  table_seed<store::SymmetryRow>(corpus, 3, store::kSymmetry, {{0, "fc1", 4, 6, 0, 0, 1}});
  store::OpRow o{0, "enc.fc1", "fwd", "0:3", 0.25, 0.25, 0, 1e-7, 0, 0, "linear", "float32", 784, "within"};
  table_seed<store::OpRow>(corpus, 4, store::kOps, {o, o});
  put(corpus + "/fuzz_tables/any.csv", std::string(1, 5) + "a,b\n1,2\nnan,-inf\n");

  // A study of two runs: its catalogue (fuzz_catalog) and its files (fuzz_merge).
  std::string study = tmp + "/study";
  write_run(study, "autoencoder-cpu-t1-s0-0123abcd");
  write_run(study, "autoencoder-cpu-t1-s1-4567cdef");
  SADDLESCOPE_CHECK(store::rebuild_catalog(study).ok());
  put(corpus + "/fuzz_catalog/catalog.sqlite", slurp(study + "/catalog.sqlite"));
  fs::remove(study + "/catalog.sqlite");
  std::string tree = serialize(study);
  put(corpus + "/fuzz_merge/study", tree);
  put(corpus + "/fuzz_merge/link", tree + "\n@@ L runs/autoencoder-cpu-t1-s0-0123abcd/curvature.csv -> ../../../outside/x");
  put(corpus + "/fuzz_merge/fifo", tree + "\n@@ P runs/autoencoder-cpu-t1-s1-4567cdef/ops.csv");
  put(corpus + "/fuzz_merge/linked-run", tree + "\n@@ L runs/elsewhere -> /tmp");

  // A study holding every file the analysis and the report read (tests/testing/synthetic_study.h): its
  // runs (fuzz_analysis); with its analysis, the runs without the snapshots the report does not read
  // (fuzz_report); and the analysis alone, its runs gone (fuzz_report).
  std::string synthetic = tmp + "/synthetic";
  SADDLESCOPE_CHECK(testing::write_synthetic_study(synthetic).ok());
  put(corpus + "/fuzz_analysis/study", serialize(synthetic));
  analysis::AnalysisOptions options;
  options.permutations = options.resamples = 99;
  options.episodes.loss_levels = {0.5};
  auto analysed = analysis::analyze_study(synthetic, options);
  SADDLESCOPE_CHECK(analysed.ok());
  const std::string analysis_json = analysed->dump(2) + "\n";
  put(synthetic + "/analysis/analysis.json", analysis_json);
  for (const auto& run : fs::directory_iterator(synthetic + "/runs"))
    if (run.is_directory()) (void)remove_tree(run.path().string() + "/snapshots");
  const std::string report_tree = serialize(synthetic);
  put(corpus + "/fuzz_report/study", report_tree);
  // Links where the report writes (to the sentinel beside the study) and where it reads, and a FIFO.
  put(corpus + "/fuzz_report/links", "@@ L report -> ../outside\n@@ L .report.tmp -> ../outside\n"
                                     "@@ L runs/sgd-a-s1/ops.csv -> /dev/zero\n@@ P runs/sgd-b-s2/symmetry.csv\n" +
                                         report_tree);
  put(corpus + "/fuzz_report/analysis-only", "@@ F analysis/analysis.json\n" + analysis_json);
  (void)remove_tree(tmp);
  return 0;
}
