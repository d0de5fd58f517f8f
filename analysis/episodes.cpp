#include "saddlescope/analysis/episodes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace saddlescope::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool usable(const store::CurvatureRow& r) {
  return std::isfinite(r.probe_loss) && std::isfinite(r.probe_grad_norm) && std::isfinite(r.lambda_min) &&
         std::isfinite(r.lambda_max);
}

// Relative change of the probe loss from a to b, (a − b)/|a| (0 when both are 0).
double relative_fall(double a, double b) {
  if (a == b) return 0;
  return (a - b) / std::fabs(a);
}

template <class Row>
Status check_distinct(const std::vector<Row>& rows, const char* file) {
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i].step == rows[i - 1].step) return Status::Error(fmt::format("{}: step {} appears twice", file, rows[i].step));
  return Status::Ok();
}

template <class Row>
std::vector<Row> by_step(std::vector<Row> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.step < b.step; });
  return rows;
}

}  // namespace

Status EpisodeOptions::validate() const {
  const struct {
    const char* name;
    double value;
  } positive[] = {{"proximity", proximity}, {"gamma", gamma}, {"escape_drop", escape_drop}};
  for (const auto& p : positive)
    if (!(p.value > 0) || !std::isfinite(p.value))
      return Status::Error(fmt::format("{} must be > 0 and finite, got {}", p.name, p.value));
  if (!(epsilon > 0)) return Status::Error(fmt::format("epsilon must be > 0 (inf: off), got {}", epsilon));
  if (!(delta > 0)) return Status::Error(fmt::format("delta must be > 0 (inf: no plateau rule), got {}", delta));
  if (!(residual_factor >= 0) || !std::isfinite(residual_factor))
    return Status::Error(fmt::format("residual_factor must be >= 0 and finite, got {}", residual_factor));
  if (loss_window < 1) return Status::Error(fmt::format("loss_window must be >= 1, got {}", loss_window));
  for (double l : loss_levels)
    if (!std::isfinite(l)) return Status::Error(fmt::format("loss levels must be finite, got {}", l));
  return Status::Ok();
}

Result<RunEpisodes> find_episodes(const std::vector<store::CurvatureRow>& curvature_rows,
                                  const std::vector<store::MetricsRow>& metrics_rows, const EpisodeOptions& o,
                                  const std::vector<store::SymmetryRow>& symmetry_rows) {
  SADDLESCOPE_RETURN_IF_ERROR(o.validate());
  const auto curvature = by_step(curvature_rows);
  const auto metrics = by_step(metrics_rows);
  SADDLESCOPE_RETURN_IF_ERROR(check_distinct(curvature, "curvature.csv"));
  SADDLESCOPE_RETURN_IF_ERROR(check_distinct(metrics, "metrics.csv"));
  // Identical unit pairs per symmetry probe step, summed over layers.
  std::map<int64_t, int64_t> identical;
  for (const auto& r : symmetry_rows) identical[r.step] += r.identical_pairs;

  RunEpisodes out;
  out.probe_count = static_cast<int64_t>(curvature.size());
  const size_t n = curvature.size();
  auto flat = [](const store::CurvatureRow& r) { return r.probe_grad_norm == 0 && r.lambda_min == 0 && r.lambda_max == 0; };
  auto significant = [&](const store::CurvatureRow& r) {
    const double residual = std::isfinite(r.lambda_min_residual) ? r.lambda_min_residual : 0;
    return -r.lambda_min > o.gamma * r.lambda_max && -r.lambda_min > o.residual_factor * residual;
  };
  for (size_t i = 0; i < n; ++i) {
    const auto& r = curvature[i];
    if (!usable(r)) continue;
    out.gradient_scale = std::max(out.gradient_scale, r.probe_grad_norm);
    out.negative_probes += r.lambda_min < 0;
    out.significant_probes += significant(r);
    if (flat(r)) {
      ++out.flat_probes;
      if (!out.first_flat_step) out.first_flat_step = r.step;
    }
  }
  // |ΔL|/Δstep over the interval from the previous usable row to row i (forward at the first usable
  // row); NaN when there is no such interval.
  std::vector<double> rate(n, kNaN);
  {
    std::optional<size_t> previous, first;
    for (size_t i = 0; i < n; ++i) {
      if (!usable(curvature[i])) continue;
      if (previous) {
        rate[i] = std::fabs(curvature[i].probe_loss - curvature[*previous].probe_loss) /
                  static_cast<double>(curvature[i].step - curvature[*previous].step);
        out.largest_rate = std::max(out.largest_rate, rate[i]);
        if (first && std::isnan(rate[*first])) rate[*first] = rate[i];
      } else {
        first = i;
      }
      previous = i;
    }
  }
  if (!curvature.empty()) out.last_probe_step = curvature.back().step;
  if (curvature.size() >= 2) {
    std::vector<int64_t> gaps;
    for (size_t i = 1; i < curvature.size(); ++i) gaps.push_back(curvature[i].step - curvature[i - 1].step);
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
    out.probe_interval = gaps[gaps.size() / 2];
  }

  auto metrics_at = [&](int64_t step) -> const store::MetricsRow* {
    auto it = std::lower_bound(metrics.begin(), metrics.end(), step,
                               [](const store::MetricsRow& r, int64_t s) { return r.step < s; });
    return it != metrics.end() && it->step == step ? &*it : nullptr;
  };
  auto proximity = [](const store::CurvatureRow& r) {
    const double scale = 2 * std::fabs(r.lambda_min) * std::fabs(r.probe_loss);
    return r.probe_grad_norm == 0 ? 0.0 : scale > 0 ? r.probe_grad_norm * r.probe_grad_norm / scale : INFINITY;
  };
  auto in_region = [&](size_t i) {
    const auto& r = curvature[i];
    if (!usable(r) || flat(r) || !significant(r)) return false;
    if (!(proximity(r) <= o.proximity)) return false;
    if (!std::isinf(o.epsilon) && !(r.probe_grad_norm <= o.epsilon * out.gradient_scale)) return false;
    if (std::isinf(o.delta)) return true;
    return std::isnan(rate[i]) || rate[i] <= o.delta * out.largest_rate;  // a single usable row: no pace to compare
  };
  auto escapes = [&](const Episode& e, size_t i) -> const char* {
    const auto& r = curvature[i];
    if (!usable(r)) return nullptr;
    if (relative_fall(e.loss_entry, r.probe_loss) > o.escape_drop && !in_region(i)) return "loss";
    if (r.lambda_min > -o.gamma / 2 * r.lambda_max) return "curvature";
    return nullptr;
  };
  // Identical pairs at the last symmetry probe at or before `step` (-1: no probe yet).
  auto pairs_at = [&](int64_t step) -> int64_t {
    auto it = identical.upper_bound(step);
    return it == identical.begin() ? -1 : std::prev(it)->second;
  };
  auto close = [&](Episode& e, int64_t until) {
    if (e.kind != "symmetric") return;
    for (auto it = identical.upper_bound(e.entry_step); it != identical.end() && it->first <= until; ++it)
      if (it->second < e.identical_pairs_entry) {
        e.symmetry_broken_step = it->first;
        break;
      }
    if (e.exit_rule == "loss" && !e.symmetry_broken_step) e.exit_rule = "loss, copies kept";
  };

  std::optional<Episode> open;
  for (size_t i = 0; i < n; ++i) {
    const auto& r = curvature[i];
    const int64_t gap = i > 0 ? r.step - curvature[i - 1].step : 0;
    if (open) {
      if (const char* rule = escapes(*open, i)) {
        open->exit_step = r.step;
        open->exit_resolution = gap;
        open->exit_rule = rule;
        open->escape_steps = r.step - open->entry_step;
        open->loss_exit = r.probe_loss;
        close(*open, r.step);
        out.episodes.push_back(*open);
        open.reset();
      } else {
        ++open->probe_steps;
      }
    }
    if (!open && in_region(i)) {
      Episode e;
      e.entry_step = r.step;
      e.entry_resolution = gap;
      e.probe_steps = 1;
      e.loss_entry = r.probe_loss;
      e.grad_norm_entry = r.probe_grad_norm;
      e.lambda_min_entry = r.lambda_min;
      e.lambda_max_entry = r.lambda_max;
      e.negative_mass_entry = r.negative_mass;
      e.g_dot_vmin_entry = r.g_dot_vmin;
      e.proximity_entry = proximity(r);
      const int64_t pairs = pairs_at(r.step);
      if (pairs > 0) {
        e.kind = "symmetric";
        e.identical_pairs_entry = pairs;
      }
      const store::MetricsRow* m = metrics_at(r.step);
      e.lr_entry = m ? m->lr : kNaN;
      e.batch_grad_norm_entry = m ? m->batch_grad_norm : kNaN;
      e.loss_exit = kNaN;
      open = e;
    }
  }
  if (open) {
    open->censored = true;
    open->escape_steps = out.last_probe_step - open->entry_step;
    close(*open, out.last_probe_step);
    out.episodes.push_back(*open);
  }
  for (const auto& e : out.episodes) out.time_in_saddle += e.escape_steps;

  // Loss-level crossings: one pass with a trailing window sum per level.
  out.level_crossings.assign(o.loss_levels.size(), std::nullopt);
  double sum = 0;
  for (size_t i = 0; i < metrics.size(); ++i) {
    sum += metrics[i].loss;
    if (i >= static_cast<size_t>(o.loss_window)) sum -= metrics[i - static_cast<size_t>(o.loss_window)].loss;
    const double mean = sum / static_cast<double>(std::min<size_t>(i + 1, static_cast<size_t>(o.loss_window)));
    for (size_t l = 0; l < o.loss_levels.size(); ++l)
      if (!out.level_crossings[l] && mean <= o.loss_levels[l]) out.level_crossings[l] = metrics[i].step;
  }
  return out;
}

}  // namespace saddlescope::analysis
