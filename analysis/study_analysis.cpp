#include "saddlescope/analysis/study_analysis.h"

#include <dirent.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "saddlescope/analysis/analysis_result.h"
#include "saddlescope/analysis/attribution.h"
#include "saddlescope/analysis/divergence.h"
#include "saddlescope/analysis/noise_budget.h"
#include "saddlescope/analysis/stats.h"
#include "saddlescope/store/config_view.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/perturbation_spec.h"
#include "comparisons.h"

namespace saddlescope::analysis {
namespace {

using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Relative L2 distance below which two trajectories are still "close" for the growth-rate fit: beyond
// it they have separated and the distance saturates.
constexpr double kGrowthCeiling = 0.1;

using detail::num;

template <class T>
json opt(const std::optional<T>& x) {
  return x ? json(*x) : json(nullptr);
}

struct Run {
  std::string id, path, group;
  std::string model;    // the study's model table (manifest study.model); "" outside a study
  int64_t seed = 0;
  int64_t data_seed = 0;  // the example order's seed (the config's data_seed, = seed by default)
  std::string status;
  std::string skipped;  // why the run is left out of everything ("" when analysed)
  std::optional<store::RunDir> dir;
  std::vector<store::MetricsRow> metrics;
  std::vector<store::SymmetryRow> symmetry;  // empty without a symmetry probe
  std::optional<RunEpisodes> episodes;
  bool probe_counts = true;   // false: a reanalysed file from before negative/significant/flat counts
  std::string episodes_note;  // why there are no episodes (no curvature probe, unreadable curvature.csv)
  std::vector<int64_t> refined_steps;  // snapshot steps the refine pass evaluated
  std::string refine_note;             // why a refine evaluation failed
  std::optional<double> final_loss, eval_mse, baseline_mse;
  NoiseRun noise;          // noise.csv's rows (none without a noise probe) and what their predictions need
  std::string noise_note;  // why the rows are not there (an unreadable noise.csv)
  std::string optimizer = "adam";
  std::string dtype = "float32";
  json perturbation;  // the config's perturbation spec

  bool analysed() const { return skipped.empty(); }
};

std::vector<std::string> run_names(const std::string& study_dir) {
  std::vector<std::string> names;
  DIR* d = opendir((study_dir + "/runs").c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name[0] == '.' || store::is_temporary_name(name)) continue;
    struct stat st {};
    if (stat((study_dir + "/runs/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string config_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The run's study table name (manifest study.config or study.model); "" outside a study.
std::string study_table(const store::RunManifest& m, const char* key) {
  auto it = m.extra.find("study");
  if (it != m.extra.end() && it->is_object() && it->contains(key) && (*it)[key].is_string())
    return (*it)[key].get<std::string>();
  return "";
}

// The group a run belongs to.
Result<std::string> group_of(const store::RunManifest& m, const std::vector<std::string>& keys) {
  if (keys.empty()) {
    std::string config = study_table(m, "config");
    return config.empty() ? m.config_key : config;
  }
  std::string name;
  for (const auto& k : keys) {
    const json& v = m.config_value(k);
    if (v.is_null()) return Status::Error("has no config key '" + k + "'");
    name += (name.empty() ? "" : ",") + k + "=" + config_text(v);
  }
  return name;
}

// The run's curvature probe spec from its config ("" when none).
std::string curvature_spec(const store::RunManifest& m) {
  auto config = store::config_view(m);
  if (config && config->probe)
    for (const auto& p : *config->probe)
      if (p.rfind("curvature", 0) == 0) return p;
  return "";
}

// The refine pass: curvature at the snapshots inside each episode's entry and exit windows, then the
// episodes again over every row.
void refine(Run& r, std::vector<store::CurvatureRow> rows, const AnalysisOptions& o, const CurvatureAt& at) {
  std::set<int64_t> probed, wanted;
  for (const auto& row : rows) probed.insert(row.step);
  std::vector<std::pair<int64_t, int64_t>> windows;  // (lo, hi): steps strictly between
  for (const Episode& e : r.episodes->episodes) {
    windows.emplace_back(e.entry_step - e.entry_resolution, e.entry_step);
    if (e.exit_step) windows.emplace_back(*e.exit_step - e.exit_resolution, *e.exit_step);
  }
  for (int64_t s : r.dir->snapshot_steps())
    for (const auto& [lo, hi] : windows)
      if (s > lo && s < hi && !probed.count(s)) wanted.insert(s);
  const std::string spec = curvature_spec(r.dir->manifest());
  for (int64_t s : wanted) {
    auto row = at(r.dir->path(), s, spec);
    if (!row) {
      r.refine_note = fmt::format("step {}: {}", s, row.status().message());
      return;
    }
    rows.push_back(*row);
    r.refined_steps.push_back(s);
  }
  if (r.refined_steps.empty()) {
    r.refine_note = "no snapshot inside an episode's windows (train with a denser snapshot_every)";
    return;
  }
  if (auto eps = find_episodes(rows, r.metrics, o.episodes, r.symmetry); eps.ok()) r.episodes = std::move(*eps);
}

// The run's noise.csv with the learning rate and probe loss (from `curvature`, the run's curvature rows
// or null) at its steps; a table that cannot be read is noted, and the run is still analysed.
void read_noise(Run& r, const store::RunDir& dir, const std::vector<store::CurvatureRow>* curvature) {
  if (!dir.has(store::kNoise.file)) return;
  auto rows = dir.noise();
  if (!rows) {
    r.noise_note = rows.status().message();
    return;
  }
  r.noise.run_id = r.id;
  r.noise.group = r.group;
  r.noise.rows = std::move(*rows);
  for (const auto& m : r.metrics) r.noise.lr[m.step] = m.lr;
  if (curvature)
    for (const auto& c : *curvature) r.noise.probe_loss[c.step] = c.probe_loss;
}

Run read_run(const std::string& study_dir, const std::string& name, const AnalysisOptions& o, const CurvatureAt& at) {
  Run r;
  r.id = name;
  r.path = "runs/" + name;
  auto dir = store::RunDir::open(study_dir + "/runs/" + name);
  if (!dir) {
    r.status = "unreadable";
    r.skipped = dir.status().message();
    return r;
  }
  const store::RunManifest& m = dir->manifest();
  r.status = store::status_name(dir->state());
  auto config = store::config_view(m);
  if (!config) {
    r.skipped = config.status().message();
    return r;
  }
  r.seed = config->seed.value_or(0);
  r.data_seed = config->data_seed.value_or(r.seed);
  r.optimizer = config->optimizer.value_or(r.optimizer);
  r.dtype = config->dtype.value_or(r.dtype);
  r.perturbation = config->perturbation.value_or(json());
  auto group = group_of(m, o.group_by);
  if (!group) {
    r.skipped = group.status().message();
    return r;
  }
  r.group = *group;
  r.model = study_table(m, "model");
  if (dir->state() != store::RunStatus::kCompleted && dir->state() != store::RunStatus::kDiverged) {
    r.skipped = "status " + r.status + (m.error.empty() ? "" : ": " + m.error);
    return r;
  }
  auto metrics = dir->metrics();
  if (!metrics) {
    r.skipped = metrics.status().message();
    return r;
  }
  r.metrics = std::move(*metrics);
  r.final_loss = m.final_loss;
  if (m.evaluation) {
    r.eval_mse = m.evaluation->mse;
    r.baseline_mse = m.evaluation->baseline_mse;
  }
  if (dir->has(store::kSymmetry.file)) {
    auto symmetry = dir->symmetry();
    if (!symmetry) {
      r.skipped = symmetry.status().message();
      return r;
    }
    r.symmetry = std::move(*symmetry);
  }
  auto curvature = dir->has(store::kCurvature.file)
                       ? dir->curvature()
                       : Result<std::vector<store::CurvatureRow>>(
                             Status::Error("no curvature probe: episodes need curvature.csv"));
  read_noise(r, *dir, curvature.ok() ? &*curvature : nullptr);
  if (!curvature) {
    r.episodes_note = curvature.status().message();
  } else if (auto eps = find_episodes(*curvature, r.metrics, o.episodes, r.symmetry); !eps) {
    r.episodes_note = eps.status().message();
  } else {
    r.episodes = std::move(*eps);
    r.dir.emplace(std::move(*dir));
    if (o.refine && !r.episodes->episodes.empty()) refine(r, std::move(*curvature), o, at);
    return r;
  }
  r.dir.emplace(std::move(*dir));
  return r;
}

// f(0), ..., f(n − 1) on every core of the machine.
template <class F>
void parallel_for(size_t n, F f) {
  const size_t workers = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < n;) f(i);
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
}

// ---- The theory check ------------------------------------------------------------------------------

int64_t parameter_count(const store::RunDir& dir) {
  auto steps = dir.snapshot_steps();
  if (steps.empty()) return 0;
  auto snap = dir.snapshot(steps.front());
  if (!snap) return 0;
  int64_t n = 0;
  for (const auto& [name, a] : *snap) n += a.numel();
  return n;
}

// The unit roundoff of the run's dtype, scaled by the median |ULP error| its weight-gradient taps
// measured (ULPs are relative spacings of about 2u), or 0 without taps.
double measured_rounding(const Run& r) {
  if (!r.dir || !r.dir->has(store::kOps.file)) return 0;
  auto ops = r.dir->ops();
  if (!ops) return 0;
  std::vector<double> ulps;
  for (const auto& row : *ops)
    if (row.phase == "wgrad" && (row.flag == "within" || row.flag == "beyond")) ulps.push_back(std::fabs(row.ulp_error));
  if (ulps.empty()) return 0;
  std::nth_element(ulps.begin(), ulps.begin() + static_cast<std::ptrdiff_t>(ulps.size() / 2), ulps.end());
  const double ulp = r.dtype == "float64" ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
  return ulps[ulps.size() / 2] * ulp;
}

// One episode's prediction: time ≈ ln(R/r0)/ln(1 + η|λmin|) (DESIGN.md), with
//   R  = √(2 f L_entry / |λmin|): the distance along v_min at which a quadratic saddle's loss has fallen
//        by the escape rule's fraction f,
//   r0 = the largest of: the displacement along v_min at entry, |g·v_min|/|λmin|; the injected
//        perturbation's per-step displacement, η·σ_elem; the measured rounding's, η·u·‖g‖/√P.
json theory_of(const Episode& e, const Run& r, double f, int64_t params, double rounding) {
  json t;
  const double lambda = std::fabs(e.lambda_min_entry), eta = e.lr_entry;
  const double r_entry = lambda > 0 ? std::fabs(e.g_dot_vmin_entry) / lambda : kNaN;
  double sigma_elem = 0;
  if (r.perturbation.is_string())
    if (auto p = trainer::parse_perturbation(r.perturbation.get<std::string>()); p && p->kind == "gaussian")
      sigma_elem = p->absolute ? p->sigma
                   : params > 0 ? p->sigma * e.batch_grad_norm_entry / std::sqrt(static_cast<double>(params))
                                : kNaN;
  const double r_perturbation = eta * sigma_elem;
  const double r_rounding =
      params > 0 ? eta * rounding * e.batch_grad_norm_entry / std::sqrt(static_cast<double>(params)) : 0;
  double r0 = 0;
  for (double x : {r_entry, r_perturbation, r_rounding})
    if (std::isfinite(x)) r0 = std::max(r0, x);
  const double R = lambda > 0 ? std::sqrt(2 * f * std::fabs(e.loss_entry) / lambda) : kNaN;
  const double predicted = escape_steps(e.lambda_min_entry, eta, e.loss_entry, f, r0);
  t["r_entry"] = num(r_entry);
  t["r_perturbation"] = num(r_perturbation);
  t["r_rounding"] = num(r_rounding);
  t["r0"] = num(r0);
  t["R"] = num(R);
  t["predicted_escape_steps"] = num(predicted);
  return t;
}

// ---- Per run -----------------------------------------------------------------------------------------

json episode_json(const Episode& e) {
  return {{"entry_step", e.entry_step},
          {"entry_resolution", e.entry_resolution},
          {"exit_step", opt(e.exit_step)},
          {"exit_resolution", e.exit_resolution},
          {"censored", e.censored},
          {"exit_rule", e.exit_rule.empty() ? json(nullptr) : json(e.exit_rule)},
          {"escape_steps", e.escape_steps},
          {"probe_steps", e.probe_steps},
          {"loss_entry", num(e.loss_entry)},
          {"loss_exit", num(e.loss_exit)},
          {"grad_norm_entry", num(e.grad_norm_entry)},
          {"lambda_min_entry", num(e.lambda_min_entry)},
          {"lambda_max_entry", num(e.lambda_max_entry)},
          {"negative_mass_entry", num(e.negative_mass_entry)},
          {"lr_entry", num(e.lr_entry)},
          {"proximity_entry", num(e.proximity_entry)},
          {"kind", e.kind},
          {"identical_pairs_entry", e.identical_pairs_entry},
          {"symmetry_broken_step", opt(e.symmetry_broken_step)}};
}

json run_json(const Run& r, const AnalysisOptions& o) {
  json j = {{"run_id", r.id},     {"path", r.path},         {"group", r.group.empty() ? json(nullptr) : json(r.group)},
            {"seed", r.seed},     {"data_seed", r.data_seed}, {"model", r.model}, {"status", r.status},     {"skipped", r.skipped.empty() ? json(nullptr) : json(r.skipped)},
            {"optimizer", r.optimizer}, {"perturbation", r.perturbation.is_null() ? json("none") : r.perturbation},
            {"final_loss", opt(r.final_loss)}, {"eval_mse", opt(r.eval_mse)},
            {"baseline_mse", opt(r.baseline_mse)},
            {"noise_rows", r.noise.rows.size()}, {"noise_note", r.noise_note.empty() ? json(nullptr) : json(r.noise_note)}};
  j["learns"] = r.eval_mse && r.baseline_mse ? json(*r.eval_mse < *r.baseline_mse) : json(nullptr);
  j["steps_completed"] = r.dir ? json(r.dir->manifest().steps_completed) : json(nullptr);
  if (!r.episodes) {
    j["episodes"] = nullptr;
    j["episodes_note"] = r.episodes_note.empty() ? json(nullptr) : json(r.episodes_note);
    return j;
  }
  const RunEpisodes& e = *r.episodes;
  j["episodes_note"] = nullptr;
  j["probe_count"] = e.probe_count;
  j["probe_interval"] = e.probe_interval;
  j["last_probe_step"] = e.last_probe_step;
  j["gradient_scale"] = num(e.gradient_scale);
  j["time_in_saddle"] = e.time_in_saddle;
  j["negative_probes"] = e.negative_probes;
  j["significant_probes"] = e.significant_probes;
  j["flat_probes"] = e.flat_probes;
  j["first_flat_step"] = opt(e.first_flat_step);
  j["flat"] = e.probe_count > 0 && e.flat_probes == e.probe_count;  // dead from the first probe on
  if (o.refine) {
    j["refined_steps"] = r.refined_steps;
    j["refine_note"] = r.refine_note.empty() ? json(nullptr) : json(r.refine_note);
  }
  j["episodes"] = json::array();
  const bool theory = !e.episodes.empty();
  const int64_t params = theory && r.dir ? parameter_count(*r.dir) : 0;
  const double rounding = theory ? measured_rounding(r) : 0;
  for (const Episode& ep : e.episodes) {
    json x = episode_json(ep);
    x["theory"] = theory_of(ep, r, o.episodes.escape_drop, params, rounding);
    j["episodes"].push_back(x);
  }
  j["level_crossings"] = json::array();
  for (size_t i = 0; i < e.level_crossings.size(); ++i)
    j["level_crossings"].push_back({{"level", o.episodes.loss_levels[i]}, {"step", opt(e.level_crossings[i])}});
  return j;
}

const char* pairing_name(AnalysisOptions::Pairing p) {
  return p == AnalysisOptions::Pairing::kOn ? "on" : p == AnalysisOptions::Pairing::kOff ? "off" : "auto";
}

// ---- Groups ------------------------------------------------------------------------------------------

struct Group {
  std::string name;
  std::string model;             // its runs' study model: groups of different models are not compared
  std::vector<const Run*> runs;  // analysed runs
  std::vector<Observation> escapes;  // each run's first episode
  std::vector<double> final_loss, time_in_saddle;
  detail::GroupSample sample;    // the same, run by run, for the comparisons
};

json summary_json(std::vector<double> v) {
  if (v.empty()) return {{"n", 0}, {"median", nullptr}, {"q1", nullptr}, {"q3", nullptr}, {"min", nullptr}, {"max", nullptr}};
  std::sort(v.begin(), v.end());
  auto q = [&](double p) { return quantile_sorted(v, p); };
  return {{"n", v.size()}, {"median", num(q(0.5))}, {"q1", num(q(0.25))}, {"q3", num(q(0.75))},
          {"min", num(v.front())}, {"max", num(v.back())}};
}

json group_json(const Group& g, const AnalysisOptions& o) {
  std::set<int64_t> seeds;
  int64_t with_curvature = 0, probes = 0, negative = 0, significant = 0, flat_runs = 0;
  bool counts_known = true;
  std::vector<double> eval_mse;
  for (const Run* r : g.runs) {
    seeds.insert(r->seed);
    if (r->eval_mse) eval_mse.push_back(*r->eval_mse);
    with_curvature += r->episodes.has_value();
    if (!r->episodes) continue;
    if (!r->probe_counts) counts_known = false;
    probes += r->episodes->probe_count;
    negative += r->episodes->negative_probes;
    significant += r->episodes->significant_probes;
    flat_runs += r->episodes->probe_count > 0 && r->episodes->flat_probes == r->episodes->probe_count;
  }
  SurvivalCurve km = kaplan_meier(g.escapes, o.level);
  json steps = json::array();
  for (const auto& s : km.steps)
    steps.push_back({{"step", s.time}, {"at_risk", s.at_risk}, {"events", s.events}, {"censored", s.censored},
                     {"survival", num(s.survival)}, {"lower", num(s.lower)}, {"upper", num(s.upper)}});
  return {{"name", g.name},
          {"n_runs", g.runs.size()},
          {"seeds", seeds},
          {"n_with_curvature", with_curvature},
          {"probes", probes},
          {"probes_negative", counts_known ? json(negative) : json(nullptr)},
          {"probes_significant", counts_known ? json(significant) : json(nullptr)},
          {"n_flat", counts_known ? json(flat_runs) : json(nullptr)},
          {"n_with_episode", g.escapes.size()},
          {"n_escaped", km.events},
          {"n_censored", km.censored},
          {"km", steps},
          {"median_escape_steps", opt(km.median)},
          {"median_escape_lower", opt(km.median_lower)},
          {"median_escape_upper", opt(km.median_upper)},
          {"final_loss", summary_json(g.final_loss)},
          {"eval_mse", summary_json(eval_mse)},
          {"time_in_saddle", summary_json(g.time_in_saddle)}};
}

// ---- Paired runs: divergence and attribution -----------------------------------------------------------

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

// The runs' groups (a study of several models: one model's config, "autoencoder/cpu-t1"), and the pairs
// of groups to compare: the baseline against every other group of its model, or every two groups of a
// model. Errors: a baseline that is no group.
struct Grouping {
  std::map<std::string, Group> groups;
  std::vector<std::pair<const Group*, const Group*>> pairs;
  bool by_model = false;
};

Result<Grouping> group_runs(std::vector<Run>& runs, const AnalysisOptions& o) {
  Grouping out;
  auto& groups = out.groups;
  auto& pairs = out.pairs;
  // A study of several models: a group is one model's config ("autoencoder/cpu-t1"), and only groups
  // of the same model are compared — one config's runs of two models are not one sample.
  std::set<std::string> models;
  for (const Run& r : runs)
    if (r.analysed() || r.dir) models.insert(r.model);
  const bool by_model = out.by_model = models.size() > 1 && o.group_by.empty();
  if (by_model)
    for (Run& r : runs)
      if (!r.group.empty()) r.group = study_group(r.model, r.group, true);
  for (const Run& r : runs) {
    if (!r.analysed()) continue;
    Group& g = groups[r.group];
    g.name = r.group;
    g.model = r.model;
    g.runs.push_back(&r);
    g.sample.name = r.group;
    detail::Member& m = g.sample.members.emplace_back();
    m.seed = r.seed;
    m.data_seed = r.data_seed;
    m.final_loss = r.final_loss;
    if (r.final_loss) g.final_loss.push_back(*r.final_loss);
    if (r.episodes) {
      m.time_in_saddle = static_cast<double>(r.episodes->time_in_saddle);
      g.time_in_saddle.push_back(*m.time_in_saddle);
      if (!r.episodes->episodes.empty()) {
        const Episode& e = r.episodes->episodes.front();
        m.escape = Observation{static_cast<double>(e.escape_steps), !e.censored};
        g.escapes.push_back(*m.escape);
      }
    }
  }
  // The baseline of each model: the group named --baseline, or in a study of several models each
  // model's group of that config.
  auto is_baseline = [&](const Group& g) {
    return g.name == o.baseline || (by_model && g.name == study_group(g.model, o.baseline, true));
  };
  if (!o.baseline.empty() && std::none_of(groups.begin(), groups.end(), [&](const auto& kv) { return is_baseline(kv.second); })) {
    std::string known;
    for (const auto& [name, g] : groups) known += (known.empty() ? "" : ", ") + name;
    return Status::Error("--baseline: no group is named '" + o.baseline + "' (groups: " + known + ")");
  }

  for (auto i = groups.begin(); i != groups.end(); ++i) {
    for (auto j = std::next(i); j != groups.end(); ++j) {
      const Group *a = &i->second, *b = &j->second;
      if (a->model != b->model) continue;
      if (!o.baseline.empty()) {
        if (is_baseline(*b)) std::swap(a, b);
        if (!is_baseline(*a) || is_baseline(*b)) continue;
      }
      pairs.emplace_back(a, b);
    }
  }
  return out;
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

}  // namespace

Status AnalysisOptions::validate() const {
  SADDLESCOPE_RETURN_IF_ERROR(episodes.validate());
  if (!(level > 0 && level < 1)) return Status::Error(fmt::format("level must be in (0, 1), got {}", level));
  if (permutations < 1) return Status::Error(fmt::format("permutations must be >= 1, got {}", permutations));
  if (resamples < 1) return Status::Error(fmt::format("resamples must be >= 1, got {}", resamples));
  if (!(power > 0 && power < 1)) return Status::Error(fmt::format("power must be in (0, 1), got {}", power));
  if (attribution_k < 1) return Status::Error(fmt::format("attribution_k must be >= 1, got {}", attribution_k));
  return Status::Ok();
}

Result<json> analyze_study(const std::string& study_dir, const AnalysisOptions& o, const Replayer& replay,
                           const std::function<void(int64_t, int64_t)>& progress, const CurvatureAt& curvature_at) {
  SADDLESCOPE_RETURN_IF_ERROR(o.validate());
  if (o.refine && !curvature_at) return Status::Error("refine needs a curvature evaluator");
  const std::vector<std::string> names = run_names(study_dir);
  if (names.empty()) return Status::Error(study_dir + ": no runs (expected run directories under " + study_dir + "/runs)");
  std::vector<Run> runs;
  runs.resize(names.size());
  std::mutex progress_mutex;
  int64_t read = 0;
  parallel_for(names.size(), [&](size_t i) {
    runs[i] = read_run(study_dir, names[i], o, curvature_at);
    std::lock_guard<std::mutex> lock(progress_mutex);
    if (progress) progress(++read, static_cast<int64_t>(names.size()));
  });
  for (const auto& k : o.group_by) {
    bool any = false;
    for (const auto& r : runs) any |= r.dir && !r.dir->manifest().config_value(k).is_null();
    if (!any) return Status::Error("--group-by: no run has a config key '" + k + "'");
  }

  auto grouping = group_runs(runs, o);
  if (!grouping) return grouping.status();
  // Named references, not a structured binding: C++17 lambdas cannot capture bindings (clang refuses).
  const auto& groups = grouping->groups;
  const auto& pairs = grouping->pairs;
  const bool by_model = grouping->by_model;

  json out;
  out["schema_version"] = 1;
  out["study_dir"] = study_dir;
  const EpisodeOptions& e = o.episodes;
  out["definitions"] = {
      {"proximity", e.proximity},
      {"epsilon", num(e.epsilon)},
      {"gamma", e.gamma},
      {"residual_factor", e.residual_factor},
      {"delta", num(e.delta)},
      {"escape_drop", e.escape_drop},
      {"loss_window", e.loss_window},
      {"loss_levels", e.loss_levels},
      {"gradient_norm", "probe_grad_norm: the gradient on the fixed probe batch (curvature.csv); near a saddle "
                        "when rho = |g|^2/(2|lambda_min| L) <= proximity (and |g| <= epsilon G when epsilon is set)"},
      {"plateau", "|dL/dstep| over the adjacent probe interval <= delta x the run's largest |dL/dstep|"},
      {"significant", "-lambda_min > gamma lambda_max and -lambda_min > residual_factor x its Ritz residual"},
      {"escape_time", "optimiser steps from the entry probe step to the escape probe step"},
      {"km_observation", "each run's first episode (runs without one are counted, not observed)"},
      {"level", o.level},
      {"permutations", o.permutations},
      {"resamples", o.resamples},
      {"seed", o.seed},
      {"pairing", pairing_name(o.pairing)},
      {"power", o.power},
      {"group_by", !o.group_by.empty() ? json(o.group_by) : json(by_model ? "study model/config" : "study config")},
      {"baseline", o.baseline.empty() ? json(nullptr) : json(o.baseline)},
      {"attribution_k", o.attribution_k},
      {"refine", o.refine}};
  out["runs"] = json::array();
  int64_t skipped = 0;
  for (const Run& r : runs) {
    out["runs"].push_back(run_json(r, o));
    skipped += !r.analysed();
  }
  out["n_runs"] = runs.size();
  out["n_skipped"] = skipped;
  out["groups"] = json::array();
  for (const auto& [name, g] : groups) out["groups"].push_back(group_json(g, o));

  out["comparisons"] = json::array();
  out["divergence"] = json::array();
  out["attribution"] = json::array();
  // Comparisons and divergences of every pair in parallel; then the attributions, one pair at a time
  // (each may replay steps on the runs' devices).
  struct PairResult {
    json comparison, divergence = json::array();
    const Run *a = nullptr, *b = nullptr;  // the smallest seed the groups share
    std::optional<Result<Divergence>> first;
  };
  std::vector<PairResult> results(pairs.size());
  parallel_for(pairs.size(), [&](size_t i) {
    const auto& [ga, gb] = pairs[i];
    PairResult& p = results[i];
    p.comparison = detail::compare_groups(ga->sample, gb->sample, o);
    const auto seeds_a = by_seed(*ga), seeds_b = by_seed(*gb);
    for (const auto& [seed, ra] : seeds_a) {
      auto it = seeds_b.find(seed);
      if (it == seeds_b.end()) continue;
      const Run& rb = *it->second;
      auto d = diverge(*ra->dir, ra->metrics, *rb.dir, rb.metrics);
      json dj = divergence_json(*ra, rb, d.ok() ? &*d : nullptr, d.ok() ? "" : d.status().message());
      dj["a"] = ga->name;
      dj["b"] = gb->name;
      p.divergence.push_back(dj);
      if (!p.first) {
        p.a = ra;
        p.b = &rb;
        p.first = std::move(d);
      }
    }
  });
  for (size_t i = 0; i < pairs.size(); ++i) {
    PairResult& p = results[i];
    out["comparisons"].push_back(std::move(p.comparison));
    for (auto& d : p.divergence) out["divergence"].push_back(std::move(d));
    if (p.first) {
      const Divergence* d = p.first->ok() ? &**p.first : nullptr;
      out["attribution"].push_back(attribution_json(*pairs[i].first, *pairs[i].second, *p.a, *p.b, d, o, replay));
    }
  }
  detail::apply_holm(out["comparisons"], o);

  auto recorded = store::decode<std::vector<RunResult>>(out["runs"]);  // the runs as analysis.json declares them
  if (!recorded) return Status::Error("runs: " + recorded.status().message());
  out["theory"] = store::encode(theory_check(*recorded));
  std::vector<NoiseRun> noise;
  for (const Run& r : runs)
    if (r.analysed() && !r.noise.rows.empty()) noise.push_back(r.noise);
  out["noise_budget"] = noise_budget(noise, o.episodes.escape_drop);
  return out;
}

namespace {

// A run as an earlier analysis.json recorded it: what the group statistics need.
Result<Run> recorded_run(const json& r, size_t index) {
  auto field = [&](const char* key) -> Result<const json*> {
    if (!r.is_object() || !r.contains(key)) return Status::Error(fmt::format("runs[{}]: no key '{}'", index, key));
    return &r[key];
  };
  Run x;
  for (const char* key : {"run_id", "status"}) {
    auto v = field(key);
    if (!v) return v.status();
    if (!(*v)->is_string()) return Status::Error(fmt::format("runs[{}].{}: expected a string", index, key));
  }
  x.id = r["run_id"].get<std::string>();
  x.status = r["status"].get<std::string>();
  auto seed = field("seed");
  if (!seed) return seed.status();
  if (!(*seed)->is_number_integer()) return Status::Error(fmt::format("runs[{}].seed: expected an integer", index));
  x.seed = (*seed)->get<int64_t>();
  x.data_seed = r.contains("data_seed") && r["data_seed"].is_number_integer() ? r["data_seed"].get<int64_t>() : x.seed;
  x.model = r.contains("model") && r["model"].is_string() ? r["model"].get<std::string>() : "";
  x.group = r.contains("group") && r["group"].is_string() ? r["group"].get<std::string>() : "";
  // Group names of a study of several models were written as "model/config": group_runs adds the prefix.
  if (!x.model.empty() && x.group.rfind(x.model + "/", 0) == 0) x.group = x.group.substr(x.model.size() + 1);
  x.skipped = r.contains("skipped") && r["skipped"].is_string() ? r["skipped"].get<std::string>() : "";
  if (x.group.empty() && x.skipped.empty()) x.skipped = "no group";
  auto number = [&](const char* key) -> std::optional<double> {
    return r.contains(key) && r[key].is_number() ? std::optional<double>(r[key].get<double>()) : std::nullopt;
  };
  x.final_loss = number("final_loss");
  x.eval_mse = number("eval_mse");
  x.baseline_mse = number("baseline_mse");
  if (r.contains("optimizer") && r["optimizer"].is_string()) x.optimizer = r["optimizer"].get<std::string>();
  if (r.contains("episodes") && r["episodes"].is_array()) {
    RunEpisodes e;
    auto count = [&](const char* key) {
      return r.contains(key) && r[key].is_number_integer() ? r[key].get<int64_t>() : int64_t{0};
    };
    e.time_in_saddle = count("time_in_saddle");
    e.probe_count = count("probe_count");
    e.negative_probes = count("negative_probes");
    e.significant_probes = count("significant_probes");
    e.flat_probes = count("flat_probes");
    x.probe_counts = r.contains("negative_probes");
    for (const auto& ep : r["episodes"]) {
      if (!ep.is_object() || !ep.contains("escape_steps") || !ep["escape_steps"].is_number_integer() ||
          !ep.contains("censored") || !ep["censored"].is_boolean())
        return Status::Error(fmt::format("runs[{}].episodes: each needs an integer escape_steps and a boolean censored", index));
      Episode y;
      y.escape_steps = ep["escape_steps"].get<int64_t>();
      y.censored = ep["censored"].get<bool>();
      e.episodes.push_back(y);
    }
    x.episodes = std::move(e);
  }
  return x;
}

}  // namespace

Result<json> reanalyze(const json& earlier, const AnalysisOptions& o) {
  SADDLESCOPE_RETURN_IF_ERROR(o.validate());
  if (!earlier.is_object() || !earlier.contains("runs") || !earlier["runs"].is_array())
    return Status::Error("expected an analysis.json object with a 'runs' array");
  std::vector<Run> runs;
  for (size_t i = 0; i < earlier["runs"].size(); ++i) {
    auto r = recorded_run(earlier["runs"][i], i);
    if (!r) return r.status();
    runs.push_back(std::move(*r));
  }
  if (runs.empty()) return Status::Error("runs: empty (nothing to reanalyse)");
  auto grouping = group_runs(runs, o);
  if (!grouping) return grouping.status();
  const auto& groups = grouping->groups;
  const auto& pairs = grouping->pairs;
  json out = earlier;
  json& d = out["definitions"];
  if (!d.is_object()) d = json::object();
  d["level"] = o.level;
  d["permutations"] = o.permutations;
  d["resamples"] = o.resamples;
  d["seed"] = o.seed;
  d["pairing"] = pairing_name(o.pairing);
  d["power"] = o.power;
  d["baseline"] = o.baseline.empty() ? json(nullptr) : json(o.baseline);
  out["groups"] = json::array();
  for (const auto& [name, g] : groups) out["groups"].push_back(group_json(g, o));
  out["comparisons"] = json::array();
  for (const auto& [a, b] : pairs) out["comparisons"].push_back(detail::compare_groups(a->sample, b->sample, o));
  detail::apply_holm(out["comparisons"], o);
  out["reanalysis"] = {
      {"of", earlier.value("study_dir", "")},
      {"recomputed", "groups and comparisons (paired where the design is, Holm, detectable effects), from runs[] as "
                     "recorded"},
      {"kept", "runs[] with their episodes, divergence, attribution, theory and noise budget, as the earlier analysis wrote them: "
               "they need the run directories"}};
  return out;
}

}  // namespace saddlescope::analysis
