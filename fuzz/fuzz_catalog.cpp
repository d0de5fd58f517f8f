// The catalogue's readers and writers (store/catalog.h, store/check.h) on an arbitrary catalog.sqlite
// beside one valid run: catalog_drift, catalog_problems, check_study, then upsert_run (which rebuilds
// a missing, older or unreadable catalogue and refuses a newer one).
// Invariants: no crash, one-line errors; after an upsert that succeeds the run upserted matches its
// directory, and the catalogue is not to be rebuilt unless SQLite finds it damaged in pages the
// upsert did not read, in which case a rebuild mends it.
#include <cstdint>
#include <filesystem>
#include <string>

#include "fuzz_util.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/check.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/schema.h"

using namespace saddlescope;
namespace fs = std::filesystem;

namespace {

// <scratch>/study with one completed run (manifest and metrics.csv, as the trainer writes them).
const std::string& study() {
  static const std::string dir = [] {
    std::string s = fuzz::scratch_dir() + "/study";
    std::string run = s + "/runs/autoencoder-cpu-t1-s0-00000000";
    fs::create_directories(run);
    store::RunManifest m;
    m.run_id = "autoencoder-cpu-t1-s0-00000000";
    m.config_key = "autoencoder-cpu";
    m.status = store::RunStatus::kCompleted;
    m.config = {{"model", "autoencoder"}, {"device", "cpu"}, {"threads", 1}, {"seed", 0}};
    m.timings.started = "2026-01-01T00:00:00Z";
    m.timings.finished = "2026-01-01T00:01:00Z";
    m.steps_completed = 2;
    m.final_loss = 0.5;
    m.evaluation = store::Evaluation{"test", 0.01, "mean training image", 0.067, {}, {}};
    auto w = store::TableWriter<store::MetricsRow>::create(run, store::kMetrics);
    SADDLESCOPE_CHECK(w.ok());
    w->append({0, 1.0, 0.1, 0.001, 0.0});
    w->append({1, 0.5, 0.1, 0.001, 0.01});
    SADDLESCOPE_CHECK(w->flush().ok());
    m.files[store::kMetrics.file] = store::kMetrics.version;
    SADDLESCOPE_CHECK(store::write_manifest(run, m).ok());
    return s;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& s = study();
  for (const char* leftover : {"/catalog.sqlite-journal", "/catalog.sqlite-wal", "/catalog.sqlite-shm"})
    fs::remove(s + leftover);
  fuzz::write_bytes(s + "/catalog.sqlite", data, size);
  auto drift = store::catalog_drift(s);
  fuzz::check_one_line(drift.status());
  fuzz::check_one_line(store::catalog_problems(s).status());
  auto check = store::check_study(s);
  fuzz::check_one_line(check.status());
  Status up = store::upsert_run(s, s + "/runs/autoencoder-cpu-t1-s0-00000000");
  fuzz::check_one_line(up);
  if (!up.ok()) return 0;
  // The upserted run matches its directory (other runs the input catalogue held are gone: drift).
  auto after = store::catalog_drift(s);
  if (!after.ok()) {
    std::fprintf(stderr, "catalog_drift after upsert: %s\n", after.status().message().c_str());
    std::abort();
  }
  bool ours_drifts = false;
  for (const auto& id : after->runs) ours_drifts |= id == "autoencoder-cpu-t1-s0-00000000";
  bool damaged = after->whole.rfind("damaged (SQLite: ", 0) == 0;
  if ((!after->whole.empty() && !damaged) || ours_drifts) {
    std::fprintf(stderr, "drift after upsert: '%s'\n", after->whole.c_str());
    std::abort();
  }
  if (damaged) {
    SADDLESCOPE_CHECK(store::rebuild_catalog(s).ok());
    auto mended = store::catalog_drift(s);
    SADDLESCOPE_CHECK(mended.ok() && mended->whole.empty() && mended->runs.empty());
  }
  return 0;
}
