// What a study will cost before it runs (`study plan`): each run's time from finished runs of the same
// config (config_key: the config without its seeds) in the study directory, or else from a short run
// of it measured now; and how long the whole study takes on a host when the runner packs the runs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "saddlescope/study/schedule.h"
#include "saddlescope/study/study.h"

namespace saddlescope::study {

// Steps timed by a measuring run: enough to pass the first step's one-off costs (allocation, a CUDA
// graph's capture) and to time a probe evaluation at step 0.
inline constexpr int64_t kMeasureSteps = 40;

struct Estimate {
  double seconds = 0;  // 0: unknown
  std::string source;  // "3 finished runs of its config", "measured 40 steps", "unknown: ..."
};

class Estimator {
 public:
  // `self` is the saddlescope executable (for measuring runs), `study_file` the file they expand.
  Estimator(std::string out, std::string self, std::string study_file);
  // Time of `run`: the training steps, probe evaluations (counted from its probe specs), checkpoints
  // and the final evaluation, each at the rate a reference run of its config showed. Measures a short
  // run (`study exec --measure-steps`, in a temporary directory) when `measure` and no reference exists.
  Estimate estimate(const StudyRun& run, bool measure);

 private:
  struct Rates {
    double step_s = 0, probe_eval_s = 0, checkpoint_step_s = 0, eval_s = 0;
    int runs = 0;
  };
  std::string out_, self_, file_;
  bool scanned_ = false;
  std::map<std::string, Rates> by_key_;  // config_key -> rates of finished runs in out_
  std::map<std::string, Rates> measured_;
};

// The wall time of running `runs` (with their estimates; unknown ones count as the mean of the known)
// on `host` in the runner's order and packing: a list-scheduling simulation of run_local.
double simulate(const Study& study, const std::vector<Estimate>& estimates, const HostSlots& host);

}  // namespace saddlescope::study
