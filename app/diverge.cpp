// saddlescope diverge RUN_A RUN_B: where two runs' trajectories first differ and how far they drift, and
// the first op whose bits parted — from the runs' own ophash.csv, or from replays that record it.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

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
#include "saddlescope/store/table.h"

namespace fs = std::filesystem;

namespace saddlescope::app {

namespace {

// Where the first op was looked for, and what was found.
struct OpSearch {
  std::string source;  // "recorded" (the runs' ophash.csv), "replayed", or "" (not looked for)
  int64_t replayed_steps = 0;
  std::string reason;  // why no op is named, when none is
  std::optional<analysis::FirstOp> op;
  std::string run_a, run_b;  // the runs the op was found in (the replays, when replayed)
};

// The found op against the exact reference: the op taps of one run's step replayed at its own snapshot.
struct Side {
  int64_t measured = 0, beyond = 0;
  double max_ulp = 0;   // largest |ULP error| among the measured rows
  std::string error;    // why there is no measurement
};
struct Classification {
  std::string kernel, phase;  // the op taps' names for the found op ("conv2d", "wgrad")
  Side a, b;
  std::string verdict;        // "rounding" | "beyond the rounding bound" | "" (not classified)
  std::string why_not;        // when not classified
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

// A replay: the run directory it wrote, and its op digests.
struct Replay {
  std::string run_dir;
  std::vector<store::OpHashRow> rows;
};

// Steps 0 .. steps-1 of `run_dir`'s config trained again with ophash on every step, in a process of its
// own: execution settings (threads, cuDNN flags, CUBLAS_WORKSPACE_CONFIG) are per process.
Result<Replay> replay(const std::string& run_dir, int64_t steps, const std::string& out) {
  Status st = run_process({self_path(), "train", "--like", run_dir, "--steps", std::to_string(steps), "--probe",
                           "ophash:every=1", "--snapshot-every", "0", "--out", out});
  if (!st.ok()) return Status::Error("replay of " + run_dir + ": " + st.message());
  auto run = only_run(out);
  if (!run) return run.status();
  auto rows = ophash_of(*run);
  if (!rows) return rows.status();
  return Replay{*run, std::move(*rows)};
}

// The steps a replay must train to reach the first difference the runs' files show: through the step
// of the first differing loss, before the first differing snapshot. 0: they started apart.
std::optional<int64_t> replay_steps(const analysis::Divergence& d) {
  std::optional<int64_t> steps;
  if (d.first_param_step) steps = *d.first_param_step;
  if (d.first_loss_step) steps = std::min(steps.value_or(*d.first_loss_step + 1), *d.first_loss_step + 1);
  return steps;
}

// `dir`: where replays go (a new directory of the caller's).
Result<OpSearch> search(const std::string& a, const std::string& b, const analysis::Divergence& d, bool allow_replay,
                        const std::string& dir) {
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
    s.run_a = a, s.run_b = b;
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
  auto ra = replay(a, *steps, dir + "/a");
  if (!ra) return ra.status();
  auto rb = replay(b, *steps, dir + "/b");
  if (!rb) return rb.status();
  s.run_a = ra->run_dir, s.run_b = rb->run_dir;
  auto f = analysis::first_divergent_op(ra->rows, rb->rows);
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

// The op taps' kernel and phase for the found op (probes/op_taps.h), or nullopt when diverge does not
// classify such an op: forward linear (addmm, mm, matmul, bmm), convolutions, activations, the loss,
// softmax, log_softmax, layer_norm and batch_norm; a convolution's weight or input gradient; the loss's
// gradient w.r.t. its prediction. Kernel names are the trace's ATen names less the dispatcher's
// prefixes (_softmax, native_layer_norm, cudnn_batch_norm: softmax, layer_norm, batch_norm).
std::optional<std::pair<std::string, std::string>> tap_key(const analysis::FirstOp& f) {
  std::string kernel = f.op.substr(f.op.rfind(':') + 1);
  for (const char* prefix : {"_", "native_", "cudnn_", "miopen_"})
    if (kernel.rfind(prefix, 0) == 0) kernel = kernel.substr(std::string(prefix).size());
  if (f.phase == "fwd") {
    if (kernel == "addmm" || kernel == "matmul" || kernel == "mm" || kernel == "bmm")
      return std::make_pair(std::string("linear"), std::string("fwd"));
    if (kernel == "convolution") return std::make_pair(std::string("conv2d"), std::string("fwd"));
    for (const char* k : {"linear", "conv2d", "sigmoid", "tanh", "relu", "mse_loss", "softmax", "log_softmax",
                          "layer_norm", "batch_norm"})
      if (kernel == k) return std::make_pair(kernel, std::string("fwd"));
    return std::nullopt;
  }
  if (kernel == "convolution_backward" && f.result == "the weight gradient") return std::make_pair(std::string("conv2d"), std::string("wgrad"));
  if (kernel == "convolution_backward" && f.result == "the input gradient") return std::make_pair(std::string("conv2d"), std::string("dgrad"));
  if (kernel == "mse_loss_backward") return std::make_pair(std::string("mse_loss"), std::string("dgrad"));
  return std::nullopt;
}

// Adds to `side` the measured rows of the kernel and phase, at `module` when the taps name it.
void count(const std::vector<store::OpRow>& rows, const std::string& module, const std::string& kernel,
           const std::string& phase, Side* side) {
  // Built-in models' taps name an op by its layer ("encoder.fc1", kernel linear); generic taps by layer and
  // the ATen op inside ("encoder.fc1:addmm", kernel addmm).
  auto family = [](const std::string& k) -> std::string {
    if (k == "linear" || k == "addmm" || k == "mm" || k == "matmul" || k == "bmm") return "linear";
    if (k.find("conv") != std::string::npos) return "conv";
    return k;
  };
  auto at_module = [&](const store::OpRow& r) { return r.op == module || r.op.rfind(module + ":", 0) == 0; };
  const bool named = !module.empty() && std::any_of(rows.begin(), rows.end(), at_module);
  for (const auto& r : rows) {
    if (family(r.kernel) != family(kernel) || r.phase != phase || (r.flag != "within" && r.flag != "beyond")) continue;
    if (named && !at_module(r)) continue;
    ++side->measured;
    side->beyond += r.flag == "beyond";
    side->max_ulp = std::max(side->max_ulp, std::fabs(r.ulp_error));
  }
}

// Rows of the kernel and phase at `module` (the found op's, when the taps name ops as the trace does,
// e.g. encoder.fc1), else at every op of that kernel and phase: from the model's own taps first, then,
// when they sample no such result (a built-in model's convolution input gradient), from taps on every
// ATen op (aten=true).
Side measure(const std::string& run_dir, int64_t step, const std::string& module, const std::string& kernel,
             const std::string& phase, const std::string& out) {
  Side side;
  for (const char* aten : {"", ",aten=true"}) {
    side = Side{};
    const std::string dir = out + (*aten ? "-aten" : "");
    Status st = run_process({self_path(), "replay", run_dir, "--step", std::to_string(step), "--ops",
                             fmt::format("ops:at={},k=64,clamp=true{}", step, aten), "--out", dir});
    if (!st.ok()) {
      side.error = st.message();
      return side;
    }
    auto rows = store::read_table<store::OpRow>(dir, store::kOps);
    if (!rows) {
      side.error = rows.status().message();
      return side;
    }
    count(*rows, module, kernel, phase, &side);
    if (side.measured > 0) return side;
  }
  side.error = fmt::format("the op taps measured no {} {} result at step {}", kernel, phase, step);
  return side;
}

// Both runs' op taps at the found op's step, on their own parameters there (a snapshot at that step:
// step 0 always has one), each replayed in a process of its own.
Classification classify(const OpSearch& s, const std::string& dir) {
  Classification c;
  const analysis::FirstOp& f = *s.op;
  auto key = tap_key(f);
  if (!key) {
    c.why_not = "the op taps evaluate no " + f.op + (f.result.empty() ? "" : " (" + f.result + ")");
    return c;
  }
  c.kernel = key->first, c.phase = key->second;
  for (const std::string& run : {s.run_a, s.run_b}) {
    auto r = store::RunDir::open(run);
    if (!r || !r->snapshot_path(f.step)) {
      c.why_not = fmt::format("{} has no snapshot at step {} (train with --snapshot-every)", run, f.step);
      return c;
    }
  }
  const std::string module = f.op.find(':') == std::string::npos ? "" : f.op.substr(0, f.op.find(':'));
  c.a = measure(s.run_a, f.step, module, c.kernel, c.phase, dir + "/taps-a");
  c.b = measure(s.run_b, f.step, module, c.kernel, c.phase, dir + "/taps-b");
  if (!c.a.error.empty() || !c.b.error.empty()) {
    c.why_not = !c.a.error.empty() ? c.a.error : c.b.error;
    return c;
  }
  c.verdict = c.a.beyond + c.b.beyond == 0 ? "rounding" : "beyond the rounding bound";
  return c;
}

std::string classification_line(const Classification& c) {
  if (c.verdict.empty()) return "classified: not (" + c.why_not + ")";
  auto side = [](const char* name, const Side& x) {
    return fmt::format("{} {} of {} sampled results beyond (largest error {:.3g} ULP)", name, x.beyond, x.measured,
                       x.max_ulp);
  };
  return fmt::format("classified: {} — op taps of {} {} against the exact reference: {}, {}", c.verdict, c.kernel,
                     c.phase, side("A", c.a), side("B", c.b));
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

nlohmann::json to_json(const OpSearch& s, const std::optional<Classification>& c, const std::string& a,
                       const std::string& b) {
  nlohmann::json j = {{"run_a", a}, {"run_b", b}, {"source", s.source}, {"line", line(s)}};
  if (c) {
    j["classification"] = {{"verdict", c->verdict}, {"kernel", c->kernel}, {"phase", c->phase}, {"why_not", c->why_not},
                           {"line", classification_line(*c)}};
    for (auto [name, x] : {std::make_pair("a", &c->a), std::make_pair("b", &c->b)})
      j["classification"][name] = {{"measured", x->measured}, {"beyond", x->beyond}, {"max_abs_ulp_error", x->max_ulp}};
  }
  if (s.source == "replayed") j["replayed_steps"] = s.replayed_steps;
  j["found"] = s.op && s.op->found;
  if (s.op && s.op->found) {
    const analysis::FirstOp& f = *s.op;
    j["step"] = f.step, j["index"] = f.index, j["kind"] = f.kind, j["op"] = f.op, j["phase"] = f.phase;
    j["shape"] = f.shape, j["dtype"] = f.dtype;
    if (f.kind == "ops differ") j["op_b"] = f.op_b;
    if (!f.result.empty()) j["result"] = f.result, j["result_shape"] = f.result_shape, j["also"] = f.also;
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
  sub->add_flag("--no-replay", args->no_replay, "Never train or replay: name the op only from the runs' own "
                                               "ophash.csv, and do not classify it");
  sub->add_option("--replay-dir", args->replay_dir, "Keep the replays in this new directory (default: a temporary one, "
                                                    "removed)");
  sub->footer("The first op comes from both runs' ophash.csv when they recorded it (train --probe ophash).\n"
              "Otherwise, when the runs differ, both configs are trained again from their initial weights (train\n"
              "--like RUN --probe ophash:every=1) through the first step their losses or snapshots differ, each\n"
              "in a process of its own. A replay of a nondeterministic run is a new draw: it may part elsewhere,\n"
              "or not at all, which the line then says. An op that parted from equal inputs is then classified:\n"
              "both runs' step replayed at their snapshot of that step with op taps (saddlescope replay), its\n"
              "sampled results against the exact reference: all within float32's rounding bound, or not.");
  auto run = [args]() -> int {
    if (!args->replay_dir.empty() && fs::exists(args->replay_dir))
      return fail("--replay-dir: " + args->replay_dir + " exists; the replays write a new directory");
    auto d = analysis::diverge(args->a, args->b);
    if (!d) return fail(d.status().message());
    std::string table = analysis::to_csv(*d);
    if (!args->csv.empty()) {
      Status st = store::write_file_atomic(args->csv, table);
      if (!st.ok()) return fail(st.message());
    }
    fmt::print("{}\n{}", table, analysis::summarize(*d, args->a, args->b));
    std::fflush(stdout);
    // The replays' directory: --replay-dir (new, kept) or a temporary one, removed at the end.
    std::string work = args->replay_dir;
    std::error_code ec;
    if (!work.empty() && !fs::create_directories(work, ec))
      return fail("--replay-dir: cannot create " + work + (ec ? ": " + ec.message() : ""));
    if (work.empty()) {
      char tmpl[] = "/tmp/saddlescope-diverge-XXXXXX";
      if (!::mkdtemp(tmpl)) return fail("cannot create a directory for the replays under /tmp");
      work = tmpl;
    }
    auto s = search(args->a, args->b, *d, !args->no_replay, work);
    std::optional<Classification> c;
    if (s && s->op && s->op->found && s->op->kind == "inputs equal" && !args->no_replay) c = classify(*s, work);
    if (args->replay_dir.empty()) (void)remove_tree(work);
    if (!s) return fail(s.status().message());
    fmt::print("{}\n", line(*s));
    if (c) fmt::print("{}\n", classification_line(*c));
    if (!args->json.empty()) {
      Status st = store::write_file_atomic(args->json, to_json(*s, c, args->a, args->b).dump(2) + "\n");
      if (!st.ok()) return fail(st.message());
    }
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
