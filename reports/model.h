// What a report is made of, internal to reports/: the study as read (the analysis and the run
// directories behind it), the report model built from it (report.json: every number the report shows),
// its figures, and the two renderings of the model.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "figure.h"
#include "report_model.h"
#include "saddlescope/analysis/analysis_result.h"
#include "saddlescope/base/status.h"
#include "saddlescope/reports/invariance.h"
#include "saddlescope/reports/report.h"
#include "saddlescope/store/json_input.h"
#include "saddlescope/store/manifest.h"
#include "saddlescope/store/schema.h"

namespace saddlescope::reports {

// One run of the analysis (analysis.json runs[]), with what its directory still holds.
struct RunData {
  analysis::RunResult entry;               // its analysis.json runs[] entry
  std::optional<store::RunManifest> manifest;
  std::vector<store::MetricsRow> metrics;
  std::vector<store::CurvatureRow> curvature;
  std::vector<store::OpRow> ops;
  std::vector<store::SymmetryRow> symmetry;
  std::vector<std::string> notes;          // files that did not read, one line each
  bool newer_than_analysis = false;        // its manifest changed after analysis.json was written
};

struct StudyData {
  std::string dir, name;
  analysis::AnalysisResult analysis;        // analysis.json, read through its declared types
  std::vector<RunData> runs;                 // in analysis.json's order
  std::vector<std::string> unanalysed;       // run directories the analysis does not list
  std::vector<PlannedRun> plan;
  std::vector<std::string> group_names;      // analysis.json groups[], in order: figure series 1, 2, ...
  std::vector<std::string> warnings;         // partial or stale inputs
};

// Reads <dir>/analysis/analysis.json (schema_version 1, through analysis_result.h) and every run it
// lists. A run whose directory or files are gone is kept with notes; only the analysis itself not
// reading is an error, naming analysis.json and the key.
Result<StudyData> load_study(const std::string& dir, const ReportOptions& options);

// report.json: the verdict, setup, and per section every number the report shows; numbers taken from
// the analysis are copied verbatim. Its invariance section and figures are added by write_report.
ReportModel build_model(const StudyData& study);

// The verdict (verdict.cpp): each comparison of the analysis in words, with its power and cause, and the
// headline over all of them, at level `alpha`.
VerdictModel verdict_model(const StudyData& study, double alpha);

// The figures the study's data allow, in report order; sections without data get none (the model says
// why). Their names and captions are added to model.figures.
std::vector<Figure> build_figures(const StudyData& study, ReportModel& model);

// The report's batch-invariance section: the rows of <study>/invariance/*.json (`saddlescope invariance
// --json`), in file-name order; empty when the study has none. Errors name the file that does not read.
Result<nlohmann::json> invariance_model(const std::string& study_dir);
// InvarianceRows as report.json and the table's JSON hold them.
nlohmann::json invariance_rows(const std::vector<InvarianceRow>& rows);

// index.html: one self-contained page. `svgs`: figure name -> its SVG document as gnuplot wrote it.
std::string render_html(const ReportModel& model, const std::map<std::string, std::string>& svgs);
// report.md: the same content for terminals, figures linked as PNG.
std::string render_markdown(const ReportModel& model);

// How the report reads the model built from the analysis (report.json): a key the model always has is
// read with at(); one it has only sometimes with field() (`j[key]`, or null when `j` is not an object or
// has no `key`: store/json_input.h). Never with a const operator[]: on a missing key that is undefined
// behaviour. The analysis itself is read through its types.
using store::field;

// "cpu-t1 s3": a run's group and seed ("?" for a run without a group).
std::string run_label(const analysis::RunResult& run);

// A number as the report prints it: 4 significant digits, "—" for null (NaN, ±inf: what report.json
// holds as null); integers whole, strings as they are, booleans yes/no.
std::string show(const nlohmann::json& v);
std::string show(double v);
std::string show(int64_t v);
template <class T>
std::string show(const std::optional<T>& v) {  // "—" when empty
  return v ? show(*v) : show(nlohmann::json());
}
// A p-value: 4 decimals, "< 0.0001" below that, "—" for null.
std::string show_p(const nlohmann::json& v);
std::string show_p(double p);
// A fraction as a signed percentage, 3 significant digits ("+0.125%"); "—" when not a number.
std::string show_percent(const nlohmann::json& v);
std::string show_percent(double v);

}  // namespace saddlescope::reports
