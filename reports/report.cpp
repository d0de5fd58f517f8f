// write_report: read the study, build the model, draw the figures, render, and commit the directory.
#include "saddlescope/reports/report.h"

#include <filesystem>

#include <fmt/format.h>

#include "model.h"
#include "saddlescope/base/text.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/run_dir.h"

namespace saddlescope::reports {

namespace {

// Throws what a hand-edited analysis.json makes the JSON reads throw: nlohmann::json::exception for a
// key that is missing (every read of the analysis and of the model goes through at(), field() or
// value(), never a const operator[], whose missing key is undefined behaviour), a field of the wrong
// type, an index out of range.
Result<ReportResult> write_report_or_throw(const std::string& study_dir, const ReportOptions& options) {
  auto study = load_study(study_dir, options);
  if (!study) return study.status();
  ReportModel model = build_model(*study);
  auto invariance = invariance_model(study_dir);
  if (!invariance) return invariance.status();
  model.invariance = std::move(*invariance);
  std::vector<Figure> figures = build_figures(*study, model);

  auto dir = store::AtomicDir::begin(study_dir + "/report");
  if (!dir) return dir.status();
  const std::string fig_dir = dir->path() + "/figures";
  std::error_code ec;
  std::filesystem::create_directory(fig_dir, ec);
  if (ec) return Status::Error(fig_dir + ": cannot create: " + ec.message());
  Status st = store::write_file_atomic(fig_dir + "/README", "Each figure: <name>.svg and .png (drawn by gnuplot from "
                                                            "<name>.gp and the CSV files it names).\n");
  std::map<std::string, std::string> svgs;
  for (size_t i = 0; st.ok() && i < figures.size(); ++i) {
    if (options.progress) options.progress(static_cast<int64_t>(i), static_cast<int64_t>(figures.size()));
    st = render_figure(figures[i], fig_dir, options.gnuplot);
    if (!st.ok()) break;
    auto svg = store::read_file(fig_dir + "/" + figures[i].name + ".svg");
    if (!svg) st = svg.status();
    else svgs[figures[i].name] = std::move(*svg);
  }
  if (options.progress && st.ok())
    options.progress(static_cast<int64_t>(figures.size()), static_cast<int64_t>(figures.size()));
  // Invalid UTF-8 from a run's files (a layer name in symmetry.csv) as U+FFFD, as in analysis.json.
  if (st.ok())
    st = store::write_file_atomic(dir->path() + "/report.json",
                                  store::encode(model).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (st.ok()) st = store::write_file_atomic(dir->path() + "/report.md", render_markdown(model));
  if (st.ok()) st = store::write_file_atomic(dir->path() + "/index.html", render_html(model, svgs));
  if (st.ok()) st = dir->commit();
  if (!st.ok()) return st;
  return ReportResult{study_dir + "/report", static_cast<int64_t>(figures.size()), study->warnings};
}

// nlohmann's message without its "[json.exception.out_of_range.403] " prefix: "key 'step' not found",
// "type must be string, but is number".
std::string json_reason(const nlohmann::json::exception& e) {
  const std::string m = e.what();
  const size_t close = m.rfind("[json.exception.", 0) == 0 ? m.find("] ") : std::string::npos;
  return printable(close == std::string::npos ? m : m.substr(close + 2));
}

}  // namespace

Result<ReportResult> write_report(const std::string& study_dir, const ReportOptions& options) {
  // The report directory is an AtomicDir: a throw leaves nothing behind.
  try {
    return write_report_or_throw(study_dir, options);
  } catch (const nlohmann::json::exception& e) {
    return Status::Error(study_dir + "/analysis/analysis.json: not the analysis schema: " + json_reason(e));
  }
}

}  // namespace saddlescope::reports
