// saddlescope diverge RUN_A RUN_B: where two runs' trajectories first differ and how far they drift, and
// the first op whose bits parted — from the runs' own ophash.csv, or from replays that record it.
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "saddlescope/analysis/divergence.h"
#include "saddlescope/analysis/first_op.h"
#include "saddlescope/base/process.h"
#include "saddlescope/base/remove_tree.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/run_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::app {

namespace {

// Where the first op was looked for, and what was found.
struct OpSearch {
  std::string source;  // "recorded" (the runs' ophash.csv), "replayed", or "" (not looked for)
  int64_t replayed_steps = 0;
  std::string reason;  // why no op is named, when none is
  std::optional<analysis::FirstOp> op;
};

Result<std::vector<store::OpHashRow>> ophash_of(const std::string& run_dir) {
  auto run = store::RunDir::open(run_dir);
  if (!run) return run.status();
  if (!run->has(store::kOpHash.file)) return std::vector<store::OpHashRow>{};
  return run->ophash();
}

// The one run directory a replay's `train --out study_dir` wrote.
Result<std::string> only_run(const std::string& study_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(study_dir + "/runs", ec))
    if (e.is_directory()) return e.path().string();
  return Status::Error(study_dir + "/runs: the replay wrote no run directory");
}

// Steps 0 .. steps-1 of `run_dir`'s config trained again with ophash on every step, in a process of its
// own: execution settings (threads, cuDNN flags, CUBLAS_WORKSPACE_CONFIG) are per process.
Result<std::vector<store::OpHashRow>> replay(const std::string& run_dir, int64_t steps, const std::string& out) {
  Status st = run_process({self_path(), "train", "--like", run_dir, "--steps", std::to_string(steps), "--probe",
                           "ophash:every=1", "--snapshot-every", "0", "--out", out});
  if (!st.ok()) return Status::Error("replay of " + run_dir + ": " + st.message());
  auto run = only_run(out);
  if (!run) return run.status();
  return ophash_of(*run);
}

// The steps a replay must train to reach the first difference the runs' files show: through the step
// of the first differing loss, before the first differing snapshot. 0: they started apart.
std::optional<int64_t> replay_steps(const analysis::Divergence& d) {
  std::optional<int64_t> steps;
  if (d.first_param_step) steps = *d.first_param_step;
  if (d.first_loss_step) steps = std::min(steps.value_or(*d.first_loss_step + 1), *d.first_loss_step + 1);
  return steps;
}

Result<OpSearch> search(const std::string& a, const std::string& b, const analysis::Divergence& d, bool allow_replay,
                        const std::string& keep) {
  OpSearch s;
  const std::optional<int64_t> steps = replay_steps(d);
  auto ha = ophash_of(a);
  if (!ha) return ha.status();
  auto hb = ophash_of(b);
  if (!hb) return hb.status();
  if (!ha->empty() && !hb->empty()) {
    auto f = analysis::first_divergent_op(*ha, *hb);
    if (!f) return f.status();
    s.source = "recorded";
    s.op = *f;
    if (f->found || !steps) return s;  // named, or the runs agree: nothing to replay
  }
  if (!steps) {
    s.reason = "none: the runs' parameters and losses agree bitwise";
    return s;
  }
  if (*steps == 0) {
    s.reason = "none: the runs start from different parameters (their step-0 snapshots differ)";
    return s;
  }
  if (!allow_replay) {
    s.reason = "not recorded (train both runs with --probe ophash, or let diverge replay them)";
    return s;
  }
  std::string dir = keep;
  if (dir.empty()) {
    char tmpl[] = "/tmp/saddlescope-diverge-XXXXXX";
    if (!::mkdtemp(tmpl)) return Status::Error("cannot create a directory for the replays under /tmp");
    dir = tmpl;
  } else if (fs::exists(dir)) {
    return Status::Error("--replay-dir: " + dir + " exists; the replays write a new directory");
  }
  auto ra = replay(a, *steps, dir + "/a");
  auto rb = ra ? replay(b, *steps, dir + "/b") : Result<std::vector<store::OpHashRow>>(ra.status());
  if (keep.empty()) (void)remove_tree(dir);
  if (!rb) return rb.status();
  auto f = analysis::first_divergent_op(*ra, *rb);
  if (!f) return f.status();
  s.source = "replayed";
  s.replayed_steps = *steps;
  s.op = *f;
  if (!f->found)
    s.reason = fmt::format("none in the replays: steps 0 to {} ran the same bits in both (the difference between "
                           "the runs did not recur: a nondeterministic op agreed this time)",
                           *steps - 1);
  return s;
}

std::string line(const OpSearch& s) {
  if (s.op && s.op->found) {
    std::string text = analysis::describe(*s.op);
    if (s.source == "replayed") text += fmt::format(" (in replays of steps 0 to {})", s.replayed_steps - 1);
    return text;
  }
  if (!s.reason.empty()) return "first divergent op: " + s.reason;
  return analysis::describe(*s.op);
}

nlohmann::json to_json(const OpSearch& s, const std::string& a, const std::string& b) {
  nlohmann::json j = {{"run_a", a}, {"run_b", b}, {"source", s.source}, {"line", line(s)}};
  if (s.source == "replayed") j["replayed_steps"] = s.replayed_steps;
  j["found"] = s.op && s.op->found;
  if (s.op && s.op->found) {
    const analysis::FirstOp& f = *s.op;
    j["step"] = f.step, j["index"] = f.index, j["kind"] = f.kind, j["op"] = f.op, j["phase"] = f.phase;
    j["shape"] = f.shape, j["dtype"] = f.dtype;
    if (f.kind == "ops differ") j["op_b"] = f.op_b;
  }
  return j;
}

}  // namespace

Command add_diverge(CLI::App& app) {
  struct Args {
    std::string a, b, csv, json, replay_dir;
    bool no_replay = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("diverge", "Compare two runs' trajectories snapshot by snapshot; name the "
                                                "first op whose bits parted");
  sub->add_option("run_a", args->a, "Run directory A (the reference, e.g. the float64 run)")->required();
  sub->add_option("run_b", args->b, "Run directory B")->required();
  sub->add_option("--csv", args->csv, "Also write the per-snapshot table to this CSV file");
  sub->add_option("--json", args->json, "Also write the first divergent op as JSON to this file");
  sub->add_flag("--no-replay", args->no_replay, "Never train: name the op only from the runs' own ophash.csv");
  sub->add_option("--replay-dir", args->replay_dir, "Keep the replays in this new directory (default: a temporary one, "
                                                    "removed)");
  sub->footer("The first op comes from both runs' ophash.csv when they recorded it (train --probe ophash).\n"
              "Otherwise, when the runs differ, both configs are trained again from their initial weights (train\n"
              "--like RUN --probe ophash:every=1) through the first step their losses or snapshots differ, each\n"
              "in a process of its own. A replay of a nondeterministic run is a new draw: it may part elsewhere,\n"
              "or not at all, which the line then says.");
  auto run = [args]() -> int {
    auto d = analysis::diverge(args->a, args->b);
    if (!d) return fail(d.status().message());
    std::string table = analysis::to_csv(*d);
    if (!args->csv.empty()) {
      Status st = store::write_file_atomic(args->csv, table);
      if (!st.ok()) return fail(st.message());
    }
    fmt::print("{}\n{}", table, analysis::summarize(*d, args->a, args->b));
    std::fflush(stdout);
    auto s = search(args->a, args->b, *d, !args->no_replay, args->replay_dir);
    if (!s) return fail(s.status().message());
    fmt::print("{}\n", line(*s));
    if (!args->json.empty()) {
      Status st = store::write_file_atomic(args->json, to_json(*s, args->a, args->b).dump(2) + "\n");
      if (!st.ok()) return fail(st.message());
    }
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
