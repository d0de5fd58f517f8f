// analysis.json's runs[] and groups[] entries as types: a run with its episodes and curvature summary,
// and a group's summaries and Kaplan–Meier curve. Part of analysis_result.h's declaration (read that
// header's conventions: NaN is null, key() and omitted()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/store/json_object.h"

namespace saddlescope::analysis {

using store::key;
using store::omitted;

// ---- runs[] ---------------------------------------------------------------------------------------------

struct EpisodeTheory {  // the escape-time prediction of one episode (docs/analysis.md, "The theory check")
  double r_entry = 0, r_perturbation = 0, r_rounding = 0, r0 = 0, R = 0, predicted_escape_steps = 0;
  static auto json_keys() {
    using T = EpisodeTheory;
    return std::make_tuple(key("r_entry", &T::r_entry), key("r_perturbation", &T::r_perturbation),
                           key("r_rounding", &T::r_rounding), key("r0", &T::r0), key("R", &T::R),
                           key("predicted_escape_steps", &T::predicted_escape_steps));
  }
};

struct EpisodeResult {
  int64_t entry_step = 0, entry_resolution = 0;
  std::optional<int64_t> exit_step;  // empty: censored
  int64_t exit_resolution = 0;
  bool censored = false;
  std::optional<std::string> exit_rule;
  int64_t escape_steps = 0, probe_steps = 0;
  double loss_entry = 0, loss_exit = 0, grad_norm_entry = 0, lambda_min_entry = 0, lambda_max_entry = 0,
         negative_mass_entry = 0, lr_entry = 0;
  std::optional<double> proximity_entry;
  std::optional<std::string> kind;  // strict | symmetric
  std::optional<int64_t> identical_pairs_entry;
  std::optional<std::optional<int64_t>> symmetry_broken_step;
  EpisodeTheory theory;
  static auto json_keys() {
    using T = EpisodeResult;
    return std::make_tuple(
        key("entry_step", &T::entry_step), key("entry_resolution", &T::entry_resolution),
        key("exit_step", &T::exit_step), key("exit_resolution", &T::exit_resolution), key("censored", &T::censored),
        key("exit_rule", &T::exit_rule), key("escape_steps", &T::escape_steps), key("probe_steps", &T::probe_steps),
        key("loss_entry", &T::loss_entry), key("loss_exit", &T::loss_exit), key("grad_norm_entry", &T::grad_norm_entry),
        key("lambda_min_entry", &T::lambda_min_entry), key("lambda_max_entry", &T::lambda_max_entry),
        key("negative_mass_entry", &T::negative_mass_entry), key("lr_entry", &T::lr_entry),
        omitted("proximity_entry", &T::proximity_entry), omitted("kind", &T::kind),
        omitted("identical_pairs_entry", &T::identical_pairs_entry),
        omitted("symmetry_broken_step", &T::symmetry_broken_step), key("theory", &T::theory));
  }
};

struct LevelCrossing {
  double level = 0;
  std::optional<int64_t> step;  // empty: the loss never fell to the level
  static auto json_keys() { return std::make_tuple(key("level", &LevelCrossing::level), key("step", &LevelCrossing::step)); }
};

struct RunResult {
  std::string run_id, path;
  std::optional<std::string> group;
  int64_t seed = 0;
  std::optional<int64_t> data_seed;
  std::optional<std::string> model;
  std::string status;
  std::optional<std::string> skipped;  // why the run is left out of every statistic
  std::string optimizer;
  std::optional<nlohmann::json> perturbation;  // the config's perturbation spec ("none": none)
  double final_loss = 0, eval_mse = 0, baseline_mse = 0;
  std::optional<bool> learns;
  std::optional<int64_t> steps_completed;
  std::optional<int64_t> noise_rows;
  std::optional<std::optional<std::string>> noise_note;
  // With a curvature probe (all left out without one):
  std::optional<int64_t> probe_count, probe_interval, last_probe_step;
  std::optional<double> gradient_scale;
  std::optional<int64_t> time_in_saddle, negative_probes, significant_probes, flat_probes;
  std::optional<std::optional<int64_t>> first_flat_step;
  std::optional<bool> flat;
  std::optional<std::vector<int64_t>> refined_steps;            // with --refine
  std::optional<std::optional<std::string>> refine_note;        // with --refine
  std::optional<std::vector<LevelCrossing>> level_crossings;
  std::optional<std::vector<EpisodeResult>> episodes;  // empty: no curvature probe (episodes_note says why)
  std::optional<std::string> episodes_note;
  static auto json_keys() {
    using T = RunResult;
    return std::make_tuple(
        key("run_id", &T::run_id), key("path", &T::path), key("group", &T::group), key("seed", &T::seed),
        omitted("data_seed", &T::data_seed), omitted("model", &T::model), key("status", &T::status),
        key("skipped", &T::skipped), key("optimizer", &T::optimizer), omitted("perturbation", &T::perturbation),
        key("final_loss", &T::final_loss), key("eval_mse", &T::eval_mse), key("baseline_mse", &T::baseline_mse),
        key("learns", &T::learns), key("steps_completed", &T::steps_completed), omitted("noise_rows", &T::noise_rows),
        omitted("noise_note", &T::noise_note), omitted("probe_count", &T::probe_count),
        omitted("probe_interval", &T::probe_interval), omitted("last_probe_step", &T::last_probe_step),
        omitted("gradient_scale", &T::gradient_scale), omitted("time_in_saddle", &T::time_in_saddle),
        omitted("negative_probes", &T::negative_probes), omitted("significant_probes", &T::significant_probes),
        omitted("flat_probes", &T::flat_probes), omitted("first_flat_step", &T::first_flat_step),
        omitted("flat", &T::flat), omitted("refined_steps", &T::refined_steps),
        omitted("refine_note", &T::refine_note), omitted("level_crossings", &T::level_crossings),
        key("episodes", &T::episodes), key("episodes_note", &T::episodes_note));
  }
};

// ---- groups[] -------------------------------------------------------------------------------------------

struct Summary {  // of one value over a group's runs: null numbers when n is 0
  int64_t n = 0;
  double median = 0, q1 = 0, q3 = 0, min = 0, max = 0;
  static auto json_keys() {
    using T = Summary;
    return std::make_tuple(key("n", &T::n), key("median", &T::median), key("q1", &T::q1), key("q3", &T::q3),
                           key("min", &T::min), key("max", &T::max));
  }
};

struct KmStep {  // a step of the Kaplan–Meier curve of the group's first-episode escape times
  double step = 0;
  int64_t at_risk = 0, events = 0, censored = 0;
  double survival = 0, lower = 0, upper = 0;
  static auto json_keys() {
    using T = KmStep;
    return std::make_tuple(key("step", &T::step), key("at_risk", &T::at_risk), key("events", &T::events),
                           key("censored", &T::censored), key("survival", &T::survival), key("lower", &T::lower),
                           key("upper", &T::upper));
  }
};

struct GroupResult {
  std::string name;
  int64_t n_runs = 0;
  std::vector<int64_t> seeds;
  int64_t n_with_curvature = 0;
  std::optional<int64_t> probes;
  std::optional<std::optional<int64_t>> probes_negative, probes_significant, n_flat;  // null: an older run's counts
  int64_t n_with_episode = 0, n_escaped = 0, n_censored = 0;
  std::vector<KmStep> km;
  double median_escape_steps = 0, median_escape_lower = 0, median_escape_upper = 0;
  Summary final_loss;
  std::optional<Summary> eval_mse;
  Summary time_in_saddle;
  static auto json_keys() {
    using T = GroupResult;
    return std::make_tuple(
        key("name", &T::name), key("n_runs", &T::n_runs), key("seeds", &T::seeds),
        key("n_with_curvature", &T::n_with_curvature), omitted("probes", &T::probes),
        omitted("probes_negative", &T::probes_negative), omitted("probes_significant", &T::probes_significant),
        omitted("n_flat", &T::n_flat), key("n_with_episode", &T::n_with_episode), key("n_escaped", &T::n_escaped),
        key("n_censored", &T::n_censored), key("km", &T::km), key("median_escape_steps", &T::median_escape_steps),
        key("median_escape_lower", &T::median_escape_lower), key("median_escape_upper", &T::median_escape_upper),
        key("final_loss", &T::final_loss), omitted("eval_mse", &T::eval_mse), key("time_in_saddle", &T::time_in_saddle));
  }
};

}  // namespace saddlescope::analysis
