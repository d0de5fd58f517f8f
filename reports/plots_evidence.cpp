// The report's figures of the evidence: per-op rounding errors, the distance between paired runs, the
// symmetry of duplicated units, and rounding against SGD's sampling noise.
#include "plots_common.h"

#include "saddlescope/analysis/op_summary.h"

namespace saddlescope::reports::plot {

// ---- Rounding --------------------------------------------------------------------------------------

std::optional<Figure> ulp_figure(const StudyData& s, const std::string& phase) {
  // Bins of |ULP error| by powers of two: bin k holds 2^(k-1) < |e| <= 2^k; exact results get their own bin.
  std::map<int, std::map<int, int64_t>> counts;  // series -> bin -> rows
  std::map<int, int64_t> totals;
  int kmin = 0, kmax = 0;
  for (const auto& r : s.runs)
    for (const auto& o : r.ops) {
      if (o.phase != phase || !analysis::is_measured(o.flag)) continue;
      const int i = series_of(s, r.entry.group);
      const double e = std::fabs(o.ulp_error);
      // A run of no group of the analysis (a failed run's taps) is no series; a non-finite error has no bin.
      if (i == 0 || !std::isfinite(e)) continue;
      const int k = e == 0 ? INT32_MIN : static_cast<int>(std::ceil(std::log2(e)));
      if (k != INT32_MIN) {
        kmin = std::min(kmin, k);
        kmax = std::max(kmax, k);
      }
      ++counts[i][k];
      ++totals[i];
    }
  if (totals.empty()) return std::nullopt;
  const int zero_bin = kmin - 1;
  Csv csv({"series", "bin", "upper_abs_ulp", "rows", "fraction", "group"});
  for (auto& [i, bins] : counts) {
    for (int k = zero_bin; k <= kmax; ++k) {
      const int64_t c = bins.count(k == zero_bin ? INT32_MIN : k) ? bins[k == zero_bin ? INT32_MIN : k] : 0;
      csv.row({std::to_string(i), std::to_string(k), k == zero_bin ? "0" : num(std::ldexp(1.0, k)), std::to_string(c),
               num(static_cast<double>(c) / static_cast<double>(totals[i])), text(s.group_names[i - 1])});
    }
    csv.gap();
  }
  std::string xtics = fmt::format("'0' {}", zero_bin);
  const int stride = std::max(1, (kmax - kmin + 1) / 12);
  for (int k = kmin; k <= kmax; k += stride) xtics += fmt::format(", {} {}", gp_string(fmt::format("{:g}", std::ldexp(1.0, k))), k);
  Figure f;
  f.name = "ulp_" + phase;
  f.section = "rounding";
  f.title = phase == "fwd" ? "Forward op error in ULPs" : phase == "wgrad" ? "Weight-gradient op error in ULPs"
                                                                            : "Op error in ULPs (" + phase + ")";
  f.caption = fmt::format(
      "Distribution of |observed − exact| in ULPs of the exact value over every sampled {} op element with a finite "
      "exact value (op taps against the MPFR reference), per config, in bins by powers of two (a bin labelled 2^k "
      "holds errors in (2^(k−1), 2^k]; '0': bitwise exact). Elements beyond their rounding bound are counted in the "
      "table below.",
      phase == "fwd" ? "forward" : phase == "wgrad" ? "weight-gradient" : phase);
  f.data = {{"", csv.body}};
  std::string cmds = fmt::format("set xtics ({})\nset xrange [{}.5:{}.5]\nset yrange [0:*]\nset xlabel '|ULP error| "
                                 "(upper edge of the bin)'\nset ylabel 'fraction of sampled elements'\n",
                                 xtics, zero_bin - 1, kmax);
  std::set<int> present;
  for (const auto& t : totals) present.insert(t.first);
  cmds += "plot " + series_curves(s.group_names, present, "bin", "fraction", "linespoints");
  f.commands = cmds + "\n";
  return f;
}

// ---- Divergence and symmetry -----------------------------------------------------------------------

std::optional<Figure> divergence_figure(const StudyData& s) {
  Csv csv({"series", "step", "rel_l2", "max_ulp_distance", "pair"});
  std::vector<std::string> titles;
  bool positive = false;
  for (const analysis::DivergenceResult& p : s.analysis.divergence) {
    if (!p.snapshots || p.snapshots->empty()) continue;
    titles.push_back(fmt::format("{} vs {}, seed {}", p.a, p.b, p.seed));
    for (const analysis::SnapshotDistance& sn : *p.snapshots) {
      const double d = sn.rel_l2;
      positive = positive || d > 0;
      csv.row({std::to_string(titles.size()), num(static_cast<double>(sn.step)), num(d > 0 ? d : NAN),
               num(sn.max_ulp_distance), text(titles.back())});
    }
    csv.gap();
  }
  if (!positive) return std::nullopt;
  Figure f;
  f.name = "divergence";
  f.section = "divergence";
  f.title = "Parameter distance between paired runs";
  f.caption = "‖θa − θb‖ / ‖θa‖ at each common snapshot of two runs with the same seed on different configs (log "
              "scale; snapshots where the runs are bitwise identical have distance 0 and are not drawn).";
  f.data = {{"", csv.body}};
  std::string cmds = "set logscale y\nset format y '%g'\nset xlabel 'optimiser step'\nset ylabel 'relative parameter "
                     "distance ‖θa − θb‖ / ‖θa‖'\nset key tmargin font ',9'\n";
  std::set<int> all;
  for (size_t i = 1; i <= titles.size(); ++i) all.insert(static_cast<int>(i));
  cmds += "plot " + series_curves(titles, all, "step", "rel_l2", "linespoints");
  f.commands = cmds + "\n";
  return f;
}

std::optional<Figure> symmetry_figure(const StudyData& s, bool distance) {
  RunLines lines({"step", "identical_pairs", "min_relative_distance", "layer", "run_id"});
  std::set<int> present;
  bool positive = false;
  for (const auto& r : s.runs) {
    if (r.symmetry.empty()) continue;
    const int i = series_of(s, r.entry.group);
    present.insert(i);
    std::map<std::string, std::vector<const store::SymmetryRow*>> layers;
    for (const auto& row : r.symmetry) layers[row.layer].push_back(&row);
    for (const auto& [layer, rows] : layers) {
      for (const auto* row : rows) {
        positive = positive || row->min_relative_distance > 0;
        const std::vector<std::string> fields = {
            std::to_string(row->step), std::to_string(row->identical_pairs),
            num(row->min_relative_distance > 0 || !distance ? row->min_relative_distance : NAN), layer,
            text(r.entry.run_id)};
        lines.point(i, fields[0], distance ? fields[2] : fields[1], fields);
      }
      lines.end_line();
    }
  }
  if (present.empty() || (distance && !positive)) return std::nullopt;
  Figure f;
  f.name = distance ? "symmetry_distance" : "symmetry";
  f.section = "symmetry";
  f.title = distance ? "Distance between the closest units" : "Identical unit pairs over steps";
  f.caption = distance ? "min ‖u_a − u_b‖ / max(‖u_a‖, ‖u_b‖) over pairs of units of a layer, one line per run and "
                         "layer (log scale; 0 — an exact duplicate — is not drawn)."
                       : "Pairs of units (incoming and outgoing weights) that are bitwise identical, one line per run and "
                         "layer: a drop is the step at which the symmetry broke.";
  f.data = {{"", lines.body()}};
  std::string cmds = "set xlabel 'optimiser step'\n";
  cmds += distance ? "set logscale y\nset format y '%g'\nset ylabel 'relative distance of the closest pair'\n"
                   : "set ylabel 'bitwise identical unit pairs'\nset yrange [0:*]\n";
  const std::string col = distance ? "min_relative_distance" : "identical_pairs";
  cmds += "plot " + series_curves(s.group_names, present, "step", col, lines.style(), true);
  f.commands = cmds + "\n";
  return f;
}

// ---- Noise budget ------------------------------------------------------------------------------------

// Rounding and SGD's sampling noise over steps, from the analysis's noise rows: per group a solid line
// (rounding) and a dotted one (sampling) for each run, log scale; zeros (rounding at an exact point,
// sampling at full batch) cannot be drawn on it and are left out.
std::optional<Figure> noise_figure(const StudyData& s) {
  if (!s.analysis.noise_budget || s.analysis.noise_budget->rows.empty()) return std::nullopt;
  RunLines lines({"step", "rounding_norm", "sampling_norm", "ratio", "run_id"});
  std::set<int> present;
  std::string run;
  auto positive = [](double v) { return v > 0 ? num(v) : std::string("NaN"); };
  for (const analysis::NoiseBudgetRow& r : s.analysis.noise_budget->rows) {  // in run order, steps ascending
    if (r.run_id != run) lines.end_line(), run = r.run_id;
    const int i = series_of(s, r.group);
    present.insert(i);
    const std::vector<std::string> f = {std::to_string(r.step), positive(r.rounding_norm), positive(r.sampling_norm),
                                        num(r.ratio), text(run)};
    lines.point(i, f[0], f[1] + "/" + f[2], f);
  }
  lines.end_line();
  Figure f;
  f.name = "noise";
  f.section = "noise";
  f.title = "Rounding against SGD's sampling noise";
  f.caption = "At each noise probe step, ‖δg‖ — the run's gradient against float64 from the same parameters — "
              "(solid) and the norm of SGD's mini-batch noise at the run's batch size (dotted), one pair of lines per "
              "run, log scale. Where the solid line lies two decades or more below the dotted one, rounding is a "
              "small part of the noise the optimiser already injects.";
  f.data = {{"", lines.body()}};
  std::string plot;
  for (int i : present) {
    if (i < 1 || static_cast<size_t>(i) > s.group_names.size()) continue;
    const std::string g = s.group_names[static_cast<size_t>(i - 1)];
    const std::string drawn = fmt::format("column('series')=={} && column('drawn')==1", i);
    plot += fmt::format("{}ARG3 using 'step':({} ? column('rounding_norm') : NaN) with {} lt {} dt 1 title {}, \\\n  "
                        "ARG3 using 'step':({} ? column('sampling_norm') : NaN) with {} lt {} dt 3 title {}",
                        plot.empty() ? "" : ", \\\n  ", drawn, lines.style(), i, gp_string(g + ": rounding"), drawn,
                        lines.style(), i, gp_string(g + ": SGD sampling"));
  }
  if (plot.empty()) return std::nullopt;
  f.commands = "set xlabel 'optimiser step'\nset ylabel 'gradient noise, ‖·‖₂'\nset logscale y\nset format y '%g'\n"
               "plot " + plot + "\n";
  return f;
}

}  // namespace saddlescope::reports::plot
