// report.json as types, declared once (store/json_object.h): model.cpp builds a ReportModel, report.json
// is its encoding, and the two renderings (html.cpp, markdown.cpp) read its members. The analysis's own
// numbers are the analysis's types (analysis_result.h), copied as they are.
//
// The invariance section stays the JSON rows `saddlescope invariance --json` writes (invariance.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/analysis/analysis_result.h"
#include "saddlescope/analysis/op_summary.h"
#include "saddlescope/store/json_object.h"

namespace saddlescope::reports {

using store::key;
using store::omitted;

// What a test could have seen: the analysis's detectable effect after Holm (`after_holm`), or for an
// analysis written before it Mann–Whitney's at α from the group sizes.
struct TestPower {
  int64_t n_a = 0, n_b = 0;
  std::optional<int64_t> pairs;  // a paired design's pairs
  double alpha = 0;
  bool after_holm = false;
  double power = 0, min_p = 0;
  std::optional<int64_t> n_needed;  // when no outcome could reach α
  double detectable_cliffs_delta = 0, detectable_shift_sd = 0;  // NaN: none could be significant
  std::string sd_unit;
  double detectable_shift = 0;  // in the outcome's own units (NaN: not known)
  static auto json_keys() {
    using T = TestPower;
    return std::make_tuple(key("n_a", &T::n_a), key("n_b", &T::n_b), key("pairs", &T::pairs), key("alpha", &T::alpha),
                           key("after_holm", &T::after_holm), key("power", &T::power), key("min_p", &T::min_p),
                           key("n_needed", &T::n_needed), key("detectable_cliffs_delta", &T::detectable_cliffs_delta),
                           key("detectable_shift_sd", &T::detectable_shift_sd), key("sd_unit", &T::sd_unit),
                           key("detectable_shift", &T::detectable_shift));
  }
};

struct ComparisonPower {
  TestPower final_loss, time_in_saddle;
  static auto json_keys() {
    return std::make_tuple(key("final_loss", &ComparisonPower::final_loss),
                           key("time_in_saddle", &ComparisonPower::time_in_saddle));
  }
};

// Each outcome in words: "differs", "no difference found", "too few runs to tell", "not testable"; and
// the cause of the first difference between paired runs: the attribution's verdict, or "not examined".
struct Findings {
  std::string final_loss, time_in_saddle, escape, cause;
  static auto json_keys() {
    using T = Findings;
    return std::make_tuple(key("final_loss", &T::final_loss), key("time_in_saddle", &T::time_in_saddle),
                           key("escape", &T::escape), key("cause", &T::cause));
  }
};

// The final-loss difference the tables show: the paired mean with its t interval in a paired design,
// else the difference in medians with its bootstrap interval.
struct Difference {
  std::string kind;  // "paired mean" | "median"
  double estimate = 0, low = 0, high = 0;
  static auto json_keys() {
    using T = Difference;
    return std::make_tuple(key("kind", &T::kind), key("estimate", &T::estimate), key("low", &T::low),
                           key("high", &T::high));
  }
};

struct ComparisonModel {
  std::string a, b;
  double p_holm = 0;
  analysis::EscapeCounts escape;
  analysis::LogRank logrank;
  analysis::SampleTest final_loss, time_in_saddle;
  Findings findings;
  Difference difference;
  ComparisonPower power;
  std::optional<analysis::AttributionResult> attribution;  // without its ops
  std::string sentence;
  static auto json_keys() {
    using T = ComparisonModel;
    return std::make_tuple(key("a", &T::a), key("b", &T::b), key("p_holm", &T::p_holm), key("escape", &T::escape),
                           key("logrank", &T::logrank), key("final_loss", &T::final_loss),
                           key("time_in_saddle", &T::time_in_saddle), key("findings", &T::findings),
                           key("difference", &T::difference), key("power", &T::power),
                           key("attribution", &T::attribution), key("sentence", &T::sentence));
  }
};

struct VerdictCounts {
  int64_t comparisons = 0, differ = 0, too_few_runs = 0;
  std::map<std::string, int64_t> causes;
  static auto json_keys() {
    using T = VerdictCounts;
    return std::make_tuple(key("comparisons", &T::comparisons), key("differ", &T::differ),
                           key("too_few_runs", &T::too_few_runs), key("causes", &T::causes));
  }
};

struct VerdictModel {
  std::string headline;
  std::vector<std::string> sentences;
  std::vector<ComparisonModel> comparisons;
  VerdictCounts counts;
  static auto json_keys() {
    using T = VerdictModel;
    return std::make_tuple(key("headline", &T::headline), key("sentences", &T::sentences),
                           key("comparisons", &T::comparisons), key("counts", &T::counts));
  }
};

// ---- 2. Setup ------------------------------------------------------------------------------------------

struct SetupGroup {  // a config (group) and its values of the study's axes
  std::string name;
  std::map<std::string, nlohmann::json> config;
  static auto json_keys() { return std::make_tuple(key("name", &SetupGroup::name), key("config", &SetupGroup::config)); }
};

struct SetupRun {  // a run the analysis lists
  std::string run_id;
  std::optional<std::string> group;
  int64_t seed = 0;
  std::string status;
  bool analysed = false;
  std::optional<int64_t> steps_completed;
  std::string note;  // why it is not analysed, or what did not read
  static auto json_keys() {
    using T = SetupRun;
    return std::make_tuple(key("run_id", &T::run_id), key("group", &T::group), key("seed", &T::seed),
                           key("status", &T::status), key("analysed", &T::analysed),
                           key("steps_completed", &T::steps_completed), key("note", &T::note));
  }
};

struct NotRun {  // a planned run the analysis does not have, or a run directory newer than it
  std::string run_id, label;
  std::optional<std::string> group;
  std::optional<int64_t> seed;
  std::string state, note;
  static auto json_keys() {
    using T = NotRun;
    return std::make_tuple(key("run_id", &T::run_id), key("label", &T::label), key("group", &T::group),
                           key("seed", &T::seed), key("state", &T::state), key("note", &T::note));
  }
};

struct Machine {  // one fingerprint (threads and environment left out) and the runs on it
  std::string summary;
  nlohmann::json fingerprint;
  std::map<std::string, std::string> flat;  // its leaves, "cpu.model" -> text
  std::vector<std::optional<std::string>> groups;
  int64_t runs = 0;
  static auto json_keys() {
    using T = Machine;
    return std::make_tuple(key("summary", &T::summary), key("fingerprint", &T::fingerprint), key("flat", &T::flat),
                           key("groups", &T::groups), key("runs", &T::runs));
  }
};

struct SetupModel {
  std::vector<SetupGroup> groups;
  std::vector<std::string> axes;                  // config keys whose value differs between groups
  std::map<std::string, nlohmann::json> common;   // config keys with one value in every group
  std::vector<SetupRun> runs;
  std::vector<NotRun> not_run;
  std::vector<Machine> machines;
  analysis::Definitions definitions;
  static auto json_keys() {
    using T = SetupModel;
    return std::make_tuple(key("groups", &T::groups), key("axes", &T::axes), key("common", &T::common),
                           key("runs", &T::runs), key("not_run", &T::not_run), key("machines", &T::machines),
                           key("definitions", &T::definitions));
  }
};

// ---- 3. Loss, 4. Saddles --------------------------------------------------------------------------------

struct LossGroup {
  std::string name;
  int64_t n_runs = 0;
  analysis::Summary final_loss;
  static auto json_keys() {
    return std::make_tuple(key("name", &LossGroup::name), key("n_runs", &LossGroup::n_runs),
                           key("final_loss", &LossGroup::final_loss));
  }
};

struct NotLearning {  // a run whose held-out error is not below the trivial baseline's
  std::string run_id;
  std::optional<std::string> group;
  int64_t seed = 0;
  double eval_mse = 0, baseline_mse = 0;
  static auto json_keys() {
    using T = NotLearning;
    return std::make_tuple(key("run_id", &T::run_id), key("group", &T::group), key("seed", &T::seed),
                           key("eval_mse", &T::eval_mse), key("baseline_mse", &T::baseline_mse));
  }
};

struct LossModel {
  std::vector<LossGroup> groups;
  std::vector<NotLearning> not_learning;
  int64_t loss_window = 0;
  static auto json_keys() {
    return std::make_tuple(key("groups", &LossModel::groups), key("not_learning", &LossModel::not_learning),
                           key("loss_window", &LossModel::loss_window));
  }
};

struct SaddleRun {  // an analysed run's curvature summary and episodes
  std::string run_id;
  std::optional<std::string> group;
  int64_t seed = 0;
  std::optional<std::vector<analysis::EpisodeResult>> episodes;  // empty: no curvature probe
  std::optional<std::string> episodes_note;
  std::optional<int64_t> probe_count, probe_interval;
  std::optional<double> gradient_scale;
  std::optional<int64_t> time_in_saddle;
  std::optional<std::vector<analysis::LevelCrossing>> level_crossings;
  static auto json_keys() {
    using T = SaddleRun;
    return std::make_tuple(key("run_id", &T::run_id), key("group", &T::group), key("seed", &T::seed),
                           key("episodes", &T::episodes), key("episodes_note", &T::episodes_note),
                           omitted("probe_count", &T::probe_count), omitted("probe_interval", &T::probe_interval),
                           omitted("gradient_scale", &T::gradient_scale), omitted("time_in_saddle", &T::time_in_saddle),
                           omitted("level_crossings", &T::level_crossings));
  }
};

struct SaddlesModel {
  std::vector<analysis::GroupResult> groups;
  std::vector<SaddleRun> runs;
  int64_t n_episodes = 0;
  analysis::Theory theory;
  static auto json_keys() {
    using T = SaddlesModel;
    return std::make_tuple(key("groups", &T::groups), key("runs", &T::runs), key("n_episodes", &T::n_episodes),
                           key("theory", &T::theory));
  }
};

// ---- 5. Rounding, 6. Divergence, 7. Symmetry, 9. Noise budget -----------------------------------------------

struct RoundingGroup {
  std::string name;
  int64_t runs_with_taps = 0;
  std::vector<analysis::OpSummary> ops;
  static auto json_keys() {
    return std::make_tuple(key("name", &RoundingGroup::name), key("runs_with_taps", &RoundingGroup::runs_with_taps),
                           key("ops", &RoundingGroup::ops));
  }
};

struct RoundingModel {
  std::vector<RoundingGroup> groups;
  std::vector<std::string> zero_term_callouts;  // nonzero results of all-zero terms: not rounding
  static auto json_keys() {
    return std::make_tuple(key("groups", &RoundingModel::groups),
                           key("zero_term_callouts", &RoundingModel::zero_term_callouts));
  }
};

struct DivergenceModel {
  std::vector<analysis::DivergenceResult> pairs;
  std::vector<analysis::AttributionResult> attribution;
  static auto json_keys() {
    return std::make_tuple(key("pairs", &DivergenceModel::pairs), key("attribution", &DivergenceModel::attribution));
  }
};

struct SymmetryLayer {  // a layer's identical unit pairs over a run's symmetry probes
  std::string layer;
  int64_t units = 0, identical_pairs_start = 0, first_step = 0;
  std::optional<int64_t> broke_at_step;  // the first probe step with fewer identical pairs than at the start
  int64_t identical_pairs_end = 0, last_step = 0;
  double min_relative_distance_end = 0;
  static auto json_keys() {
    using T = SymmetryLayer;
    return std::make_tuple(key("layer", &T::layer), key("units", &T::units),
                           key("identical_pairs_start", &T::identical_pairs_start), key("first_step", &T::first_step),
                           key("broke_at_step", &T::broke_at_step), key("identical_pairs_end", &T::identical_pairs_end),
                           key("last_step", &T::last_step), key("min_relative_distance_end", &T::min_relative_distance_end));
  }
};

struct SymmetryRun {
  std::string run_id;
  std::optional<std::string> group;
  int64_t seed = 0;
  std::vector<SymmetryLayer> layers;
  static auto json_keys() {
    using T = SymmetryRun;
    return std::make_tuple(key("run_id", &T::run_id), key("group", &T::group), key("seed", &T::seed),
                           key("layers", &T::layers));
  }
};

struct SymmetryModel {
  std::vector<SymmetryRun> runs;
  static auto json_keys() { return std::make_tuple(key("runs", &SymmetryModel::runs)); }
};

struct NoiseModel {  // the analysis's noise budget (no groups in analyses before it)
  double negligible_ratio = 0;
  std::vector<analysis::NoiseBudgetGroup> groups;
  static auto json_keys() {
    return std::make_tuple(key("negligible_ratio", &NoiseModel::negligible_ratio), key("groups", &NoiseModel::groups));
  }
};

struct FigureEntry {  // a figure as the renderings link it
  std::string name, section;
  int64_t number = 0;
  std::string title, caption;
  std::vector<std::string> files;  // <name>.svg, .png, .gp, then its data files
  static auto json_keys() {
    using T = FigureEntry;
    return std::make_tuple(key("name", &T::name), key("section", &T::section), key("number", &T::number),
                           key("title", &T::title), key("caption", &T::caption), key("files", &T::files));
  }
};

struct ReportModel {
  int64_t schema_version = 1;
  std::string study, study_dir, generated;
  double alpha = 0;
  std::vector<std::string> warnings;
  int64_t n_runs = 0, n_skipped = 0;
  VerdictModel verdict;
  SetupModel setup;
  LossModel loss;
  SaddlesModel saddles;
  RoundingModel rounding;
  DivergenceModel divergence;
  SymmetryModel symmetry;
  NoiseModel noise_budget;
  nlohmann::json invariance;  // {"rows": [...]}: invariance.h's rows as `saddlescope invariance --json` writes them
  std::vector<FigureEntry> figures;
  static auto json_keys() {
    using T = ReportModel;
    return std::make_tuple(key("schema_version", &T::schema_version), key("study", &T::study),
                           key("study_dir", &T::study_dir), key("generated", &T::generated), key("alpha", &T::alpha),
                           key("warnings", &T::warnings), key("n_runs", &T::n_runs), key("n_skipped", &T::n_skipped),
                           key("verdict", &T::verdict), key("setup", &T::setup), key("loss", &T::loss),
                           key("saddles", &T::saddles), key("rounding", &T::rounding),
                           key("divergence", &T::divergence), key("symmetry", &T::symmetry),
                           key("noise_budget", &T::noise_budget), key("invariance", &T::invariance),
                           key("figures", &T::figures));
  }
};

}  // namespace saddlescope::reports
