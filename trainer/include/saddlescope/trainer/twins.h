// Twins: are the units that init duplicate made copies of each other still copies, parameter by
// parameter? The symmetry probe says *that* a pair broke; this says *through which op*. At the first
// step where a pair breaks, its copies' gradients differ exactly in the parameters whose gradient
// the breaking op computes (a GEMM's or a convolution's weight gradient, its input gradient upstream).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct RunConfig;
struct Duplication;

struct TwinDifference {
  std::string parameter;  // a named parameter of the model holding copies
  int64_t copies = 0;     // its elements that duplicate() writes: copies of another element
  int64_t differing = 0;  // of those, the ones not bitwise equal to their original
  double max_abs = 0;     // max |copy − original| over the copies
  double scale = 0;       // max |value| over the copies and their originals (0: all zero)
};

// Loads the snapshot at `step` of the run `run_dir` (its gradients when `grads`) into cfg's model
// (on the CPU) and compares, for every parameter holding copies under `duplication`, each copy with
// its original — the elements Model::duplicate would overwrite, found by duplicating distinct values.
// Parameters without copies are left out. Errors name the run: no such snapshot, no gradients in it
// (train with snapshot_grads), a snapshot of another architecture, a layer or unit the model lacks.
Result<std::vector<TwinDifference>> twin_differences(const RunConfig& cfg, const std::string& run_dir, int64_t step,
                                                     bool grads, const Duplication& duplication);

}  // namespace saddlescope::trainer
