// saddlescope diverge RUN_A RUN_B: where two runs' trajectories first differ and how far they drift, and,
// when both recorded ophash.csv, the first op whose bits parted.
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "saddlescope/analysis/divergence.h"
#include "saddlescope/analysis/first_op.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/run_dir.h"

namespace saddlescope::app {

namespace {

// The first divergent op line, when both runs recorded op digests.
int first_op(const std::string& a, const std::string& b) {
  auto ra = store::RunDir::open(a), rb = store::RunDir::open(b);
  if (!ra) return fail(ra.status().message());
  if (!rb) return fail(rb.status().message());
  if (!ra->has(store::kOpHash.file) || !rb->has(store::kOpHash.file)) {
    fmt::print("first divergent op: not recorded (train both runs with --probe ophash)\n");
    return 0;
  }
  auto ha = ra->ophash();
  if (!ha) return fail(ha.status().message());
  auto hb = rb->ophash();
  if (!hb) return fail(hb.status().message());
  auto f = analysis::first_divergent_op(*ha, *hb);
  if (!f) return fail(f.status().message());
  fmt::print("{}\n", analysis::describe(*f));
  return 0;
}

}  // namespace

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
    return first_op(args->a, args->b);
  };
  return {sub, run};
}

}  // namespace saddlescope::app
