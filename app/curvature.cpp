// saddlescope curvature: the curvature probe once, at given parameters, as JSON (also used to check the
// probes against other tools).
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "run_flags.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/schema.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/train.h"

namespace saddlescope::app {
Command add_curvature(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("curvature", "Evaluate the curvature probe once and print JSON");
  // Keys of a training that one evaluation has no use for; the probe's options go in --spec.
  auto flags = std::make_shared<RunFlags>(
      sub,
      std::vector<std::string>{"probe", "steps", "lr", "lr_drop_at", "log_every", "snapshot_every", "snapshot_grads",
                               "checkpoint_every", "perturbation", "perturbation_seed", "out"},
      "the probe's options go in --spec, e.g. --spec curvature:k=2");
  auto at_step = std::make_shared<int64_t>(-1);
  auto spec = std::make_shared<std::string>("curvature");
  auto run_dir = std::make_shared<std::string>();
  sub->add_option("--run", *run_dir,
                  "Evaluate a run's model at its snapshot --at-step, with the run's own config (no other config flags)");
  sub->add_option("--at-step", *at_step, "Parameters of this snapshot step of the --init-from run")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--spec", *spec, "The curvature probe's options, e.g. curvature:k=3,tol=1e-4,float64=true");
  auto row_out = std::make_shared<std::string>();
  sub->add_option("--row-out", *row_out,
                  "Also write the evaluation as curvature.csv's row (step 0) into this new directory");
  sub->footer("Example: saddlescope curvature --data mnist --init-from runs/ae/runs/<id> --at-step 1000 "
              "--spec curvature:k=2,trace=50");
  auto run = [flags, at_step, spec, run_dir, row_out]() -> int {
    auto cfg = run_dir->empty() ? flags->resolve() : run_config(*run_dir);
    if (!cfg) return fail((run_dir->empty() ? "" : "--run: ") + cfg.status().message());
    if (!run_dir->empty()) {
      if (flags->any_given()) return fail("--run: the run's config is used; give no config flags with it");
      cfg->init_from = *run_dir;
    }
    auto e = trainer::curvature_at(*cfg, *at_step, *spec);
    if (!e) return fail(e.status().message());
    if (!row_out->empty()) {  // through the table's own declaration, staged and renamed into place
      auto dir = store::AtomicDir::begin(*row_out);
      if (!dir) return fail("--row-out: " + dir.status().message());
      auto csv = store::TableWriter<store::CurvatureRow>::create(dir->path(), store::kCurvature);
      if (!csv) return fail("--row-out: " + csv.status().message());
      csv->append(e->row);
      Status st = csv->flush();
      if (st.ok()) st = dir->commit();
      if (!st.ok()) return fail("--row-out: " + st.message());
    }
    fmt::print("{}\n", e->detail.dump(2));
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
