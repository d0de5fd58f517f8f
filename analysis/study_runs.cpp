// A run as the analysis reads it: config, status, tables, episodes (and their refinement), and its
// analysis.json runs[] entry with each episode's escape-time prediction.
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
#include "saddlescope/store/config_view.h"
#include "saddlescope/trainer/perturbation_spec.h"
#include "stats_detail.h"

namespace saddlescope::analysis::study {
namespace {

using nlohmann::json;
using detail::num;


}  // namespace

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
  for (int64_t s : wanted) {
    auto row = at(r.dir->path(), s, r.curvature_spec);
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
  for (const auto& p : config->probe.value_or(std::vector<std::string>{}))
    if (p.rfind("curvature", 0) == 0 && r.curvature_spec.empty()) r.curvature_spec = p;
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

}  // namespace saddlescope::analysis::study
