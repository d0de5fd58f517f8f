// report.json as types, declared once (store/json_object.h): model.cpp builds a ReportModel, report.json
// is its encoding, and the two renderings (html.cpp, markdown.cpp) read its members. The analysis's own
// numbers are the analysis's types (analysis_result.h), copied as they are.
//
// Sections not typed yet (setup, loss, saddles, rounding, divergence, symmetry, invariance, noise
// budget) are JSON here, built and read by key as before; each becomes a struct in turn.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/analysis/analysis_result.h"
#include "saddlescope/store/json_object.h"

namespace saddlescope::reports {

using store::key;

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
  nlohmann::json setup, loss, saddles, rounding, divergence, symmetry, noise_budget, invariance;
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
