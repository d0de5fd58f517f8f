// saddlescope report STUDY_DIR: the study's analysis as a report (STUDY_DIR/report/: index.html,
// report.md, report.json, figures/). Analyses the study first when it has no analysis yet; lists the
// runs of STUDY_DIR/study.toml that never ran or failed. docs/reports.md shows one.
#include <memory>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "saddlescope/base/process.h"
#include "saddlescope/analysis/study_analysis.h"
#include "saddlescope/base/progress.h"
#include "saddlescope/reports/report.h"
#include "saddlescope/store/files.h"
#include "saddlescope/study/status.h"
#include "saddlescope/study/study.h"

namespace saddlescope::app {
namespace {

// The study file's runs as the report's plan; none when the directory has no (readable) study.toml.
std::vector<reports::PlannedRun> plan_of(const std::string& dir, std::vector<std::string>* warnings) {
  std::vector<reports::PlannedRun> plan;
  if (!store::file_exists(dir + "/study.toml")) return plan;
  auto s = study::load_study(dir + "/study.toml", dir);
  if (!s) {
    warnings->push_back("the study file does not read, so runs that never started are not listed: " + s.status().message());
    return plan;
  }
  // Groups as the analysis names them: model/config when the study has several models.
  std::set<std::string> models;
  for (const auto& run : s->runs) models.insert(run.model);
  for (const auto& run : s->runs) {
    const study::RunView v = study::inspect_run(dir, run.run_id);
    std::string state = study::state_name(v.state), note = v.error;
    if (state == "new") {
      state = "not run yet";
      if (run.cuda()) note = "a CUDA run: study run skips it on a host without a GPU";
    }
    plan.push_back({run.run_id, run.label(), analysis::study_group(run.model, run.config, models.size() > 1), run.seed,
                    state, note});
  }
  return plan;
}

}  // namespace

Command add_report(CLI::App& app) {
  struct Args {
    std::string study, gnuplot = "gnuplot";
    bool quiet = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "report", "Write the study's saddle-point report: report/index.html, report.md, report.json and figures/");
  sub->add_option("study_dir", args->study, "Study directory (holds runs/ and, after `analyze`, analysis/)")->required();
  sub->add_option("--gnuplot", args->gnuplot, "The gnuplot program that draws the figures")->capture_default_str();
  sub->add_flag("--quiet", args->quiet, "No progress");
  auto run = [args]() -> int {
    if (!store::file_exists(args->study + "/runs"))
      return fail(args->study + ": not a study directory (no runs/)");
    if (!store::file_exists(args->study + "/analysis/analysis.json")) {
      if (!args->quiet) fmt::print(stderr, "report: {} has no analysis yet; running saddlescope analyze\n", args->study);
      std::vector<std::string> argv = {self_path(), "analyze", args->study};
      if (args->quiet) argv.push_back("--quiet");
      if (Status st = run_process(argv); !st.ok()) return fail("analyze: " + st.message());
    }
    std::vector<std::string> plan_warnings;
    reports::ReportOptions o;
    o.gnuplot = args->gnuplot;
    o.plan = plan_of(args->study, &plan_warnings);
    std::unique_ptr<Progress> bar;
    o.progress = [&](int64_t done, int64_t total) {
      if (args->quiet) return;
      if (!bar) bar = std::make_unique<Progress>("report", total, "figures", stderr);
      if (done < total) bar->update(done, "drawing figures");
      else if (Progress::is_terminal(stderr)) bar->finish(done, "figures drawn");
    };
    auto r = reports::write_report(args->study, o);
    if (!r) return fail(r.status().message());
    for (const auto& w : plan_warnings) fmt::print(stderr, "report: warning: {}\n", w);
    for (const auto& w : r->warnings) fmt::print(stderr, "report: warning: {}\n", w);
    fmt::print("report: {}/index.html ({} figures; also report.md, report.json)\n", r->dir, r->figures);
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
