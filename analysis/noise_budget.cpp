#include "saddlescope/analysis/noise_budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "saddlescope/analysis/stats.h"
#include "comparisons.h"

namespace saddlescope::analysis {
namespace {

using nlohmann::json;
using detail::num;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double lookup(const std::map<int64_t, double>& m, int64_t step) {
  auto it = m.find(step);
  return it == m.end() ? kNaN : it->second;
}

// Median and range of the finite values of `v` (nulls when there are none).
json spread(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return {{"n", 0}, {"min", nullptr}, {"median", nullptr}, {"max", nullptr}};
  std::sort(v.begin(), v.end());
  return {{"n", v.size()}, {"min", v.front()}, {"median", quantile_sorted(v, 0.5)}, {"max", v.back()}};
}

std::string g(const json& v) { return v.is_number() ? fmt::format("{:.3g}", v.get<double>()) : "n/a"; }

}  // namespace

double escape_steps(double lambda_min, double eta, double loss, double f, double r0) {
  if (!(lambda_min < 0) || !(eta > 0) || !(r0 > 0) || !std::isfinite(loss) || !std::isfinite(r0)) return kNaN;
  const double lambda = std::fabs(lambda_min);
  const double R = std::sqrt(2 * f * std::fabs(loss) / lambda);
  return R > r0 ? std::log(R / r0) / std::log1p(eta * lambda) : 0.0;
}

json noise_budget(const std::vector<NoiseRun>& runs, double escape_drop) {
  json out = {
      {"negligible_ratio", kNegligibleNoiseRatio},
      {"definitions",
       {{"ratio", "rounding_norm / sampling_norm at a probe step (noise.csv, docs/run-store.md)"},
        {"negligible", "every probe step of the group has ratio < negligible_ratio"},
        {"ratio_vmin", "rounding_vmin / sampling_vmin: the same along the curvature probe's v_min of that step"},
        {"not_negligible", "some probe step has ratio >= negligible_ratio, or rounding with no sampling noise (inf)"},
        {"undefined", "no probe step has a finite or infinite ratio (no float64 copy, or neither noise)"},
        {"escape_steps", "ln(R/r0)/ln(1 + lr |lambda_min|), R = sqrt(2 f L / |lambda_min|), L the curvature probe's "
                         "loss, r0 = lr x rounding_vmin (or lr x sampling_vmin): one step's kick along v_min grown "
                         "into an escape"}}},
      {"rows", json::array()},
      {"groups", json::array()}};
  std::map<std::string, std::vector<const NoiseRun*>> by_group;
  for (const NoiseRun& r : runs)
    if (!r.rows.empty()) by_group[r.group].push_back(&r);
  for (const auto& [group, members] : by_group) {
    std::vector<double> ratio, ratio_vmin, relative, rounding, sampling, esc_rounding, esc_sampling;
    int64_t rows = 0, negligible = 0, infinite = 0, undefined = 0;
    int64_t first_not = -1;
    for (const NoiseRun* r : members)
      for (const store::NoiseRow& n : r->rows) {
        const double lr = lookup(r->lr, n.step), loss = lookup(r->probe_loss, n.step);
        const double by_rounding = escape_steps(n.lambda_min, lr, loss, escape_drop, lr * n.rounding_vmin);
        const double by_sampling = escape_steps(n.lambda_min, lr, loss, escape_drop, lr * n.sampling_vmin);
        out["rows"].push_back({{"run_id", r->run_id}, {"group", group}, {"step", n.step}, {"batch", n.batch},
                               {"examples", n.examples}, {"lr", num(lr)}, {"grad_norm", num(n.grad_norm)},
                               {"rounding_norm", num(n.rounding_norm)}, {"rounding_relative", num(n.rounding_relative)},
                               {"sampling_norm", num(n.sampling_norm)}, {"ratio", num(n.ratio)},
                               {"perturbation_norm", num(n.perturbation_norm)}, {"lambda_min", num(n.lambda_min)},
                               {"rounding_vmin", num(n.rounding_vmin)}, {"sampling_vmin", num(n.sampling_vmin)},
                               {"ratio_vmin", num(n.rounding_vmin / n.sampling_vmin)},
                               {"escape_steps_rounding", num(by_rounding)}, {"escape_steps_sampling", num(by_sampling)}});
        ++rows;
        ratio.push_back(n.ratio), relative.push_back(n.rounding_relative);
        ratio_vmin.push_back(n.rounding_vmin / n.sampling_vmin);
        rounding.push_back(n.rounding_norm), sampling.push_back(n.sampling_norm);
        esc_rounding.push_back(by_rounding), esc_sampling.push_back(by_sampling);
        if (std::isnan(n.ratio)) {
          ++undefined;
        } else if (n.ratio < kNegligibleNoiseRatio) {
          ++negligible;
        } else {
          infinite += std::isinf(n.ratio);
          if (first_not < 0 || n.step < first_not) first_not = n.step;
        }
      }
    const int64_t not_negligible = rows - negligible - undefined;
    const std::string verdict = not_negligible > 0 ? "not negligible" : negligible > 0 ? "negligible" : "undefined";
    const json r = spread(ratio);
    std::string evidence =
        fmt::format("rounding / sampling noise median {} [{}, {}] over {} probe steps of {} runs; rounding ‖δg‖/‖g‖ "
                    "median {}",
                    g(r["median"]), g(r["min"]), g(r["max"]), rows, members.size(), g(spread(relative)["median"]));
    if (not_negligible > 0)
      evidence += fmt::format("; ≥ {} at {} steps (first at step {}){}", kNegligibleNoiseRatio, not_negligible, first_not,
                              infinite > 0 ? fmt::format(", {} with no sampling noise at all", infinite) : "");
    if (undefined > 0) evidence += fmt::format("; {} steps undefined", undefined);
    out["groups"].push_back({{"group", group}, {"runs", members.size()}, {"rows", rows},
                             {"negligible_rows", negligible}, {"not_negligible_rows", not_negligible},
                             {"no_sampling_noise_rows", infinite}, {"undefined_rows", undefined},
                             {"ratio", r}, {"ratio_vmin", spread(ratio_vmin)}, {"rounding_relative", spread(relative)},
                             {"rounding_norm", spread(rounding)}, {"sampling_norm", spread(sampling)},
                             {"escape_steps_rounding", spread(esc_rounding)},
                             {"escape_steps_sampling", spread(esc_sampling)}, {"verdict", verdict},
                             {"evidence", evidence}});
  }
  return out;
}

}  // namespace saddlescope::analysis
