// The comparison of two groups of runs (study_analysis.cpp's "comparisons" of analysis.json): escape
// survival, final loss and time in saddle, tested paired (per-seed differences) where the design is
// paired and independent otherwise, then Holm's correction over the study with the smallest effect each
// test could detect after it. Internal to the analysis module; docs/analysis.md is the contract.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/analysis/stats.h"
#include "saddlescope/analysis/study_analysis.h"

namespace saddlescope::analysis::detail {

// A number for analysis.json: null when not finite (JSON has no NaN or inf).
inline nlohmann::json num(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

// What a comparison needs of one analysed run.
struct Member {
  int64_t seed = 0, data_seed = 0;
  std::optional<double> final_loss, time_in_saddle;
  std::optional<Observation> escape;  // its first saddle episode
};

struct GroupSample {
  std::string name;
  std::vector<Member> members;  // every analysed run of the group
};

// One comparison's JSON (a − b): {"a", "b", "design", "pairs", "escape", "logrank", "final_loss",
// "time_in_saddle"}; p_holm and the detectable effects come with apply_holm.
nlohmann::json compare_groups(const GroupSample& a, const GroupSample& b, const AnalysisOptions& o);

// Holm over every p of every comparison (log-rank, and the final-loss and time-in-saddle tests the
// design calls for; the permutation p and the other design's p are checks, not further tests). Each
// test gets p_holm and "detectable" (the effect it detects with probability o.power at α/m, where m is
// the number of tests in the family); each comparison the smallest p_holm of its own.
void apply_holm(nlohmann::json& comparisons, const AnalysisOptions& o);

}  // namespace saddlescope::analysis::detail
