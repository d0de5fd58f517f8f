// saddlescope replay RUN_DIR --step N: one training step of a run replayed with op taps armed, at the
// parameters of that run's snapshot (or another run's), for attribution: compare the ops.csv of two
// replays (CPU and GPU, fault none and alias-target) on the same parameters and batch.
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/replay.h"

namespace saddlescope::app {

Command add_replay(CLI::App& app) {
  struct Args {
    std::string run_dir, params_from, ops, out;
    int64_t step = -1;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("replay", "Replay one training step of a run with op taps armed; write ops.csv");
  sub->add_option("run_dir", args->run_dir, "The run whose config (manifest.json) is replayed")->required();
  sub->add_option("--step", args->step, "The optimiser step: its batch, and the parameters of its snapshot")
      ->required()->check(CLI::NonNegativeNumber);
  sub->add_option("--params-from", args->params_from,
                  "Take the parameters from this run's snapshot at --step instead (same architecture)");
  sub->add_option("--ops", args->ops, "The op taps, an ops probe spec due at --step (default: ops:at=STEP)");
  sub->add_option("--out", args->out, "A new directory for ops.csv (written all at once)")->required();
  sub->footer("The replay builds RUN_DIR's config on its device with its execution settings, loads the snapshot\n"
              "of --step (train with --snapshot-every), draws the batch that step trains on (and the next, for\n"
              "fault alias-target), and runs one forward and backward eagerly.\n"
              "Example: saddlescope replay runs/ae/runs/<cpu-id> --step 1000 --params-from runs/ae/runs/<gpu-id> "
              "--ops ops:at=1000,k=16 --out replay-cpu");
  auto run = [args]() -> int {
    auto cfg = run_config(args->run_dir);
    if (!cfg) return fail(cfg.status().message());
    std::string ops = args->ops.empty() ? fmt::format("ops:at={}", args->step) : args->ops;
    std::string params = args->params_from.empty() ? args->run_dir : args->params_from;
    auto r = trainer::replay_step(*cfg, params, args->step, ops, args->out);
    if (!r) return fail(r.status().message());
    fmt::print("replayed step {} of {} at the parameters of {}\n", args->step, args->run_dir, r->params);
    fmt::print("loss     {}\n", r->loss);
    fmt::print("ops      {} rows in {}\n", r->rows, r->ops_csv);
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
