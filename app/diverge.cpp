// saddlescope diverge RUN_A RUN_B: where two runs' trajectories first differ and how far they drift.
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "saddlescope/analysis/divergence.h"
#include "saddlescope/store/files.h"

namespace saddlescope::app {

Command add_diverge(CLI::App& app) {
  struct Args {
    std::string a, b, csv;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("diverge", "Compare two runs' trajectories snapshot by snapshot");
  sub->add_option("run_a", args->a, "Run directory A (the reference, e.g. the float64 run)")->required();
  sub->add_option("run_b", args->b, "Run directory B")->required();
  sub->add_option("--csv", args->csv, "Also write the per-snapshot table to this CSV file");
  auto run = [args]() -> int {
    auto d = analysis::diverge(args->a, args->b);
    if (!d) return fail(d.status().message());
    std::string table = analysis::to_csv(*d);
    if (!args->csv.empty()) {
      Status st = store::write_file_atomic(args->csv, table);
      if (!st.ok()) return fail(st.message());
    }
    fmt::print("{}\n{}", table, analysis::summarize(*d, args->a, args->b));
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
