// saddlescope store index DIR | store check DIR [--repair] | store select RUN FILE [COLUMN...] |
// store merge OUT DIR...: the study's catalogue, the state and problems of its runs, a run's columns by
// name for scripts, and studies of several machines made one (store/catalog.h, store/check.h,
// store/select.h, store/merge.h; docs/catalog.md, docs/run-store.md).
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/check.h"
#include "saddlescope/store/merge.h"
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

// "<study>: 2 added, 1 deduplicated, 1 renamed (x -> x.1a2b3c4d)": what a merge did with one input.
std::string describe(const store::MergeInputReport& r) {
  std::string renamed;
  for (const auto& [from, to] : r.renamed) renamed += (renamed.empty() ? " (" : ", ") + from + " -> " + to;
  return fmt::format("{}: {} added, {} deduplicated, {} renamed{}", r.study, r.added, r.deduplicated,
                     r.renamed.size(), renamed.empty() ? "" : renamed + ")");
}

}  // namespace

Command add_store(CLI::App& app) {
  struct Args {
    std::string dir, file;
    std::vector<std::string> columns, studies;
    bool repair = false;
    uint64_t max_file_mib = store::MergeOptions{}.max_file_bytes >> 20;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("store", "The study's catalogue, the health of its runs, merging studies");
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
  CLI::App* merge = sub->add_subcommand("merge", "Copy the finished runs of studies run on other machines into OUT");
  merge->add_option("out", args->dir, "Study directory to merge into (created if missing)")->required();
  merge->add_option("studies", args->studies, "Study directories to merge, in this order")->required();
  merge->add_option("--max-file-mib", args->max_file_mib, "Refuse a run holding a larger file (default 4096)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  merge->footer(
      "A run id OUT already has (or an earlier study has) is kept apart as <id>.<hash8 of its fingerprint> when\n"
      "it ran in another environment, kept once when it is the same run with the same results, and an error\n"
      "when the same run has other results. Every run is checked before anything is written. docs/run-store.md");

  auto run = [args, index, select, merge]() -> int {
    if (merge->parsed()) {
      store::MergeOptions options;
      options.max_file_bytes = args->max_file_mib << 20;
      auto reports = store::merge_studies(args->dir, args->studies, options);
      if (!reports) return fail(reports.status().message());
      for (const auto& r : *reports) fmt::print("{}\n", describe(r));
      return 0;
    }
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
