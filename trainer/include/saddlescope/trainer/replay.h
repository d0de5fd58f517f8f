// Replay of one training step for attribution: the forward and backward of optimiser step `step` of
// a config, at the parameters some run had there, with op taps armed — so that the ops of two configs
// (CPU and GPU, fault none and alias-target, ...) can be compared on the same parameters and batch.
#pragma once

#include <cstdint>
#include <string>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct RunConfig;

struct ReplayResult {
  std::string ops_csv;  // <out_dir>/ops.csv
  std::string params;   // the snapshot directory the parameters came from
  int64_t rows = 0;     // rows in ops.csv
  double loss = 0;      // the forward's loss on the step's batch
};

// Builds the model of `cfg` on cfg's device (cfg's execution settings applied to LibTorch's global
// context: one replay per process is what is meant), loads the parameters of snapshot step `step` of
// the run `params_run_dir` (any run of the same architecture), draws exactly the batch a run of cfg
// trains on at optimiser step `step` (and the next one, for fault alias-target; the batch rows in
// shuffle-reduction's order of that step), and runs one forward and backward eagerly through cfg's
// training step, with op taps armed per `ops_spec` (an ops probe spec due at `step`, e.g.
// "ops:at=40,k=16,wgrad=true"). Writes <out_dir>/ops.csv (store::kOps, rows of step `step`) all at
// once: on an error nothing is left there. Gradient noise and the optimiser step do not run (the
// taps record before them in training too). Errors: a spec that is not ops or not due at `step`; no
// snapshot at `step` (naming the steps there are); a snapshot of another architecture (naming the
// parameter); an existing non-empty or unwritable out_dir; those of training's checks.
Result<ReplayResult> replay_step(const RunConfig& cfg, const std::string& params_run_dir, int64_t step,
                                 const std::string& ops_spec, const std::string& out_dir);

}  // namespace saddlescope::trainer
