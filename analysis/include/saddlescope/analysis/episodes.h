// Saddle episodes of one run, from its curvature probes (curvature.csv), losses (metrics.csv) and, when
// it ran, its symmetry probe (symmetry.csv): where the run entered a strict-saddle region, when it
// escaped, or that it never did (censored). Torch-free. docs/analysis.md defines every rule with an
// example and says why each departs from DESIGN.md's first definition.
//
// At probe step t (a row of curvature.csv; everything is measured on the fixed probe batch, so a value
// changes only when θ does):
//   flat           ‖g_t‖ = λmin,t = λmax,t = 0 exactly: a dead network, not a saddle; never in the region
//   significant    −λmin,t > γ·λmax,t and −λmin,t > κ·r_t, r_t the Ritz residual ‖Hv − λv‖ of λmin (a
//                  symmetric H has an eigenvalue within r_t of the Ritz value, so then one is surely < 0)
//   near           ρ_t = ‖g_t‖² / (2|λmin,t|·L_t) <= ρ*: on a quadratic saddle, ‖g‖²/(2|λ|) is the loss
//                  already descended from the saddle along the escape direction, so ρ is that as a
//                  fraction of the loss — ρ reaches the escape drop f where the theory's escape is due.
//                  (Optionally also ‖g_t‖ <= ε·G, G the run's largest probe gradient: off by default, since
//                  a run's largest gradient is often its escape's own.)
//   plateau        |L_t − L_s|/(t − s) <= δ·R over the adjacent probe interval (back to the previous usable
//                  row, forward at the first), R the run's largest |ΔL|/Δstep between usable rows: two-sided,
//                  and relative to the run's own pace, so a slowly sliding plateau is still one
//   in the region  usable, not flat, significant, near, plateau
//   an episode     opens at a probe step in the region and escapes at the first later probe step whose
//                  probe loss is more than f below the loss at entry and which is out of the region ("loss"),
//                  or whose λmin rises above −γ/2·λmax ("curvature"). Later probe steps in the region open the
//                  next episode (cascades). An episode still open at the last probe step is censored at it.
//   symmetric      an episode whose entry has bitwise-identical unit pairs (symmetry.csv): its escape by the
//                  loss rule counts as breaking the symmetry only once fewer pairs are identical; otherwise
//                  exit_rule says it left within the symmetric subspace ("loss, copies kept").
// Resolution: an episode is seen only at probe steps, so its entry lies in (previous probe step, entry]
// and its escape in (previous probe step, exit]; both widths are reported.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/store/schema.h"

namespace saddlescope::analysis {

struct EpisodeOptions {
  double proximity = 0.05;    // ρ*: the largest ρ = ‖g‖²/(2|λmin|·L) in the region
  double epsilon = INFINITY;  // ε: optionally also ‖g‖ <= ε·G (inf: off)
  double gamma = 1e-3;        // γ: how negative λmin must be relative to λmax
  double residual_factor = 1; // κ: how negative λmin must be relative to its Ritz residual
  double delta = 0.1;         // δ: a plateau's largest |ΔL|/Δstep as a fraction of the run's largest (inf: off)
  double escape_drop = 1e-2;  // f: relative fall of the probe loss below its level at entry that escapes
  int64_t loss_window = 50;   // optimiser steps of the trailing mean used for the loss-level crossings
  std::vector<double> loss_levels;  // absolute training-loss levels whose first crossing is reported

  // Errors name the option: ρ*, γ, f must be > 0 and finite, ε and δ > 0 (inf: off), κ >= 0 and finite,
  // the window >= 1, levels finite.
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
  double proximity_entry = 0;        // ρ at entry
  std::string kind = "strict";       // "strict" | "symmetric" (identical unit pairs at entry)
  int64_t identical_pairs_entry = 0; // Σ over layers at the last symmetry probe at or before entry (0: none)
  // Symmetric episodes: the first symmetry probe step after entry with fewer identical pairs (none: never
  // seen broken up to the exit, or the end of the run when censored).
  std::optional<int64_t> symmetry_broken_step;
};

struct RunEpisodes {
  std::vector<Episode> episodes;     // in step order
  double gradient_scale = 0;         // G: the largest probe gradient norm
  int64_t probe_count = 0;           // curvature rows
  int64_t probe_interval = 0;        // median gap between probe steps (0 with fewer than 2 rows)
  int64_t last_probe_step = 0;       // censoring step
  int64_t time_in_saddle = 0;        // Σ escape_steps over the episodes
  // What the curvature rows showed, for the evidence behind "no saddle": probes with λmin < 0, with λmin
  // significantly negative (the rule above), and flat ones (a dead network), with the first flat step.
  int64_t negative_probes = 0, significant_probes = 0, flat_probes = 0;
  std::optional<int64_t> first_flat_step;
  double largest_rate = 0;           // R: the largest |ΔL|/Δstep between usable probe rows
  // Per options.loss_levels entry: the first step whose trailing mean training loss (over the last
  // loss_window steps of metrics.csv, fewer at the start) is ≤ the level; none when it never is.
  std::vector<std::optional<int64_t>> level_crossings;
};

// The episodes of one run. `curvature`, `metrics` and `symmetry` (empty: no symmetry probe) as read from
// the run (any order; curvature and metrics steps must be distinct). A curvature row whose probe loss,
// gradient norm or λ is not finite is never in the region and never an escape. Errors: invalid options,
// repeated steps (naming the step).
Result<RunEpisodes> find_episodes(const std::vector<store::CurvatureRow>& curvature,
                                  const std::vector<store::MetricsRow>& metrics, const EpisodeOptions& options,
                                  const std::vector<store::SymmetryRow>& symmetry = {});

}  // namespace saddlescope::analysis
