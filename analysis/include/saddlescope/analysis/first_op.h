// The first op at which two runs' bits parted, from their ophash.csv (probes/op_hashes.h). Torch-free.
//
// The steps both runs recorded are walked in order; in the first whose ops differ, the ops are walked in
// execution order to the first one whose outputs differ. Its inputs say where the difference came from:
//   inputs equal  — the op itself computed other bits from the same bits: this is where they parted;
//   inputs differ — the step began apart (parameters or data), or an op the trace leaves out (one that
//                   only moves data) or a step not recorded made the difference: record earlier steps;
//   ops differ    — another op ran at this place (another code path), or one run ran more ops.
// A step's first row may be its batch (phase "input"): when the batches differ, the kind is "batch
// differs" — the data entered the step apart, before any op (another data order, or the data pipeline).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/store/schema.h"

namespace saddlescope::analysis {

struct FirstOp {
  bool found = false;          // false: every step both recorded ran the same ops to the same bits
  int64_t steps_compared = 0;  // steps both runs recorded
  int64_t step = -1, index = -1;
  std::string kind;            // inputs equal | inputs differ | ops differ | batch differs
  std::string op, phase, shape, dtype;  // run A's op there
  std::string op_b;            // ops differ: run B's op there ("" when B ran no more ops)
  // Which of the op's results parted first, when it has several: "the weight gradient" (a
  // convolution's backward: input, weight and bias gradients), else "result 2 of 3"; "" for one.
  std::string result;
  std::string result_shape;    // that result's shape
  std::vector<std::string> also;  // the op's other results that differ too, named the same way
};

// REQUIRES: each run's rows in step order, and in index order within a step (as the probe writes them).
// Errors: no step recorded by both.
Result<FirstOp> first_divergent_op(const std::vector<store::OpHashRow>& a, const std::vector<store::OpHashRow>& b);

// One line: "first divergent op: step 3, encoder.fc1:linear (fwd, 64x256 Float): inputs equal, outputs
// differ" (with ": the input gradient, 4x40x16x16 (also the weight gradient)" for an op of several
// results), "first divergent op: step 0: the step's batch differs, ..." or "no divergent op in the N
// steps both runs recorded".
std::string describe(const FirstOp& f);

}  // namespace saddlescope::analysis
