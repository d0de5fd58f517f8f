// saddlescope store index DIR | store check DIR [--repair] | store select RUN FILE [COLUMN...]: the
// study's catalogue, the state and problems of its runs, and a run's columns by name for scripts
// (store/catalog.h, store/check.h, store/select.h; docs/catalog.md).
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/check.h"
#include "saddlescope/store/select.h"

namespace saddlescope::app {
namespace {

// The runs by state, then the problems one per line. Returns the exit status: 0 when there is no
// problem (a stale run is one), 1 otherwise.
int print_check(const store::StudyCheck& check) {
  fmt::print("{:<12} {:>5}\n", "state", "runs");
  for (const auto& [state, n] : check.counts()) fmt::print("{:<12} {:>5}\n", state, n);
  if (check.runs.empty()) fmt::print("{:<12} {:>5}\n", "(none)", 0);
  if (check.clean()) {
    fmt::print("\nno problems\n");
    return 0;
  }
  fmt::print("\n{} problem{}:\n", check.problems.size(), check.problems.size() == 1 ? "" : "s");
  for (const auto& p : check.problems) fmt::print("{}\n", store::describe(p));
  return 1;
}

}  // namespace

Command add_store(CLI::App& app) {
  struct Args {
    std::string dir, file;
    std::vector<std::string> columns;
    bool repair = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("store", "The study's catalogue and the health of its runs");
  sub->require_subcommand(1);
  CLI::App* index = sub->add_subcommand("index", "Rebuild DIR/catalog.sqlite from every run directory");
  index->add_option("dir", args->dir, "Study directory (the --out of the runs)")->required();
  CLI::App* check = sub->add_subcommand("check", "The state of every run and every problem of the study");
  check->add_option("dir", args->dir, "Study directory (the --out of the runs)")->required();
  check->add_flag("--repair", args->repair,
                  "Mark stale runs interrupted, remove temporaries of killed writers, update the catalogue");
  check->footer("Exit status: 0 when there are no problems and no stale runs, 1 otherwise.");
  CLI::App* select = sub->add_subcommand("select", "Print columns of a run's table by name, as CSV (for scripts)");
  select->add_option("run_dir", args->dir, "Run directory")->required();
  select->add_option("file", args->file, "Table: metrics, curvature, curvature_eigen, symmetry or ops (.csv optional)")
      ->required();
  select->add_option("columns", args->columns, "Column names (default: every column)");
  select->footer("Example: saddlescope store select RUN curvature step lambda_min lambda_max");

  auto run = [args, index, select]() -> int {
    if (select->parsed()) {
      auto r = store::RunDir::open(args->dir);
      if (!r) return fail(r.status().message());
      auto csv = store::select_columns(*r, args->file, args->columns);
      if (!csv) return fail(csv.status().message());
      fmt::print("{}", *csv);
      return 0;
    }
    if (index->parsed()) {
      if (Status st = store::require_study(args->dir); !st.ok()) return fail(st.message());
      auto n = store::rebuild_catalog(args->dir);
      if (!n) return fail(n.status().message());
      auto problems = store::catalog_problems(args->dir);
      if (!problems) return fail(problems.status().message());
      fmt::print("indexed {} run{} ({} problem{})\n", *n, *n == 1 ? "" : "s", problems->size(),
                 problems->size() == 1 ? "" : "s");
      for (const auto& p : *problems) fmt::print("{}\n", p.error);
      return 0;
    }
    if (args->repair) {
      auto repaired = store::repair_study(args->dir);
      if (!repaired) return fail(repaired.status().message());
      for (const auto& a : repaired->actions) fmt::print("repaired {}\n", a);
      if (!repaired->actions.empty()) fmt::print("\n");
    }
    auto study = store::check_study(args->dir);
    if (!study) return fail(study.status().message());
    return print_check(*study);
  };
  return {sub, run};
}

}  // namespace saddlescope::app
