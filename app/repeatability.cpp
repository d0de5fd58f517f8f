// saddlescope repeatability: the same config N times; is it bitwise reproducible, and if not, from
// which step?
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "run_flags.h"
#include "saddlescope/analysis/divergence.h"
#include "saddlescope/trainer/train.h"

namespace saddlescope::app {

Command add_repeatability(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("repeatability", "Run one config N times and compare the runs bit for bit");
  auto flags = std::make_shared<RunFlags>(sub);
  auto repeats = std::make_shared<int>(2);
  sub->add_option("--repeats", *repeats, "How many runs (default 2)")->check(CLI::Range(2, 1000));
  sub->footer("Runs go to <out>/repeat-<i>/; every run snapshots its parameters at --snapshot-every.");

  auto run = [flags, repeats]() -> int {
    auto cfg = flags->resolve();
    if (!cfg) return fail(cfg.status().message());
    std::vector<std::string> dirs;
    for (int i = 1; i <= *repeats; ++i) {
      trainer::RunConfig c = *cfg;
      c.out = fmt::format("{}/repeat-{}", cfg->out, i);
      fmt::print("run {}/{}\n", i, *repeats);
      auto r = trainer::train(c, {true, stdout});
      if (!r) return fail(r.status().message());
      dirs.push_back(r->run_dir);
    }
    bool reproducible = true;
    for (size_t i = 1; i < dirs.size(); ++i) {
      auto d = analysis::diverge(dirs[0], dirs[i]);
      if (!d) return fail(d.status().message());
      if (!d->first_loss_step && !d->first_param_step) continue;
      reproducible = false;
      const auto& last = d->snapshots.back();
      fmt::print("run {} differs from run 1: losses from step {}, parameters from snapshot step {}; at step {} "
                 "rel_l2 {:.3g}, max {} ULP\n",
                 i + 1, d->first_loss_step ? std::to_string(*d->first_loss_step) : "-",
                 d->first_param_step ? std::to_string(*d->first_param_step) : "-", last.step, last.rel_l2,
                 last.max_ulp_distance);
    }
    fmt::print("bitwise reproducible: {} ({} runs of {} steps, {})\n", reproducible ? "yes" : "no", *repeats,
               cfg->steps, cfg->run_prefix());
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
