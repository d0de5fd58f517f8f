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
#include "study_internal.h"

namespace saddlescope::analysis {
namespace {

using nlohmann::json;

using detail::num;


using study::Group;
using study::Run;
using study::attribution_json;
using study::by_seed;
using study::divergence_json;
using study::parallel_for;
using study::read_run;
using study::run_json;
using study::opt;
using study::run_names;
using study::theory_check;

const char* pairing_name(AnalysisOptions::Pairing p) {
  return p == AnalysisOptions::Pairing::kOn ? "on" : p == AnalysisOptions::Pairing::kOff ? "off" : "auto";
}

// ---- Groups ------------------------------------------------------------------------------------------

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
