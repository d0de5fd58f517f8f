// saddlescope ops RUN_DIR...: the per-op rounding-error summary of a run's op taps (ops.csv) as Markdown,
// or several runs side by side.
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "saddlescope/base/text.h"
#include "saddlescope/analysis/op_summary.h"
#include "saddlescope/store/run_dir.h"

namespace saddlescope::app {

Command add_ops(CLI::App& app) {
  struct Args {
    std::vector<std::string> dirs;
    std::string labels;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("ops", "Summarise runs' op taps (ops.csv) per op and phase");
  sub->add_option("run_dir", args->dirs, "Run directories trained with --probe ops[:...]")->required();
  sub->add_option("--labels", args->labels, "Column headings for several runs, joined by ',' (default: the run directories)");
  sub->footer("One run: median and max |ULP error|, and how many samples lie beyond the a-priori rounding bound.\n"
              "Several: one column per run, each cell 'median / max |ULP error| (share beyond the bound)'.");
  auto run = [args]() -> int {
    std::vector<std::string> labels = args->labels.empty() ? args->dirs : split(args->labels, ',');
    if (labels.size() != args->dirs.size())
      return fail(fmt::format("--labels: {} labels for {} run directories", labels.size(), args->dirs.size()));
    std::vector<std::vector<analysis::OpSummary>> runs;
    for (const auto& dir : args->dirs) {
      auto run = store::RunDir::open(dir);
      if (!run) return fail(run.status().message());
      if (!run->has(store::kOps.file))
        return fail(dir + ": no op taps (ops.csv); train with --probe ops");
      auto rows = run->ops();
      if (!rows) return fail(rows.status().message());
      runs.push_back(analysis::summarize_ops(*rows));
    }
    if (runs.size() == 1) {
      fmt::print("{}", analysis::ops_markdown(runs[0]));
    } else {
      fmt::print("{}", analysis::ops_comparison_markdown(labels, runs));
    }
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
