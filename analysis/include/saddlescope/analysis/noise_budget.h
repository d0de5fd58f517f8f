// The noise budget (issue 36): a study's noise.csv rows — the arithmetic's perturbation of a step's
// gradient against the sampling noise SGD injects at the run's batch — per group, with the steps each
// would take to grow a displacement along v_min into an escape. Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/store/schema.h"

namespace saddlescope::analysis {

// Rounding is negligible at a probe step when rounding_norm / sampling_norm is below this: the step's
// noise then differs from SGD's own by at most 1% in norm (triangle inequality), by 0.005% when the
// two are uncorrelated (√(1 + 0.01²)). docs/analysis.md, "Noise budget".
inline constexpr double kNegligibleNoiseRatio = 0.01;

// One run's rows and what the escape prediction needs from its other tables.
struct NoiseRun {
  std::string run_id, group;
  std::vector<store::NoiseRow> rows;
  std::map<int64_t, double> lr;          // step -> learning rate (metrics.csv)
  std::map<int64_t, double> probe_loss;  // step -> the curvature probe's loss (curvature.csv)
};

// Steps for a displacement r0 along v_min to grow to the distance R = √(2 f L / |λmin|) at which a
// quadratic saddle's loss has fallen by the fraction f, under gradient descent at rate η:
// ln(R/r0)/ln(1 + η|λmin|) (the theory check's formula, DESIGN.md). NaN unless λmin < 0, η > 0,
// r0 > 0 and L finite; 0 when r0 ≥ R.
double escape_steps(double lambda_min, double eta, double loss, double f, double r0);

// analysis.json's "noise_budget": its definitions, one row per noise row (with lr and the predicted
// escape steps from one step's rounding and from one step's sampling noise along v_min), and per
// group the ratio's range and a verdict ("negligible", "not negligible", "undefined"). `escape_drop`
// is the episodes' f. Groups without noise rows are left out; an empty `runs` gives no groups.
nlohmann::json noise_budget(const std::vector<NoiseRun>& runs, double escape_drop);

}  // namespace saddlescope::analysis
