// saddlescope train: one instrumented training run from flags and/or a TOML file.
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "run_flags.h"
#include "saddlescope/trainer/train.h"

namespace saddlescope::app {

Command add_train(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("train", "Train a model and write a run directory");
  auto flags = std::make_shared<RunFlags>(sub);
  auto force = std::make_shared<bool>(false);
  sub->add_flag("--force", *force, "Replace an existing run directory of the same config");
  sub->footer("Example: saddlescope train --model autoencoder --data mnist --device cpu --threads 1 "
              "--seed 7 --steps 2000 --batch-size 64 --lr 1e-3 --out runs/ae");

  auto run = [flags, force]() -> int {
    auto cfg = flags->resolve();
    if (!cfg) return fail(cfg.status().message());
    auto r = trainer::train(*cfg, {*force, stdout});
    if (!r) return fail(r.status().message());
    fmt::print("run      {}\n", r->run_dir);
    if (r->diverged_at_step) {
      fmt::print("status   diverged: loss not finite at step {} (of {})\n", *r->diverged_at_step, cfg->steps);
      return 0;
    }
    fmt::print("status   completed {} steps in {:.1f} s ({:.0f} steps/s)\n", r->steps_completed, r->train_s,
               r->steps_completed / std::max(r->train_s, 1e-9));
    fmt::print("train    loss {:.6f} (mean of the last {} steps)\n", r->final_loss,
               std::min(cfg->log_every, cfg->steps));
    fmt::print("{:<8} MSE {:.6f}; {} baseline {:.6f} (model/baseline = {:.3f})\n", r->eval_split, *r->eval_mse,
               r->baseline, *r->baseline_mse, *r->eval_mse / *r->baseline_mse);
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
