// saddlescope analyze STUDY_DIR: saddle episodes, escape-time statistics, divergence and attribution
// of a study, into STUDY_DIR/analysis/ (analysis.json, one CSV per table, the replays behind the
// attribution), and a short verdict on stdout. docs/analysis.md defines every number.
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <tuple>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "saddlescope/analysis/analysis_result.h"
#include "saddlescope/analysis/study_analysis.h"
#include "saddlescope/base/process.h"
#include "saddlescope/base/progress.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/json_input.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/table.h"

namespace saddlescope::app {
namespace {

// Replays through `saddlescope replay` (this executable), one process per replay, since execution
// settings are global to a process; each replay's ops.csv stays in <dir>/replays/ as evidence, and a
// replay asked for twice is read back rather than run again.
class ProcessReplayer {
 public:
  ProcessReplayer(std::string self, std::string dir) : self_(std::move(self)), dir_(std::move(dir)) {}

  Result<std::vector<store::OpRow>> operator()(const std::string& run, const std::string& params, int64_t step,
                                               int64_t k) {
    auto key = std::make_tuple(run, params, step, k);
    const std::string out = fmt::format("{}/replays/{}-from-{}-step{}-k{}", dir_, base(run), base(params), step, k);
    auto it = done_.find(key);
    if (it == done_.end())
      it = done_.emplace(key, run_process({self_, "replay", run, "--step", std::to_string(step), "--params-from", params,
                                           "--ops", fmt::format("ops:at={},k={},wgrad=true,clamp=true", step, k), "--out", out}))
               .first;
    if (!it->second.ok()) return it->second;
    return store::read_table(out, store::kOps);
  }

 private:
  static std::string base(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }
  std::string self_, dir_;
  std::map<std::tuple<std::string, std::string, int64_t, int64_t>, Status> done_;  // each replay's outcome
};

// A curvature evaluation through `saddlescope curvature --run` (LibTorch, the run's device), as the
// curvature.csv row it writes (--row-out) into <dir>/refine/, kept as the refine pass's evidence and read
// through the table's declaration (store/schema.h).
Result<store::CurvatureRow> curvature_at(const std::string& self, const std::string& dir, const std::string& run,
                                         int64_t step, const std::string& spec) {
  const std::string out =
      fmt::format("{}/refine/{}-step{}", dir, run.substr(run.find_last_of('/') + 1), step);
  if (!store::file_exists(out + "/" + store::kCurvature.file)) {
    auto printed = run_process_output({self, "curvature", "--run", run, "--at-step", std::to_string(step), "--spec",
                                       spec.empty() ? "curvature" : spec, "--row-out", out});
    if (!printed) return printed.status();
  }
  auto rows = store::read_table(out, store::kCurvature);
  if (!rows) return rows.status();
  if (rows->size() != 1) return Status::Error(out + "/" + store::kCurvature.file + ": expected one row");
  store::CurvatureRow r = rows->front();
  r.step = step;
  return r;
}

// Writes analysis.json and its tables into `dir` (an AtomicDir's path) and commits it; returns the
// verdict to print, read through analysis.json's types (analysis_result.h). The analysis must be
// exactly what the types hold (decoded and encoded again, the same JSON): anything else would be the
// analysis's bug, an error naming the key, and nothing committed.
Result<std::string> write_analysis(store::AtomicDir& dir, const nlohmann::json& a) {
  auto typed = analysis::decode_analysis_exact(a);
  if (!typed) return Status::Error("analysis.json: " + typed.status().message());
  Status st = store::write_file_atomic(dir.path() + "/analysis.json", analysis::analysis_json(a));
  for (const auto& [name, text] : analysis::analysis_tables(a))
    if (st.ok()) st = store::write_file_atomic(dir.path() + "/" + name, text);
  if (st.ok()) st = dir.commit();
  if (!st.ok()) return st;
  return analysis::analysis_verdict(*typed);
}

// `analyze --reanalyze FILE --out DIR`: the group statistics of an earlier analysis.json again.
int reanalyze(const std::string& file, const std::string& out, const std::string& study,
              const analysis::AnalysisOptions& o) {
  if (!study.empty()) return fail("--reanalyze: give the analysis.json instead of a study directory, not both");
  if (out.empty()) return fail("--reanalyze: needs --out DIR (where the new analysis goes)");
  auto text = store::read_file(file, 256u << 20, "256 MiB");
  if (!text) return fail(text.status().message());
  auto earlier = store::parse_json(*text, file);
  if (!earlier) return fail(earlier.status().message());
  auto a = analysis::reanalyze(*earlier, o);
  if (!a) return fail(file + ": " + a.status().message());
  auto dir = store::AtomicDir::begin(out);
  if (!dir) return fail(dir.status().message());
  auto verdict = write_analysis(*dir, *a);
  if (!verdict) return fail(verdict.status().message());
  fmt::print("{}analysis: {}/analysis.json (reanalysis of {})\n", *verdict, out, file);
  return 0;
}

}  // namespace

Command add_analyze(CLI::App& app) {
  struct Args {
    std::string study;
    std::string reanalyze, out;
    std::string paired = "auto";
    analysis::AnalysisOptions o;
    bool no_replay = false;
    bool quiet = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "analyze", "Saddle episodes, escape statistics, divergence and rounding-vs-code attribution of a study");
  sub->add_option("study_dir", args->study, "Study directory (holds runs/)");
  sub->add_option("--reanalyze", args->reanalyze,
                  "Instead of a study directory: recompute the group statistics of this earlier analysis.json from "
                  "its recorded runs (for published results whose run directories are not kept); needs --out");
  sub->add_option("--out", args->out, "With --reanalyze: the directory to write the analysis into (all or nothing)");
  sub->add_option("--paired", args->paired,
                  "auto: test per-seed differences where two groups' runs share seeds and data order; on: pair "
                  "whatever seeds they share; off: independent samples")
      ->capture_default_str();
  sub->add_option("--power", args->o.power, "Detection probability of the reported detectable effects")
      ->capture_default_str();
  sub->add_option("--group-by", args->o.group_by,
                  "Config keys that name a run's group, comma-separated (default: the study's config names)")
      ->delimiter(',');
  sub->add_option("--baseline", args->o.baseline, "Compare this group with every other (default: every pair)");
  auto& e = args->o.episodes;
  sub->add_option("--proximity", e.proximity,
                  "Saddle region: ρ = ‖g‖²/(2|λmin|·L) <= proximity (the loss descended along v_min, as a fraction)")
      ->capture_default_str();
  sub->add_option("--epsilon", e.epsilon,
                  "Saddle region, optional: also ‖g‖ <= epsilon · G, G the run's largest probe gradient norm (inf: off)")
      ->capture_default_str();
  sub->add_option("--gamma", e.gamma, "Saddle region: −λmin > gamma · λmax")->capture_default_str();
  sub->add_option("--residual-factor", e.residual_factor,
                  "Saddle region: −λmin > residual-factor × its Ritz residual (significant negative curvature)")
      ->capture_default_str();
  sub->add_option("--delta", e.delta,
                  "Saddle region: |ΔL/Δstep| over the adjacent probe interval <= delta × the run's largest (inf: off)")
      ->capture_default_str();
  sub->add_option("--escape-drop", e.escape_drop, "Escape: the probe loss fell by more than this (relative) below entry")
      ->capture_default_str();
  sub->add_option("--loss-levels", e.loss_levels, "Report the first step each training-loss level is crossed")
      ->delimiter(',');
  sub->add_option("--loss-window", e.loss_window, "Steps of the trailing mean for --loss-levels")->capture_default_str();
  sub->add_option("--level", args->o.level, "Confidence level of bands and intervals")->capture_default_str();
  sub->add_option("--permutations", args->o.permutations, "Random splits of the permutation test")->capture_default_str();
  sub->add_option("--resamples", args->o.resamples, "Bootstrap resamples")->capture_default_str();
  sub->add_option("--seed", args->o.seed, "Seed of the permutation test and bootstrap")->capture_default_str();
  sub->add_option("--attribution-k", args->o.attribution_k, "Op-tap samples per op in attribution replays")
      ->capture_default_str();
  sub->add_flag("--no-replay", args->no_replay,
                "Attribute from the runs' recorded op taps only (no replays; they may need the runs' devices)");
  sub->add_flag("--refine", args->o.refine,
                "Also evaluate the curvature probe at the runs' snapshots inside each episode's entry and exit "
                "windows, for a finer escape time (needs snapshot_every; runs on the runs' devices)");
  sub->add_flag("--quiet", args->quiet, "No progress");
  auto run = [args]() -> int {
    analysis::AnalysisOptions& o = args->o;
    if (args->paired == "auto") o.pairing = analysis::AnalysisOptions::Pairing::kAuto;
    else if (args->paired == "on") o.pairing = analysis::AnalysisOptions::Pairing::kOn;
    else if (args->paired == "off") o.pairing = analysis::AnalysisOptions::Pairing::kOff;
    else return fail("--paired: expected auto, on or off, got '" + args->paired + "'");
    Status valid = o.validate();
    if (!valid.ok()) return fail("--" + valid.message());
    if (!args->reanalyze.empty()) return reanalyze(args->reanalyze, args->out, args->study, o);
    if (args->study.empty()) {  // a usage error, as CLI11's own: exit 2
      fail("analyze: give a study directory, or --reanalyze ANALYSIS_JSON --out DIR");
      return 2;
    }
    if (!args->out.empty()) return fail("--out: only with --reanalyze (a study's analysis goes to STUDY_DIR/analysis)");
    auto dir = store::AtomicDir::begin(args->study + "/analysis");
    if (!dir) return fail(dir.status().message());
    ProcessReplayer replayer(self_path(), dir->path());
    analysis::Replayer replay;
    if (!args->no_replay) replay = [&replayer](const std::string& r, const std::string& p, int64_t s, int64_t k) {
      return replayer(r, p, s, k);
    };
    std::unique_ptr<Progress> bar;
    auto progress = [&](int64_t done, int64_t total) {
      if (args->quiet) return;
      if (!bar) bar = std::make_unique<Progress>("analyze", total, "runs", stderr);
      if (done < total) bar->update(done, "reading runs");
      else if (Progress::is_terminal(stderr)) bar->finish(done, "runs read");  // off a terminal: lines only
                                                                             // every 10 s of a long read
    };
    const std::string self = self_path();
    const std::string staging = dir->path();
    analysis::CurvatureAt curvature = [&self, &staging](const std::string& run, int64_t step, const std::string& spec) {
      return curvature_at(self, staging, run, step, spec);
    };
    auto a = analysis::analyze_study(args->study, o, replay, progress, curvature);
    if (!a) return fail(a.status().message());
    auto verdict = write_analysis(*dir, *a);
    if (!verdict) return fail(verdict.status().message());
    fmt::print("{}analysis: {}/analysis/analysis.json\n", *verdict, args->study);
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
