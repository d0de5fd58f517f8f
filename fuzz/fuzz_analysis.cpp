// `saddlescope analyze` (analysis::analyze_study, as app/analyze.cpp calls it without replays) of a run
// store built from the fuzz input, in fuzz_util.h's directory format: runs/<id>/manifest.json,
// metrics.csv, curvature.csv, ops.csv, symmetry.csv, snapshots/step-<n>/<name>.npy, ... Runs are read
// and paired as in a study: episodes, survival curves, comparisons, divergence of paired snapshots,
// attribution from recorded op taps, the theory fit.
//
// Invariants: no crash, hang or sanitizer report; an error is one line; an analysis that succeeds is
// what `analyze` writes and `report` reads: its text (analysis_json) is made without an exception, it
// lists one runs[] entry per run directory, gives its CSV tables and its verdict text, and its report
// (gnuplot a stub, as in fuzz_report) is written.
#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "saddlescope/analysis/analysis_result.h"
#include "saddlescope/analysis/study_analysis.h"
#include "saddlescope/reports/report.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/run_dir.h"

using namespace saddlescope;
namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string study = fuzz::scratch_dir() + "/study";
  SADDLESCOPE_CHECK(remove_tree(study).ok());
  fs::create_directories(study + "/runs");
  fuzz::build_tree(study, std::string(reinterpret_cast<const char*>(data), size));

  analysis::AnalysisOptions o;
  o.permutations = o.resamples = 99;  // the statistics' sizes, not their inputs, are not what is fuzzed
  o.episodes.loss_levels = {0.5};
  auto a = analysis::analyze_study(study, o);
  fuzz::check_one_line(a.status());
  if (!a.ok()) return 0;

  const std::string text = analysis::analysis_json(*a);  // as `analyze` writes it: it throws on nothing
  SADDLESCOPE_CHECK(a->at("schema_version") == 1);
  size_t run_dirs = 0;  // as analyze counts them: directories, not hidden, not a writer's temporary
  for (const auto& d : store::list_run_dirs(study))
    run_dirs += !store::is_temporary_name(fs::path(d).filename().string());
  SADDLESCOPE_CHECK(a->at("runs").size() == run_dirs);
  (void)analysis::analysis_tables(*a);
  // Whatever the runs held, the analysis is what its declared types hold: it reads into them and
  // writes back to the same text.
  auto typed = analysis::decode_analysis(*a);
  SADDLESCOPE_CHECK(typed.ok());
  SADDLESCOPE_CHECK(analysis::analysis_json(analysis::encode_analysis(*typed)) == text);
  (void)analysis::analysis_verdict(*typed);

  fs::create_directories(study + "/analysis");
  SADDLESCOPE_CHECK(store::write_file_atomic(study + "/analysis/analysis.json", text).ok());
  reports::ReportOptions options;
  options.gnuplot = fuzz::stub_gnuplot();
  auto r = reports::write_report(study, options);
  if (!r.ok()) {
    std::fprintf(stderr, "the report of an analysis that analyze wrote failed: %s\n", r.status().message().c_str());
    std::abort();
  }
  return 0;
}
