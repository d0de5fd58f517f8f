// Trajectory divergence between two runs: where their parameters first differ, and how far apart
// they drift. Reads only the run store (snapshots/*.npy and metrics.csv); no torch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/store/schema.h"

namespace saddlescope::store {
class RunDir;
}

namespace saddlescope::analysis {

// One snapshot step present in both runs.
struct SnapshotDivergence {
  int64_t step = 0;
  double rel_l2 = 0;          // ‖θa − θb‖ / ‖θa‖ over all parameters, accumulated in float64
  double max_ulp_distance = 0;  // largest element distance in ULPs (ulp_distance below) of the coarser
                                // format (float32 when either run is float32: a float64 value is
                                // first rounded to float32)
  int64_t differing = 0;      // elements whose values differ (bitwise, when both have one format)
  int64_t elements = 0;       // elements compared
  std::string first_param;    // first parameter, in name order, with a difference ("" when none)
  double loss_a = 0, loss_b = 0;  // metrics.csv loss at this step (NaN for the final snapshot)
};

struct Divergence {
  std::vector<SnapshotDivergence> snapshots;     // common snapshot steps, ascending
  std::optional<int64_t> first_param_step;       // first common snapshot step with any difference
  std::optional<int64_t> first_loss_step;        // first step whose loss differs bitwise
  int64_t loss_steps = 0;                        // steps whose losses were compared
  bool same_format = true;                       // both runs store parameters in one format
};

// Compares runs `a` and `b` over their complete snapshots and metrics. Errors name the run and file:
// no snapshots, no common snapshot step, different parameter names or shapes, unreadable files.
Result<Divergence> diverge(const store::RunDir& a, const store::RunDir& b);
// The same with both runs' metrics.csv rows already read (the study analysis reads each run once).
Result<Divergence> diverge(const store::RunDir& a, const std::vector<store::MetricsRow>& metrics_a,
                           const store::RunDir& b, const std::vector<store::MetricsRow>& metrics_b);
// The same for run directories by path (RunDir::open's errors: not a run, bad manifest).
Result<Divergence> diverge(const std::string& a, const std::string& b);

// Distance between two floats in units in the last place (an "ULP distance"; not ops.csv's
// ulp_error, which measures an error in ULPs of the exact value): the number of representable values between
// them (0 when equal, including +0 vs -0; infinite when either is NaN).
double ulp_distance(float x, float y);
double ulp_distance(double x, double y);

// The one-paragraph summary printed by `saddlescope diverge`.
std::string summarize(const Divergence& d, const std::string& a, const std::string& b);

// The per-snapshot table as CSV (header: step,rel_l2,max_ulp_distance,differing,elements,first_param,loss_a,
// loss_b,loss_diff), numbers in round-trip form.
std::string to_csv(const Divergence& d);

}  // namespace saddlescope::analysis
