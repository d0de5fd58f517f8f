// saddlescope ops RUN_DIR: the per-op rounding-error summary of a run's op taps (ops.csv), as Markdown.
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "saddlescope/probes/op_summary.h"

namespace saddlescope::app {

Command add_ops(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("ops", "Summarise a run's op taps (ops.csv) per op and phase");
  sub->add_option("run_dir", *dir, "Run directory trained with --probe ops[:...]")->required();
  sub->footer("Prints median and max |ULP error|, and how many samples lie beyond the a-priori rounding bound.");
  auto run = [dir]() -> int {
    auto rows = probes::read_ops_csv(*dir + "/ops.csv");
    if (!rows) return fail(rows.status().message());
    fmt::print("{}", probes::ops_markdown(probes::summarize_ops(*rows)));
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
