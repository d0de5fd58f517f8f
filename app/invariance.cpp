// saddlescope invariance: is a model's prediction for an example the same bits whatever else is in its
// batch, and which op first decides it (trainer/invariance.h).
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "run_flags.h"
#include "saddlescope/base/text.h"
#include "saddlescope/reports/invariance.h"
#include "saddlescope/store/files.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/invariance.h"

namespace saddlescope::app {
namespace {

Result<std::vector<int64_t>> parse_sizes(const std::string& text) {
  std::vector<int64_t> sizes;
  for (const auto& part : split(text, ',')) {
    int64_t v = 0;
    if (!parse_int(part, &v)) return Status::Error(fmt::format("--batch-sizes: '{}' is not a batch size", printable(part)));
    sizes.push_back(v);
  }
  return sizes;
}

std::string describe(const trainer::InvarianceCase& c) {
  if (c.first_op.empty()) return c.equal == c.examples ? "" : "(no traced op differs)";
  std::string s = fmt::format("{} {} ({}", c.first_op, c.phase, c.how);
  if (c.how == "values") s += fmt::format(", {:g} ULP", c.op_max_ulp);
  if (!c.detail.empty() && c.how != "values") s += ": " + c.detail;
  s += fmt::format("; op {} of {}, example {})", c.op_index + 1, c.ops, c.example);
  if (c.bound == "within" || c.bound == "beyond")
    s += fmt::format(" {} the rounding bound (largest ratio {:.3g} of {} samples)", c.bound, c.bound_ratio, c.samples);
  else if (!c.bound.empty())
    s += " " + c.bound;
  return s;
}

}  // namespace

Command add_invariance(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "invariance", "Is an example's prediction the same bits alone and in any batch? Names the first op that differs");
  auto flags = std::make_shared<RunFlags>(
      sub,
      std::vector<std::string>{"probe", "steps", "lr", "lr_drop_at", "log_every", "snapshot_every", "snapshot_grads",
                               "checkpoint_every", "perturbation", "perturbation_seed", "out", "batch_size"},
      "the batches are --batch-sizes; nothing is trained");
  auto options = std::make_shared<trainer::InvarianceOptions>();
  auto sizes = std::make_shared<std::string>("2,8,32,128");
  auto positions = std::make_shared<std::string>("first,middle,last");
  auto json = std::make_shared<std::string>();
  sub->add_option("--examples", options->examples, "Evaluation rows checked (default 8)");
  sub->add_option("--batch-sizes", *sizes, "Batch sizes, joined by ',' (default 2,8,32,128)");
  sub->add_option("--positions", *positions, "Where the example sits in a batch: first, middle, last (default all)");
  sub->add_flag("--backward", options->backward,
                "Also differentiate the prediction (a fixed upstream gradient per example) and compare the backward");
  sub->add_option("--k", options->k, "Op-tap samples for the bound check of the first differing op (0: none; default 16)");
  sub->add_option("--repeats", options->repeats, "Timed evaluations per batch size (default 10)");
  sub->add_option("--json", *json, "Also write the result as JSON to this file");
  sub->footer("Columns: examples bitwise equal (prediction and, with --backward, input gradient); the prediction's "
              "largest difference in ULPs and relative to the output's largest magnitude; grad rel: the same for "
              "the input's gradient.\n"
              "Example: saddlescope invariance --model autoencoder --data mnist --device cpu --threads 1 --json inv.json\n"
              "Exit status 0 whether or not the model is invariant; 1 on an error.");
  auto run = [flags, options, sizes, positions, json]() -> int {
    auto s = parse_sizes(*sizes);
    if (!s) return fail(s.status().message());
    options->batch_sizes = *s;
    options->positions = split(*positions, ',');
    if (Status st = trainer::check_invariance_options(*options); !st.ok()) return fail(st.message());
    if (!json->empty()) {  // checked before the work: the file is written whole at the end, or not at all
      const std::filesystem::path parent = std::filesystem::absolute(*json).parent_path();
      std::error_code ec;
      if (!std::filesystem::is_directory(parent, ec))
        return fail("--json: " + parent.string() + ": no such directory");
    }
    auto cfg = flags->resolve();
    if (!cfg) return fail(cfg.status().message());
    auto r = trainer::check_invariance(*cfg, *options, stderr);
    if (!r) return fail(r.status().message());
    fmt::print("invariance  model {} on {}, {}; {} examples; {}\n", r->model, r->device, r->dtype, options->examples,
               options->backward ? "prediction and backward" : "prediction");
    const bool grad = options->backward;
    fmt::print("{:>6}  {:<8}  {:>7}  {:>8}  {:>9}  {}{}\n", "batch", "position", "equal", "max ULP", "max rel",
               grad ? "grad rel   " : "", "first op that differs");
    for (const auto& c : r->cases)
      fmt::print("{:>6}  {:<8}  {:>7}  {:>8g}  {:>9.3g}  {}{}\n", c.batch, c.position,
                 fmt::format("{}/{}", c.equal, c.examples), c.max_ulp, c.max_relative,
                 grad ? fmt::format("{:>9.3g}  ", c.grad_max_relative) : "", describe(c));
    for (const auto& t : r->timings)
      fmt::print("time     batch {:>4}: median {:.3g} s (min {:.3g}, max {:.3g}; {} repeats of {})\n", t.batch,
                 t.median_s, t.min_s, t.max_s, options->repeats, grad ? "forward and backward" : "forward");
    fmt::print("verdict  {}\n", r->invariant ? "batch-invariant at every batch size and position tried"
                                             : "not batch-invariant");
    if (!json->empty()) {
      Status st = store::write_file_atomic(*json, trainer::to_json(*r).dump(2) + "\n");
      if (!st.ok()) return fail("--json: " + st.message());
    }
    return 0;
  };
  return {sub, run};
}

Command add_invariance_table(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "invariance-table", "One Markdown table row per `invariance --json` result: invariant, differences, first op, time");
  sub->add_option("files", *files, "Results named MODEL-DEVICE-CONFIG.json; times compare with the first of a model")
      ->required();
  sub->add_option("--json", *json, "Also write the rows' numbers (times in ms, the ratios) as JSON to this file");
  sub->footer("Example: saddlescope invariance-table out/autoencoder-cpu-t1.json out/autoencoder-cpu-tall.json > table.md");
  auto run = [files, json]() -> int {
    auto rows = reports::read_invariance(*files);
    if (!rows) return fail(rows.status().message());
    if (!json->empty()) {
      Status st = store::write_file_atomic(*json, reports::invariance_json(*rows));
      if (!st.ok()) return fail("--json: " + st.message());
    }
    fmt::print("{}", reports::invariance_markdown(*rows));
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
