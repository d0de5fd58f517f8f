// saddlescope train: one instrumented training run from flags and/or a TOML file.
#include <memory>

#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "run_flags.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/stop_signals.h"
#include "saddlescope/trainer/train.h"

namespace saddlescope::app {
Result<trainer::RunConfig> run_config(const std::string& run_dir) {
  trainer::ConfigBuilder builder;
  SADDLESCOPE_RETURN_IF_ERROR(load_run_config(&builder, run_dir));
  return builder.resolve();
}

int print_train_result(const trainer::RunConfig& cfg, const Result<trainer::TrainResult>& r) {
  if (!r) return fail(r.status().message());
  fmt::print("run      {}\n", r->run_dir);
  if (r->stop_signal) {
    fmt::print("status   interrupted by {} after {} steps; continue with: saddlescope train --resume {}\n",
               trainer::signal_name(r->stop_signal), r->steps_completed, r->run_dir);
    return 128 + r->stop_signal;  // the shell's convention for a process ended by that signal
  }
  if (r->diverged_at_step) {
    fmt::print("status   diverged: {} at step {} (of {})\n",
               r->diverged_reason.empty() ? "loss not finite" : r->diverged_reason, *r->diverged_at_step, cfg.steps);
    return 0;
  }
  fmt::print("status   completed {} steps in {:.1f} s ({:.0f} steps/s)\n", r->steps_completed, r->train_s,
             r->steps_completed / std::max(r->train_s, 1e-9));
  fmt::print("train    loss {:.6f} (mean of the last {} steps)\n", r->final_loss, std::min(cfg.log_every, cfg.steps));
  fmt::print("{:<8} MSE {:.6f}; {} baseline {:.6f} (model/baseline = {:.3f})\n", r->eval_split, *r->eval_mse,
             r->baseline, *r->baseline_mse, *r->eval_mse / *r->baseline_mse);
  if (r->cross_entropy)
    fmt::print("{:<8} cross entropy {:.6f} (baseline {:.6f}), accuracy {:.4f}\n", r->eval_split, *r->cross_entropy,
               *r->baseline_cross_entropy, *r->accuracy);
  return 0;
}

Command add_train(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("train", "Train a model and write a run directory");
  auto flags = std::make_shared<RunFlags>(sub);
  auto force = std::make_shared<bool>(false);
  auto resume = std::make_shared<std::string>();
  sub->add_flag("--force", *force, "Replace an existing run directory of the same config (not while a live process writes it)");
  sub->add_option("--resume", *resume, "Continue an interrupted (or stale) run from its last checkpoint; takes no other config")
      ->check(CLI::ExistingDirectory);
  sub->footer("Example: saddlescope train --model autoencoder --data mnist --device cpu --threads 1 "
              "--seed 7 --steps 2000 --batch-size 64 --lr 1e-3 --out runs/ae");

  auto run = [flags, force, resume]() -> int {
    trainer::TrainOptions options{*force, stdout};
    Result<trainer::RunConfig> cfg = Status::Error("no config");
    if (!resume->empty()) {
      if (flags->any_given() || *force)
        return fail("--resume: continues the run with the config in its manifest; give no other config flag");
      cfg = run_config(*resume);
      options.resume = true;
      options.resume_dir = *resume;
    } else {
      cfg = flags->resolve();
    }
    if (!cfg) return fail(cfg.status().message());
    return print_train_result(*cfg, trainer::train(*cfg, options));
  };
  return {sub, run};
}

}  // namespace saddlescope::app
