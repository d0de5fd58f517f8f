// saddlescope twins RUN_DIR --step N: which parameters of a run's snapshot still hold the copies that
// init duplicate made, and which no longer do — at the step a symmetry broke, with --grads, the
// parameters whose gradients the breaking op computed.
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/model.h"
#include "saddlescope/trainer/twins.h"

namespace saddlescope::app {

Command add_twins(CLI::App& app) {
  struct Args {
    std::string run_dir;
    int64_t step = -1;
    bool grads = false;
    std::vector<std::string> layers;
    std::vector<int64_t> units;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("twins", "Which parameters of a run's snapshot still hold its duplicated units' copies");
  sub->add_option("run_dir", args->run_dir, "The run (its manifest.json gives the model and the duplication)")
      ->required();
  sub->add_option("--step", args->step, "The snapshot's step")->required()->check(CLI::NonNegativeNumber);
  sub->add_flag("--grads", args->grads, "Compare the snapshot's gradients (train with snapshot_grads) instead");
  sub->add_option("--layer", args->layers, "Instead of the run's duplicate_layers: these unit layers");
  sub->add_option("--units", args->units, "Instead of the run's duplicate_units: the first is the original")
      ->delimiter(',');
  sub->footer("For each parameter that holds copies (the elements init duplicate writes), prints how many copies\n"
              "differ from their original and by how much. A run that broke a symmetry at step 1: the gradients\n"
              "of step 0 (--step 0 --grads) differ exactly where the breaking op's gradient lands.\n"
              "Example: saddlescope twins runs/s/runs/<id> --step 0 --grads");
  auto run = [args]() -> int {
    auto cfg = run_config(args->run_dir);
    if (!cfg) return fail(cfg.status().message());
    trainer::Duplication d{cfg->duplicate_layers, cfg->duplicate_units};
    if (!args->layers.empty()) d.layers = args->layers;
    if (!args->units.empty()) d.units = args->units;
    if (cfg->init != "duplicate" && args->layers.empty() && args->units.empty())
      return fail(args->run_dir + ": init is " + cfg->init + ", not duplicate: name the copies with --layer and --units");
    auto diffs = trainer::twin_differences(*cfg, args->run_dir, args->step, args->grads, d);
    if (!diffs) return fail(diffs.status().message());
    fmt::print("{} of {} at step {}\n", args->grads ? "gradients" : "parameters", args->run_dir, args->step);
    fmt::print("{:<28} {:>9} {:>9} {:>14} {:>14}\n", "parameter", "copies", "differing", "max |diff|", "relative");
    int64_t differing = 0;
    for (const auto& t : *diffs) {
      const double relative = t.scale > 0 ? t.max_abs / t.scale : 0;
      fmt::print("{:<28} {:>9} {:>9} {:>14.4g} {:>14.4g}\n", t.parameter, t.copies, t.differing, t.max_abs, relative);
      differing += t.differing;
    }
    fmt::print("{}\n", differing == 0 ? "every copy equals its original" : fmt::format("{} copies differ", differing));
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
