// `saddlescope report`: a study and its analysis as one report that answers the question at the top and
// shows the evidence below — STUDY_DIR/report/index.html (self-contained: inline SVG and CSS, no script,
// no network), report.md (figures linked as PNG), report.json (every number shown) and figures/ (each
// figure as SVG, PNG, the CSV behind it and the gnuplot script that drew it). docs/reports.md shows one.
// Torch-free: it reads analysis.json (analysis/) and the run directories (store/), and runs gnuplot.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::reports {

// A run the study defines, as its planner sees it (the app knows the study file; this module does not):
// lets the report list what was never run, or failed before its directory existed.
struct PlannedRun {
  std::string run_id, label, group;  // label "autoencoder/cpu-t1/s3"; group: the study config
  int64_t seed = 0;
  std::string state;                 // the study's word: new, running, failed, skipped, ...
  std::string note;                  // why, when it did not finish (one line)
};

struct ReportOptions {
  std::string gnuplot = "gnuplot";  // the program that draws the figures
  std::string study_name;           // shown in the title; default: the directory's name
  std::vector<PlannedRun> plan;     // empty: only the runs that have directories are known
  // Called as figures are drawn: (done, total).
  std::function<void(int64_t, int64_t)> progress;
};

struct ReportResult {
  std::string dir;                    // STUDY_DIR/report
  int64_t figures = 0;
  std::vector<std::string> warnings;  // partial or stale inputs, each one line (also in the report)
};

// Reads STUDY_DIR/analysis/analysis.json (written by `saddlescope analyze`) and the run directories it
// names, and writes STUDY_DIR/report/ all-or-nothing (a temporary directory renamed into place). Runs
// that failed, are still running, are newer than the analysis or have lost files are said so and
// shown as far as they exist. Errors, one line naming the file: no analysis, an analysis of another
// schema version, gnuplot missing or failing, a write that fails.
Result<ReportResult> write_report(const std::string& study_dir, const ReportOptions& options = {});

}  // namespace saddlescope::reports
