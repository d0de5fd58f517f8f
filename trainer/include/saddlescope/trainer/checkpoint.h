// Checkpoints: everything a run needs to continue bit for bit from a step, in
// <run>/checkpoint/step-%08d/ (store::checkpoint_dir), written all-or-nothing (store::AtomicDir):
//   state.json      format, version, the step to run next, loop seconds so far, the tensor list
//   <name>.npy      every tensor: "param.<parameter>", the optimiser's "adam.*" (moments, β powers,
//                   learning rate) or "sgd.*" (learning rate; with momentum its buffers and whether
//                   they hold a step), "perturbation.*" (its random stream and stochastic rounding's
//                   optimiser)
// The data position needs no state (batches.h: a function of the examples drawn), nor do the probes
// and op taps (seeded per step), provided no probe holds a measurement across the checkpoint
// (ProbeSet::idle) and the metric window has been written.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <torch/types.h>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct Checkpoint {
  int64_t step = 0;       // the next step to run (steps 0 .. step-1 are done)
  double train_s = 0;     // seconds in the step loop so far (metrics.csv's wall_s continues from it)
  std::map<std::string, torch::Tensor> tensors;  // name -> tensor (any device; saved from the host)
};

// Writes <run_dir>/checkpoint/step-%08d/ atomically. Errors name the file (a full disk included).
Status save_checkpoint(const std::string& run_dir, const Checkpoint& c);

// Reads the checkpoint of `step` (CPU tensors). Errors name the directory and what is wrong: missing,
// another format version, an unreadable tensor.
Result<Checkpoint> load_checkpoint(const std::string& run_dir, int64_t step);

// Removes the checkpoints of `run_dir` other than `keep_step`'s (once the manifest names it).
void remove_other_checkpoints(const std::string& run_dir, int64_t keep_step);

}  // namespace saddlescope::trainer
