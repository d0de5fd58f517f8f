// The analysis of a whole study directory: every run's saddle episodes, the groups' escape-time
// survival curves, the group comparisons with their statistics and Holm correction, trajectory
// divergence of paired runs, the escape-time theory check, and the attribution of every difference to
// rounding or to code. Its product is analysis.json, a public schema (docs/analysis.md). Torch-free:
// replaying a step on a config (which needs LibTorch and maybe a GPU) is the caller's Replayer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/analysis/episodes.h"
#include "saddlescope/base/status.h"
#include "saddlescope/store/schema.h"

namespace saddlescope::analysis {

struct AnalysisResult;  // analysis_result.h

struct AnalysisOptions {
  EpisodeOptions episodes;
  // Config keys whose values name a run's group ("device=cpu,threads=1"); empty: the study config the
  // run belongs to (the manifest's study.config), or its config_key outside a study.
  std::vector<std::string> group_by;
  std::string baseline;     // a group compared with every other; empty: every pair of groups
  // Paired design: two groups whose runs share seeds and data order (and so, within a model, initial
  // weights) are compared through per-seed differences. kAuto: paired when every run of the smaller
  // group has a partner of the same seed and data_seed in the other (at least 2); kOn: paired over
  // whatever seeds they share (at least 2); kOff: never.
  enum class Pairing { kAuto, kOn, kOff } pairing = Pairing::kAuto;
  double power = 0.8;       // the detection probability of the detectable effects
  double level = 0.95;      // confidence level of the bands and intervals
  int64_t permutations = 9999, resamples = 9999;  // permutation test and bootstrap sizes
  uint64_t seed = 0;        // their random streams
  bool attribution = true;  // replay the first differing step of one seed per pair
  int64_t attribution_k = 16;  // op-tap samples per op in a replay
  // A second pass for resolution: evaluate the curvature probe at the run's snapshots that lie inside
  // each episode's entry and exit windows (between the probe step before and the step it was seen),
  // then find the episodes again on the probe steps and these together.
  bool refine = false;

  // Errors name the option.
  Status validate() const;
};

// Replays optimiser step `step` on the config of run `run_dir`, from the parameters of run
// `params_run_dir`'s snapshot at that step, with op taps of k samples per op: the rows of ops.csv.
// An error (no CUDA here, no such snapshot) makes the attribution fall back to recorded taps.
using Replayer = std::function<Result<std::vector<store::OpRow>>(const std::string& run_dir,
                                                                 const std::string& params_run_dir, int64_t step,
                                                                 int64_t k)>;

// One curvature probe evaluation (`spec`, the run's own curvature probe) of run `run_dir` at its snapshot
// `step`, as a curvature.csv row: the refine pass's evaluator.
using CurvatureAt = std::function<Result<store::CurvatureRow>(const std::string& run_dir, int64_t step,
                                                              const std::string& spec)>;

// The group a run of a study belongs to: its config, or "model/config" when the study has runs of
// several models (one config's runs of two models are not one sample). The analysis and the report's
// plan of runs both name groups through this.
inline std::string study_group(const std::string& model, const std::string& config, bool several_models) {
  return several_models ? model + "/" + config : config;
}

// Analyses <study_dir>/runs/*. Runs that cannot be analysed (not completed or diverged, unreadable or
// foreign files, no curvature probe) are listed with the reason and left out of the statistics; the
// analysis itself fails only for a study directory without runs, or bad options (a group_by key no run
// has, a baseline that is no group). `replay` may be empty (no attribution replays). `progress`, when
// set, is called with (done, total) as runs are read. `curvature_at` serves options.refine (without it,
// refine is an error).
Result<nlohmann::json> analyze_study(const std::string& study_dir, const AnalysisOptions& options,
                                     const Replayer& replay = {},
                                     const std::function<void(int64_t, int64_t)>& progress = {},
                                     const CurvatureAt& curvature_at = {});

// The group statistics of an earlier analysis.json again, with `options`' statistics: groups,
// comparisons (paired where the design is), Holm and the detectable effects, recomputed from its runs[]
// as recorded (group, seed, data_seed — the seed when absent —, model, final_loss, time_in_saddle,
// episodes' escape_steps and censored). runs[], divergence, attribution and theory are kept as written:
// they need the run directories. For published results whose run directories are not kept. Errors name
// the run index and key; a baseline that is no group.
Result<nlohmann::json> reanalyze(const nlohmann::json& earlier, const AnalysisOptions& options);

// analysis.json's text: `analysis` as JSON indented by two spaces, with a final newline. Strings that
// came from run files are not always UTF-8 (a byte of an op name in ops.csv, of a field echoed in an
// error): their invalid bytes are written as U+FFFD, so that the text is always JSON.
std::string analysis_json(const nlohmann::json& analysis);

// analysis.json's tables as CSV files: file name -> contents (runs.csv, episodes.csv, km.csv,
// comparisons.csv, divergence.csv, attribution.csv, theory.csv).
std::vector<std::pair<std::string, std::string>> analysis_tables(const nlohmann::json& analysis);

// The short verdict `saddlescope analyze` prints: per pair of groups, whether escape and final loss
// differ (effect size, CI, Holm-adjusted p) and whether the differences are rounding or code.
std::string analysis_verdict(const AnalysisResult& analysis);

}  // namespace saddlescope::analysis
