// Paired runs (one seed in two groups): their divergence and its attribution; and the theory check over
// every escaped episode.
#include "study_internal.h"

#include <dirent.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "saddlescope/analysis/stats.h"
#include "stats_detail.h"

namespace saddlescope::analysis::study {
namespace {

using nlohmann::json;
using detail::num;

// Relative L2 distance below which two trajectories are still "close" for the growth-rate fit: beyond
// it they have separated and the distance saturates.
constexpr double kGrowthCeiling = 0.1;



}  // namespace

// Runs of a group by seed (the first run of each seed).
std::map<int64_t, const Run*> by_seed(const Group& g) {
  std::map<int64_t, const Run*> m;
  for (const Run* r : g.runs) m.emplace(r->seed, r);
  return m;
}

json divergence_json(const Run& a, const Run& b, const Divergence* d, const std::string& error) {
  json j = {{"seed", a.seed}, {"run_a", a.id}, {"run_b", b.id}};
  if (!d) {
    j["error"] = error;
    return j;
  }
  j["error"] = nullptr;
  j["first_loss_step"] = opt(d->first_loss_step);
  j["first_param_step"] = opt(d->first_param_step);
  j["loss_steps_compared"] = d->loss_steps;
  json points = json::array();
  std::vector<double> x, y;
  for (const auto& s : d->snapshots) {
    points.push_back({{"step", s.step}, {"rel_l2", num(s.rel_l2)}, {"max_ulp_distance", num(s.max_ulp_distance)}});
    if (s.rel_l2 > 0 && s.rel_l2 <= kGrowthCeiling && std::isfinite(s.rel_l2)) {
      x.push_back(static_cast<double>(s.step));
      y.push_back(s.rel_l2);
    }
  }
  j["snapshots"] = points;
  j["final_rel_l2"] = d->snapshots.empty() ? json(nullptr) : num(d->snapshots.back().rel_l2);
  auto fit = x.size() >= 2 ? fit_growth_rate(x, y) : Result<LinearFit>(Status::Error("fewer than two points"));
  if (fit.ok()) {
    j["growth"] = {{"rate_per_step", num(fit->slope)}, {"rate_std_error", num(fit->slope_std_error)},
                   {"from_step", x.front()}, {"to_step", x.back()}, {"n", fit->n}, {"r2", num(fit->r_squared)}};
  } else {
    j["growth"] = {{"rate_per_step", nullptr}, {"n", x.size()},
                   {"note", fmt::format("needs two snapshots with 0 < rel_l2 <= {}; {} here", kGrowthCeiling, x.size())}};
  }
  return j;
}

json op_verdicts_json(const OpAttribution& at) {
  json ops = json::array();
  for (const auto& v : at.ops)
    ops.push_back({{"op", v.op}, {"phase", v.phase}, {"verdict", verdict_name(v.verdict)},
                   {"config", v.config.empty() ? json(nullptr) : json(v.config)}, {"compared", v.compared},
                   {"differing", v.differing}, {"beyond_a", v.beyond_a}, {"beyond_b", v.beyond_b},
                   {"max_ratio_a", num(v.max_ratio_a)}, {"max_ratio_b", num(v.max_ratio_b)},
                   {"max_abs_ulp_a", num(v.max_abs_ulp_a)}, {"max_abs_ulp_b", num(v.max_abs_ulp_b)}});
  return ops;
}

// What the sampled elements could catch: the probability that an anomaly confined to 1% of an op's
// elements shows in at least one of the n elements both sides sampled, 1 − 0.99^n, for the op with the
// fewest (the weakest evidence of the verdict), and the n that 95% would need.
json detection_json(const OpAttribution& at) {
  constexpr double kFraction = 0.01, kWanted = 0.95;
  int64_t fewest = -1;
  for (const auto& v : at.ops)
    if (fewest < 0 || v.compared < fewest) fewest = v.compared;
  const int64_t needed = static_cast<int64_t>(std::ceil(std::log(1 - kWanted) / std::log(1 - kFraction)));
  if (fewest < 0) return {{"fewest_compared", nullptr}, {"fraction", kFraction}, {"probability", nullptr}, {"needed_for", kWanted}, {"needed", needed}};
  return {{"fewest_compared", fewest},
          {"fraction", kFraction},
          {"probability", 1 - std::pow(1 - kFraction, static_cast<double>(fewest))},
          {"needed_for", kWanted},
          {"needed", needed}};
}

// The attribution of one pair of runs (same seed, groups a and b) from their divergence.
json attribution_json(const Group& ga, const Group& gb, const Run& a, const Run& b, const Divergence* d,
                      const AnalysisOptions& o, const Replayer& replay) {
  json j = {{"a", ga.name}, {"b", gb.name}, {"seed", a.seed}, {"run_a", a.id}, {"run_b", b.id},
            {"step", nullptr}, {"op", nullptr}, {"phase", nullptr}, {"config", nullptr}, {"ops", json::array()}};
  if (!d) {
    j["verdict"] = "undetermined";
    j["evidence"] = "none";
    j["reason"] = "the runs could not be compared (see divergence)";
    return j;
  }
  if (!d->first_loss_step && !d->first_param_step && d->same_format) {
    j["verdict"] = "identical";
    j["evidence"] = "bitwise";
    j["reason"] = fmt::format("every loss ({} steps) and every common snapshot ({}) has the same bits",
                              d->loss_steps, d->snapshots.size());
    return j;
  }
  // The step to replay: the last snapshot of a at or before the first difference.
  int64_t first = std::numeric_limits<int64_t>::max();
  if (d->first_loss_step) first = *d->first_loss_step;
  if (d->first_param_step) first = std::min(first, *d->first_param_step);
  int64_t step = -1;
  for (int64_t s : a.dir->snapshot_steps())
    if (s <= first) step = s;
  OpAttribution at;
  std::string replay_error;
  if (o.attribution && replay && step >= 0) {
    auto rows_a = replay(a.dir->path(), a.dir->path(), step, o.attribution_k);
    auto rows_b = rows_a.ok() ? replay(b.dir->path(), a.dir->path(), step, o.attribution_k) : rows_a;
    if (rows_a.ok() && rows_b.ok()) {
      at = attribute_ops(*rows_a, *rows_b);
      j["evidence"] = "replay";
    } else {
      replay_error = rows_b.status().message();
    }
  } else {
    replay_error = !o.attribution ? "replays not asked for" : !replay ? "no replayer" : "no snapshot at or before the first difference";
  }
  if (!j.contains("evidence")) {
    auto ops_a = a.dir->has(store::kOps.file) ? a.dir->ops() : Result<std::vector<store::OpRow>>(Status::Error("no ops.csv"));
    auto ops_b = b.dir->has(store::kOps.file) ? b.dir->ops() : Result<std::vector<store::OpRow>>(Status::Error("no ops.csv"));
    if (!ops_a.ok() || !ops_b.ok()) {
      j["verdict"] = "undetermined";
      j["evidence"] = "none";
      j["reason"] = "replay failed (" + replay_error + ") and the runs recorded no op taps to compare";
      j["step"] = step >= 0 ? json(step) : json(nullptr);
      return j;
    }
    at = attribute_ops(*ops_a, *ops_b);
    j["evidence"] = "recorded";
    j["reason"] = "replay failed (" + replay_error + "): the runs' own op taps, whose inputs already differ";
  }
  j["step"] = at.step >= 0 ? json(at.step) : json(nullptr);
  j["ops"] = op_verdicts_json(at);
  j["unmatched_rows"] = at.unmatched;
  if (at.step < 0 || at.ops.empty()) {
    j["verdict"] = "undetermined";
    j["reason"] = "no op-tap rows of both configs at one step";
  } else if (at.verdict == Verdict::kIdentical) {
    j["verdict"] = "undetermined";
    std::string injected;  // a perturbation acts between backward and the update: outside every op tap
    for (const Run* r : {&a, &b})
      if (r->perturbation.is_string() && r->perturbation.get<std::string>() != "none")
        injected += fmt::format("{}{} injects perturbation {}", injected.empty() ? "" : "; ", r == &a ? ga.name : gb.name,
                                r->perturbation.get<std::string>());
    j["reason"] = "every sampled op element has the same bits in both configs at this step: the difference arises "
                  "elsewhere (" + (injected.empty() ? "unsampled elements, the optimiser update" : injected + ", by design") + ")";
  } else {
    j["verdict"] = verdict_name(at.verdict);
    j["op"] = at.op;
    j["phase"] = at.phase;
    j["config"] = at.config == "a" ? json(ga.name) : at.config == "b" ? json(gb.name) : at.config == "both" ? json("both") : json(nullptr);
    if (!j.contains("reason"))
      j["reason"] = at.verdict == Verdict::kCode
                        ? fmt::format("{} {} lies beyond the rounding bound in {}", at.op, at.phase, j["config"].get<std::string>())
                        : "every differing sampled element is within both configs' worst-case rounding bounds "
                          "(gamma_n sum|terms|): another summation order, and also another algorithm of the same "
                          "precision (MKL vs cuBLAS), satisfy it";
  }
  j["detection"] = detection_json(at);
  return j;
}

// The theory check over every episode of a gradient-descent (SGD) run that escaped by the loss rule:
// the theory predicts when the loss has fallen by f along v_min; an episode closed by the curvature
// rule (λmin flattening out, e.g. while converging) did not escape along v_min. Other optimisers'
// episodes are measured against the same prediction but not fitted: `departures` says by how much.
Theory theory_check(const std::vector<RunResult>& runs) {
  Theory theory;
  theory.scope = "episodes of optimizer = sgd runs that escaped by the loss rule: the theory is for gradient "
                 "descent, and predicts when the loss has fallen by f";
  theory.not_fitted.emplace();
  theory.departures.emplace();
  std::vector<double> predicted, observed;
  std::map<std::string, std::vector<double>> ratios;  // optimiser -> observed / predicted, outside the fit
  for (const RunResult& r : runs) {
    if (!r.episodes) continue;
    const bool sgd = r.optimizer == "sgd";
    for (const EpisodeResult& ep : *r.episodes) {
      const double p = ep.theory.predicted_escape_steps;
      if (ep.censored || std::isnan(p)) continue;
      TheoryPoint point{r.run_id, ep.entry_step, p, ep.escape_steps, r.optimizer, ep.exit_rule.value_or(""),
                        ep.kind.value_or("strict"), r.perturbation.value_or(json("none")), std::nullopt};
      const bool loss_rule = ep.exit_rule == "loss";
      if (sgd && loss_rule) {
        predicted.push_back(p);
        observed.push_back(static_cast<double>(ep.escape_steps));
        theory.points.push_back(std::move(point));
        continue;
      }
      if (!sgd && loss_rule && p > 0) ratios[r.optimizer].push_back(static_cast<double>(ep.escape_steps) / p);
      theory.not_fitted->push_back(std::move(point));
    }
  }
  for (auto& [optimizer, v] : ratios) {
    std::sort(v.begin(), v.end());
    (*theory.departures)[optimizer] = {static_cast<int64_t>(v.size()), quantile_sorted(v, 0.5), v.front(), v.back()};
  }
  theory.n = static_cast<int64_t>(predicted.size());
  theory.slope = theory.intercept = theory.r2 = theory.slope_std_error = kNaN;
  if (auto fit = fit_line(predicted, observed); fit.ok()) {
    theory.slope = fit->slope;
    theory.intercept = fit->intercept;
    theory.r2 = fit->r_squared;
    theory.slope_std_error = fit->slope_std_error;
    // How far the slope is from the theory's 1, in standard errors, and each point's residual.
    theory.slope_minus_one_se = (fit->slope - 1) / fit->slope_std_error;
    for (TheoryPoint& point : theory.points)
      point.residual = static_cast<double>(point.observed) - (fit->intercept + fit->slope * point.predicted);
  } else {
    theory.note = fit.status().message();
  }
  // The fit within each noise level (perturbation), so that an R² carried by the chosen range of σ shows:
  // within one level the prediction must still order the episodes.
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_noise;
  for (const TheoryPoint& point : theory.points) {
    const json& pert = *point.perturbation;
    auto& [x, y] = by_noise[pert.is_string() ? pert.get<std::string>() : pert.dump()];
    x.push_back(point.predicted);
    y.push_back(static_cast<double>(point.observed));
  }
  theory.by_noise.emplace();
  for (const auto& [noise, xy] : by_noise) {
    NoiseLevelFit level{noise, static_cast<int64_t>(xy.first.size())};
    if (auto fit = xy.first.size() >= 3 ? fit_line(xy.first, xy.second) : Result<LinearFit>(Status::Error("fewer than 3 points"));
        fit.ok()) {
      level.slope = fit->slope;
      level.intercept = fit->intercept;
      level.r2 = fit->r_squared;
      level.slope_std_error = fit->slope_std_error;
      level.slope_minus_one_se = (fit->slope - 1) / fit->slope_std_error;
    } else {
      level.note = fit.status().message();
    }
    theory.by_noise->push_back(std::move(level));
  }
  return theory;
}

}  // namespace saddlescope::analysis::study
