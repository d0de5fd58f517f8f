// analysis.json (schema_version 1) as types, declared once: the analysis writes what these structs
// hold, and `analyze`'s text and the report read them through decode_analysis, never by keys typed
// where they are used. docs/analysis.md ("analysis.json") says what each field means; a test checks that
// it names every key declared here, and that every committed analysis.json under docs/results reads and
// writes back to the same text.
//
// Numbers that are undefined are NaN here and null in the file. std::optional members declared with
// key() are null when empty; those declared with omitted() are left out of the file when empty (a test
// without data, a run without curvature, a file from before the field existed). A few fields are
// std::optional<std::optional<T>>: left out, null, or a value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/analysis/analysis_result_runs.h"  // runs[] and groups[]
#include "saddlescope/base/status.h"
#include "saddlescope/store/json_object.h"

namespace saddlescope::analysis {

using store::key;
using store::omitted;

// ---- comparisons[] --------------------------------------------------------------------------------------

struct PairedTest {  // the per-seed differences a − b of a paired design
  int64_t n_pairs = 0;
  std::vector<int64_t> seeds;
  double mean_difference = 0, t_ci_low = 0, t_ci_high = 0, relative_mean_difference = 0, relative_t_ci_low = 0,
         relative_t_ci_high = 0, bootstrap_mean_ci_low = 0, bootstrap_mean_ci_high = 0, median_difference = 0,
         ci_low = 0, ci_high = 0, sd_difference = 0, wilcoxon_w_plus = 0;
  int64_t n_nonzero = 0;
  double p = 0;
  std::string p_method;
  double permutation_p = 0;
  static auto json_keys() {
    using T = PairedTest;
    return std::make_tuple(
        key("n_pairs", &T::n_pairs), key("seeds", &T::seeds), key("mean_difference", &T::mean_difference),
        key("t_ci_low", &T::t_ci_low), key("t_ci_high", &T::t_ci_high),
        key("relative_mean_difference", &T::relative_mean_difference), key("relative_t_ci_low", &T::relative_t_ci_low),
        key("relative_t_ci_high", &T::relative_t_ci_high), key("bootstrap_mean_ci_low", &T::bootstrap_mean_ci_low),
        key("bootstrap_mean_ci_high", &T::bootstrap_mean_ci_high), key("median_difference", &T::median_difference),
        key("ci_low", &T::ci_low), key("ci_high", &T::ci_high), key("sd_difference", &T::sd_difference),
        key("wilcoxon_w_plus", &T::wilcoxon_w_plus), key("n_nonzero", &T::n_nonzero), key("p", &T::p),
        key("p_method", &T::p_method), key("permutation_p", &T::permutation_p));
  }
};

struct Detectable {  // the smallest effect the test would find with the study's power
  double alpha = 0;
  int64_t tests_in_family = 0;
  double power = 0, min_p = 0;
  bool can_be_significant = false;
  std::optional<int64_t> n_needed;  // when no outcome could reach alpha
  double shift_sd = 0;
  std::string sd_unit;
  double shift = 0;
  std::optional<double> cliffs_delta;  // independent designs
  static auto json_keys() {
    using T = Detectable;
    return std::make_tuple(key("alpha", &T::alpha), key("tests_in_family", &T::tests_in_family),
                           key("power", &T::power), key("min_p", &T::min_p),
                           key("can_be_significant", &T::can_be_significant), omitted("n_needed", &T::n_needed),
                           key("shift_sd", &T::shift_sd), key("sd_unit", &T::sd_unit), key("shift", &T::shift),
                           omitted("cliffs_delta", &T::cliffs_delta));
  }
};

// The test of one outcome (final loss, time in saddle) between two groups. Without a value in a group,
// or with every value equal, `defined` is false and `note` says why; the rest is there when computed.
struct SampleTest {
  bool defined = false;
  std::optional<std::string> note;
  int64_t n_a = 0, n_b = 0;
  std::optional<std::string> test;  // wilcoxon_signed_rank | mann_whitney
  double p = 0;
  std::optional<std::string> p_method;
  double p_holm = 0;
  std::optional<double> mwu_u, mwu_p;
  std::optional<std::string> mwu_p_method;
  std::optional<double> permutation_p, median_difference, ci_low, ci_high, cliffs_delta;
  std::optional<std::string> magnitude;
  std::optional<double> pooled_sd;
  std::optional<PairedTest> paired;
  std::optional<Detectable> detectable;
  static auto json_keys() {
    using T = SampleTest;
    return std::make_tuple(
        key("defined", &T::defined), omitted("note", &T::note), key("n_a", &T::n_a), key("n_b", &T::n_b),
        omitted("test", &T::test), key("p", &T::p), omitted("p_method", &T::p_method), key("p_holm", &T::p_holm),
        omitted("mwu_u", &T::mwu_u), omitted("mwu_p", &T::mwu_p), omitted("mwu_p_method", &T::mwu_p_method),
        omitted("permutation_p", &T::permutation_p), omitted("median_difference", &T::median_difference),
        omitted("ci_low", &T::ci_low), omitted("ci_high", &T::ci_high), omitted("cliffs_delta", &T::cliffs_delta),
        omitted("magnitude", &T::magnitude), omitted("pooled_sd", &T::pooled_sd), omitted("paired", &T::paired),
        omitted("detectable", &T::detectable));
  }
};

struct EscapeCounts {
  int64_t n_a = 0, n_b = 0;  // runs with an episode
  static auto json_keys() { return std::make_tuple(key("n_a", &EscapeCounts::n_a), key("n_b", &EscapeCounts::n_b)); }
};

struct LogRank {
  bool defined = false;
  double chi2 = 0;
  int64_t df = 0;
  double p = 0, p_holm = 0;
  static auto json_keys() {
    using T = LogRank;
    return std::make_tuple(key("defined", &T::defined), key("chi2", &T::chi2), key("df", &T::df), key("p", &T::p),
                           key("p_holm", &T::p_holm));
  }
};

struct Comparison {
  std::string a, b;
  std::optional<std::string> design, design_note;  // paired | independent
  EscapeCounts escape;
  LogRank logrank;
  SampleTest final_loss, time_in_saddle;
  double p_holm = 0;  // the smallest of the three tests' Holm-adjusted p
  static auto json_keys() {
    using T = Comparison;
    return std::make_tuple(key("a", &T::a), key("b", &T::b), omitted("design", &T::design),
                           omitted("design_note", &T::design_note), key("escape", &T::escape),
                           key("logrank", &T::logrank), key("final_loss", &T::final_loss),
                           key("time_in_saddle", &T::time_in_saddle), key("p_holm", &T::p_holm));
  }
};

// ---- divergence[], attribution[] -----------------------------------------------------------------------

struct SnapshotDistance {
  int64_t step = 0;
  double rel_l2 = 0, max_ulp_distance = 0;
  static auto json_keys() {
    using T = SnapshotDistance;
    return std::make_tuple(key("step", &T::step), key("rel_l2", &T::rel_l2), key("max_ulp_distance", &T::max_ulp_distance));
  }
};

struct Growth {  // a fit of ln rel_l2 over steps; without one only rate_per_step (null), n and note
  double rate_per_step = 0;
  std::optional<double> rate_std_error, from_step, to_step;
  int64_t n = 0;
  std::optional<double> r2;
  std::optional<std::string> note;
  static auto json_keys() {
    using T = Growth;
    return std::make_tuple(key("rate_per_step", &T::rate_per_step), omitted("rate_std_error", &T::rate_std_error),
                           omitted("from_step", &T::from_step), omitted("to_step", &T::to_step), key("n", &T::n),
                           omitted("r2", &T::r2), omitted("note", &T::note));
  }
};

// Two runs of one seed in groups a and b. One that could not be computed has only the pair and `error`.
struct DivergenceResult {
  std::string a, b;
  int64_t seed = 0;
  std::string run_a, run_b;
  std::optional<std::string> error;
  std::optional<std::optional<int64_t>> first_loss_step, first_param_step;
  std::optional<int64_t> loss_steps_compared;
  std::optional<std::vector<SnapshotDistance>> snapshots;
  std::optional<double> final_rel_l2;
  std::optional<Growth> growth;
  static auto json_keys() {
    using T = DivergenceResult;
    return std::make_tuple(key("a", &T::a), key("b", &T::b), key("seed", &T::seed), key("run_a", &T::run_a),
                           key("run_b", &T::run_b), key("error", &T::error),
                           omitted("first_loss_step", &T::first_loss_step),
                           omitted("first_param_step", &T::first_param_step),
                           omitted("loss_steps_compared", &T::loss_steps_compared), omitted("snapshots", &T::snapshots),
                           omitted("final_rel_l2", &T::final_rel_l2), omitted("growth", &T::growth));
  }
};

struct OpEvidence {  // one op's sampled elements in both runs
  std::string op, phase, verdict;
  std::optional<std::string> config;
  int64_t compared = 0, differing = 0, beyond_a = 0, beyond_b = 0;
  double max_ratio_a = 0, max_ratio_b = 0, max_abs_ulp_a = 0, max_abs_ulp_b = 0;
  static auto json_keys() {
    using T = OpEvidence;
    return std::make_tuple(key("op", &T::op), key("phase", &T::phase), key("verdict", &T::verdict),
                           key("config", &T::config), key("compared", &T::compared), key("differing", &T::differing),
                           key("beyond_a", &T::beyond_a), key("beyond_b", &T::beyond_b),
                           key("max_ratio_a", &T::max_ratio_a), key("max_ratio_b", &T::max_ratio_b),
                           key("max_abs_ulp_a", &T::max_abs_ulp_a), key("max_abs_ulp_b", &T::max_abs_ulp_b));
  }
};

struct Detection {  // what the sampled elements could catch (docs/analysis.md)
  std::optional<int64_t> fewest_compared;
  double fraction = 0, probability = 0, needed_for = 0;
  int64_t needed = 0;
  static auto json_keys() {
    using T = Detection;
    return std::make_tuple(key("fewest_compared", &T::fewest_compared), key("fraction", &T::fraction),
                           key("probability", &T::probability), key("needed_for", &T::needed_for),
                           key("needed", &T::needed));
  }
};

struct AttributionResult {
  std::string a, b;
  int64_t seed = 0;
  std::string run_a, run_b;
  std::string verdict;  // identical | rounding | code | undetermined
  std::optional<int64_t> step;
  std::optional<std::string> op, phase, config;
  std::string evidence;  // bitwise | replay | recorded | none
  std::string reason;
  std::optional<int64_t> unmatched_rows;
  std::optional<std::vector<OpEvidence>> ops;  // always written by the analysis; the report's copy leaves it out
  std::optional<Detection> detection;
  static auto json_keys() {
    using T = AttributionResult;
    return std::make_tuple(key("a", &T::a), key("b", &T::b), key("seed", &T::seed), key("run_a", &T::run_a),
                           key("run_b", &T::run_b), key("verdict", &T::verdict), key("step", &T::step),
                           key("op", &T::op), key("phase", &T::phase), key("config", &T::config),
                           key("evidence", &T::evidence), key("reason", &T::reason),
                           omitted("unmatched_rows", &T::unmatched_rows), omitted("ops", &T::ops),
                           omitted("detection", &T::detection));
  }
};

// ---- theory -----------------------------------------------------------------------------------------------

struct TheoryPoint {  // an escaped episode with a prediction
  std::string run_id;
  int64_t entry_step = 0;
  double predicted = 0;
  int64_t observed = 0;
  std::string optimizer, exit_rule;
  std::optional<std::string> kind;
  std::optional<nlohmann::json> perturbation;
  std::optional<double> residual;  // fitted points
  static auto json_keys() {
    using T = TheoryPoint;
    return std::make_tuple(key("run_id", &T::run_id), key("entry_step", &T::entry_step),
                           key("predicted", &T::predicted), key("observed", &T::observed),
                           key("optimizer", &T::optimizer), key("exit_rule", &T::exit_rule), omitted("kind", &T::kind),
                           omitted("perturbation", &T::perturbation), omitted("residual", &T::residual));
  }
};

struct NoiseLevelFit {  // the fit within one perturbation; without one only perturbation, n and note
  std::string perturbation;
  int64_t n = 0;
  std::optional<double> slope, intercept, r2, slope_std_error, slope_minus_one_se;
  std::optional<std::string> note;
  static auto json_keys() {
    using T = NoiseLevelFit;
    return std::make_tuple(key("perturbation", &T::perturbation), key("n", &T::n), omitted("slope", &T::slope),
                           omitted("intercept", &T::intercept), omitted("r2", &T::r2),
                           omitted("slope_std_error", &T::slope_std_error),
                           omitted("slope_minus_one_se", &T::slope_minus_one_se), omitted("note", &T::note));
  }
};

struct Departure {  // another optimiser's loss-rule escapes against the prediction
  int64_t n = 0;
  double median_observed_over_predicted = 0, min = 0, max = 0;
  static auto json_keys() {
    using T = Departure;
    return std::make_tuple(key("n", &T::n), key("median_observed_over_predicted", &T::median_observed_over_predicted),
                           key("min", &T::min), key("max", &T::max));
  }
};

struct Theory {
  int64_t n = 0;
  double slope = 0, intercept = 0, r2 = 0, slope_std_error = 0;
  std::optional<double> slope_minus_one_se;
  std::optional<std::vector<NoiseLevelFit>> by_noise;
  std::vector<TheoryPoint> points;
  std::optional<std::vector<TheoryPoint>> not_fitted;
  std::optional<std::map<std::string, Departure>> departures;  // by optimiser
  std::string scope;
  std::optional<std::string> note;  // why there is no fit
  static auto json_keys() {
    using T = Theory;
    return std::make_tuple(key("n", &T::n), key("slope", &T::slope), key("intercept", &T::intercept),
                           key("r2", &T::r2), key("slope_std_error", &T::slope_std_error),
                           omitted("slope_minus_one_se", &T::slope_minus_one_se), omitted("by_noise", &T::by_noise),
                           key("points", &T::points), omitted("not_fitted", &T::not_fitted),
                           omitted("departures", &T::departures), key("scope", &T::scope), omitted("note", &T::note));
  }
};

// ---- noise_budget ------------------------------------------------------------------------------------------

struct NoiseBudgetRow {  // a noise.csv row with its run, group and predictions
  std::string run_id, group;
  int64_t step = 0, batch = 0, examples = 0;
  double lr = 0, grad_norm = 0, rounding_norm = 0, rounding_relative = 0, sampling_norm = 0, ratio = 0,
         perturbation_norm = 0, lambda_min = 0, rounding_vmin = 0, sampling_vmin = 0, ratio_vmin = 0,
         escape_steps_rounding = 0, escape_steps_sampling = 0;
  static auto json_keys() {
    using T = NoiseBudgetRow;
    return std::make_tuple(
        key("run_id", &T::run_id), key("group", &T::group), key("step", &T::step), key("batch", &T::batch),
        key("examples", &T::examples), key("lr", &T::lr), key("grad_norm", &T::grad_norm),
        key("rounding_norm", &T::rounding_norm), key("rounding_relative", &T::rounding_relative),
        key("sampling_norm", &T::sampling_norm), key("ratio", &T::ratio), key("perturbation_norm", &T::perturbation_norm),
        key("lambda_min", &T::lambda_min), key("rounding_vmin", &T::rounding_vmin),
        key("sampling_vmin", &T::sampling_vmin), key("ratio_vmin", &T::ratio_vmin),
        key("escape_steps_rounding", &T::escape_steps_rounding), key("escape_steps_sampling", &T::escape_steps_sampling));
  }
};

struct Spread {  // over a group's finite values
  int64_t n = 0;
  double min = 0, median = 0, max = 0;
  static auto json_keys() {
    using T = Spread;
    return std::make_tuple(key("n", &T::n), key("min", &T::min), key("median", &T::median), key("max", &T::max));
  }
};

struct NoiseBudgetGroup {
  std::string group;
  int64_t runs = 0, rows = 0, negligible_rows = 0, not_negligible_rows = 0, no_sampling_noise_rows = 0,
          undefined_rows = 0;
  Spread ratio, ratio_vmin, rounding_relative, rounding_norm, sampling_norm, escape_steps_rounding,
      escape_steps_sampling;
  std::string verdict, evidence;
  static auto json_keys() {
    using T = NoiseBudgetGroup;
    return std::make_tuple(
        key("group", &T::group), key("runs", &T::runs), key("rows", &T::rows),
        key("negligible_rows", &T::negligible_rows), key("not_negligible_rows", &T::not_negligible_rows),
        key("no_sampling_noise_rows", &T::no_sampling_noise_rows), key("undefined_rows", &T::undefined_rows),
        key("ratio", &T::ratio), key("ratio_vmin", &T::ratio_vmin), key("rounding_relative", &T::rounding_relative),
        key("rounding_norm", &T::rounding_norm), key("sampling_norm", &T::sampling_norm),
        key("escape_steps_rounding", &T::escape_steps_rounding), key("escape_steps_sampling", &T::escape_steps_sampling),
        key("verdict", &T::verdict), key("evidence", &T::evidence));
  }
};

struct NoiseBudget {
  double negligible_ratio = 0;
  std::map<std::string, std::string> definitions;  // the words each column and verdict is defined by
  std::vector<NoiseBudgetRow> rows;
  std::vector<NoiseBudgetGroup> groups;
  static auto json_keys() {
    using T = NoiseBudget;
    return std::make_tuple(key("negligible_ratio", &T::negligible_ratio), key("definitions", &T::definitions),
                           key("rows", &T::rows), key("groups", &T::groups));
  }
};

// ---- the whole file --------------------------------------------------------------------------------------------

struct Definitions {  // the definitions and options the analysis ran with
  std::optional<double> proximity;
  double epsilon = 0;  // NaN: off
  double gamma = 0;
  std::optional<double> residual_factor;
  double delta = 0, escape_drop = 0;
  int64_t loss_window = 0;
  std::vector<double> loss_levels;
  std::string gradient_norm;
  std::optional<std::string> plateau, significant;
  std::string escape_time, km_observation;
  double level = 0;
  int64_t permutations = 0, resamples = 0, seed = 0;
  std::optional<std::string> pairing;
  std::optional<double> power;
  nlohmann::json group_by;  // the config keys (an array), or words saying the default
  std::optional<std::string> baseline;
  int64_t attribution_k = 0;
  bool refine = false;
  static auto json_keys() {
    using T = Definitions;
    return std::make_tuple(
        omitted("proximity", &T::proximity), key("epsilon", &T::epsilon), key("gamma", &T::gamma),
        omitted("residual_factor", &T::residual_factor), key("delta", &T::delta), key("escape_drop", &T::escape_drop),
        key("loss_window", &T::loss_window), key("loss_levels", &T::loss_levels),
        key("gradient_norm", &T::gradient_norm), omitted("plateau", &T::plateau),
        omitted("significant", &T::significant), key("escape_time", &T::escape_time),
        key("km_observation", &T::km_observation), key("level", &T::level), key("permutations", &T::permutations),
        key("resamples", &T::resamples), key("seed", &T::seed), omitted("pairing", &T::pairing),
        omitted("power", &T::power), key("group_by", &T::group_by), key("baseline", &T::baseline),
        key("attribution_k", &T::attribution_k), key("refine", &T::refine));
  }
};

struct Reanalysis {  // from --reanalyze
  std::string of, recomputed, kept;
  static auto json_keys() {
    using T = Reanalysis;
    return std::make_tuple(key("of", &T::of), key("recomputed", &T::recomputed), key("kept", &T::kept));
  }
};

inline constexpr int64_t kAnalysisSchemaVersion = 1;

struct AnalysisResult {
  int64_t schema_version = kAnalysisSchemaVersion;
  std::string study_dir;
  Definitions definitions;
  std::optional<Reanalysis> reanalysis;
  int64_t n_runs = 0, n_skipped = 0;
  std::vector<RunResult> runs;
  std::vector<GroupResult> groups;
  std::vector<Comparison> comparisons;
  std::vector<DivergenceResult> divergence;
  std::vector<AttributionResult> attribution;
  Theory theory;
  std::optional<NoiseBudget> noise_budget;
  static auto json_keys() {
    using T = AnalysisResult;
    return std::make_tuple(key("schema_version", &T::schema_version), key("study_dir", &T::study_dir),
                           key("definitions", &T::definitions), omitted("reanalysis", &T::reanalysis),
                           key("n_runs", &T::n_runs), key("n_skipped", &T::n_skipped), key("runs", &T::runs),
                           key("groups", &T::groups), key("comparisons", &T::comparisons),
                           key("divergence", &T::divergence), key("attribution", &T::attribution),
                           key("theory", &T::theory), omitted("noise_budget", &T::noise_budget));
  }
};

// analysis.json's value read into the types; errors name the key's path ("runs[2].seed: expected an
// integer, got "x"") and a schema_version other than 1.
Result<AnalysisResult> decode_analysis(const nlohmann::json& j);
// The types as analysis.json's value (analysis_json() in study_analysis.h makes it the file's text).
nlohmann::json encode_analysis(const AnalysisResult& a);
// decode_analysis, for an analysis this build has just made: it must also be exactly what the types
// hold — encoded again, the same JSON. Else an error with the first JSON Patch operation from the
// declared form to `j` ({"op":"add","path":"/runs/0/x",...}: a key the types do not declare).
Result<AnalysisResult> decode_analysis_exact(const nlohmann::json& j);

}  // namespace saddlescope::analysis
