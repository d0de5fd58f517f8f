// Saddle episodes of one run, from its curvature probes (curvature.csv) and losses (metrics.csv): where
// the run entered a strict-saddle region, when it escaped, or that it never did (censored). Torch-free.
// docs/analysis.md defines every rule with an example; the defaults are DESIGN.md's.
//
// At probe step t (a row of curvature.csv; everything is measured on the fixed probe batch, so a value
// changes only when θ does — mini-batch losses at batch 1 are too noisy to compare against 1e-3):
//   in the region   ‖g_t‖ ≤ ε·G  and  λmin,t ≤ −γ·λmax,t  and  the probe loss changed by less than δ
//                   (relative) from the previous usable probe step (from t to the next one at the
//                   first step): a run that has just descended onto a plateau enters one probe later
//   G, the gradient scale, is the largest probe gradient norm of the run, not ‖g_0‖: a run that starts
//   at a saddle has a tiny g_0 (exactly 0 at an exact saddle) and DESIGN.md's ε·‖g_0‖ could never fire
//   there; for a run that starts away from saddles G is usually ‖g_0‖ itself.
//   an episode     opens at a probe step in the region and escapes at the first later probe step whose
//                  probe loss is more than f (relative) below the loss at entry ("loss"), or whose λmin
//                  rises above −γ/2·λmax ("curvature"). Later probe steps in the region open the next
//                  episode (cascades: the linear network learns one singular value after another). An episode
//                  still open at the last probe step is censored at it: a stall, not dropped.
// Resolution: an episode is seen only at probe steps, so its entry lies in (previous probe step, entry]
// and its escape in (previous probe step, exit]; both widths are reported.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/store/schema.h"

namespace saddlescope::analysis {

struct EpisodeOptions {
  double epsilon = 0.1;       // ε: gradient norm relative to the run's gradient scale G
  double gamma = 1e-3;        // γ: how negative λmin must be relative to λmax
  double delta = 1e-3;        // δ: the probe loss's largest relative change per probe interval on a plateau
  double escape_drop = 1e-2;  // f: relative fall of the probe loss below its level at entry that escapes
  int64_t loss_window = 50;   // optimiser steps of the trailing mean used for the loss-level crossings
  std::vector<double> loss_levels;  // absolute training-loss levels whose first crossing is reported

  // Errors name the option: ε, γ, δ, f must be > 0 and finite (δ may be +inf: no plateau rule), the
  // window >= 1, levels finite.
  Status validate() const;
};

struct Episode {
  int64_t entry_step = 0;
  int64_t entry_resolution = 0;  // entry − the previous probe step (0 at the first probe step)
  std::optional<int64_t> exit_step;  // the escape's probe step; none when censored
  int64_t exit_resolution = 0;       // exit − the previous probe step (0 when censored)
  bool censored = false;
  std::string exit_rule;             // "loss" | "curvature" | "" (censored)
  int64_t escape_steps = 0;          // optimiser steps from entry to exit, or to the censoring step
  int64_t probe_steps = 0;           // probe steps from entry up to (not including) the exit
  // At entry (curvature.csv's row; lr and batch_grad_norm from metrics.csv's row of that step, NaN when
  // it has none).
  double loss_entry = 0, grad_norm_entry = 0, lambda_min_entry = 0, lambda_max_entry = 0;
  double negative_mass_entry = 0;    // NaN unless the SLQ probe ran
  double g_dot_vmin_entry = 0;
  double lr_entry = 0, batch_grad_norm_entry = 0;
  double loss_exit = 0;              // probe loss at the exit step; NaN when censored
};

struct RunEpisodes {
  std::vector<Episode> episodes;     // in step order
  double gradient_scale = 0;         // G: the largest probe gradient norm
  int64_t probe_count = 0;           // curvature rows
  int64_t probe_interval = 0;        // median gap between probe steps (0 with fewer than 2 rows)
  int64_t last_probe_step = 0;       // censoring step
  int64_t time_in_saddle = 0;        // Σ escape_steps over the episodes
  // Per options.loss_levels entry: the first step whose trailing mean training loss (over the last
  // loss_window steps of metrics.csv, fewer at the start) is ≤ the level; none when it never is.
  std::vector<std::optional<int64_t>> level_crossings;
};

// The episodes of one run. `curvature` and `metrics` as read from the run (any order; steps must be
// distinct). A curvature row whose probe loss, gradient norm or λ is not finite is never in the region
// and never an escape. Errors: invalid options, repeated steps (naming the step).
Result<RunEpisodes> find_episodes(const std::vector<store::CurvatureRow>& curvature,
                                  const std::vector<store::MetricsRow>& metrics, const EpisodeOptions& options);

}  // namespace saddlescope::analysis
