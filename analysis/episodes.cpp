#include "saddlescope/analysis/episodes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

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
  } positive[] = {{"epsilon", epsilon}, {"gamma", gamma}, {"escape_drop", escape_drop}};
  for (const auto& p : positive)
    if (!(p.value > 0) || !std::isfinite(p.value))
      return Status::Error(fmt::format("{} must be > 0 and finite, got {}", p.name, p.value));
  if (!(delta > 0)) return Status::Error(fmt::format("delta must be > 0 (inf: no plateau rule), got {}", delta));
  if (loss_window < 1) return Status::Error(fmt::format("loss_window must be >= 1, got {}", loss_window));
  for (double l : loss_levels)
    if (!std::isfinite(l)) return Status::Error(fmt::format("loss levels must be finite, got {}", l));
  return Status::Ok();
}

Result<RunEpisodes> find_episodes(const std::vector<store::CurvatureRow>& curvature_rows,
                                  const std::vector<store::MetricsRow>& metrics_rows, const EpisodeOptions& o) {
  SADDLESCOPE_RETURN_IF_ERROR(o.validate());
  const auto curvature = by_step(curvature_rows);
  const auto metrics = by_step(metrics_rows);
  SADDLESCOPE_RETURN_IF_ERROR(check_distinct(curvature, "curvature.csv"));
  SADDLESCOPE_RETURN_IF_ERROR(check_distinct(metrics, "metrics.csv"));

  RunEpisodes out;
  out.probe_count = static_cast<int64_t>(curvature.size());
  for (const auto& r : curvature)
    if (usable(r)) out.gradient_scale = std::max(out.gradient_scale, r.probe_grad_norm);
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
  const size_t n = curvature.size();
  auto in_region = [&](size_t i) {
    const auto& r = curvature[i];
    if (!usable(r)) return false;
    if (!(r.probe_grad_norm <= o.epsilon * out.gradient_scale)) return false;
    if (!(r.lambda_min <= -o.gamma * r.lambda_max)) return false;
    if (std::isinf(o.delta)) return true;
    // The plateau rule over the adjacent probe interval: back to the previous usable row, or forward to
    // the next one when there is none before.
    size_t j = i;
    while (j > 0 && !usable(curvature[j - 1])) --j;
    if (j > 0) return relative_fall(curvature[j - 1].probe_loss, r.probe_loss) < o.delta;
    for (j = i + 1; j < n && !usable(curvature[j]); ++j) {
    }
    return j < n && relative_fall(r.probe_loss, curvature[j].probe_loss) < o.delta;
  };
  auto escapes = [&](const Episode& e, const store::CurvatureRow& r) -> const char* {
    if (!usable(r)) return nullptr;
    if (relative_fall(e.loss_entry, r.probe_loss) > o.escape_drop) return "loss";
    if (r.lambda_min > -o.gamma / 2 * r.lambda_max) return "curvature";
    return nullptr;
  };

  std::optional<Episode> open;
  for (size_t i = 0; i < n; ++i) {
    const auto& r = curvature[i];
    const int64_t gap = i > 0 ? r.step - curvature[i - 1].step : 0;
    if (open) {
      if (const char* rule = escapes(*open, r)) {
        open->exit_step = r.step;
        open->exit_resolution = gap;
        open->exit_rule = rule;
        open->escape_steps = r.step - open->entry_step;
        open->loss_exit = r.probe_loss;
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
