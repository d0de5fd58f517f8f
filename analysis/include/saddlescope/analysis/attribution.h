// Attribution: when two execution configs give different results, is it rounding or code? Torch-free:
// it classifies op-tap rows (ops.csv, store/schema.h) of the two configs taken on identical inputs — one
// training step replayed on both from the same parameters and batch (`saddlescope replay`) — or, where a
// replay cannot run here (a CUDA config on a CPU-only host), the rows each run recorded itself.
//
// Per op and phase, over the sampled elements both sides have (joined on call and index):
//   identical  every observed value is the same bits
//   rounding   some differ, and every differing element is within the a-priori rounding bound against
//              the exact value in both configs (reference/: |observed − exact| ≤ γ_n·Σ|terms|)
//   code       some element lies beyond the bound in one config (or in both, with different values):
//              that config computed something other than the op rounded — another algorithm (TF32, a
//              transform convolution) or another operand (a target overwritten before backward)
// The verdict for the pair is the worst over its ops (code > rounding > identical) and names the first op
// with that verdict in the order the step runs them: forward ops, then the loss's gradient (dgrad),
// then weight gradients from the last layer back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "saddlescope/store/schema.h"

namespace saddlescope::analysis {

enum class Verdict { kIdentical, kRounding, kCode };
const char* verdict_name(Verdict v);  // identical | rounding | code

struct OpVerdict {
  std::string op, phase;
  Verdict verdict = Verdict::kIdentical;
  std::string config;          // code: "a", "b" or "both" (whose values lie beyond the bound); "" otherwise
  int64_t compared = 0;        // elements present on both sides
  int64_t differing = 0;       // of those, with different bits
  int64_t beyond_a = 0, beyond_b = 0;  // measured rows beyond the bound, per side
  double max_ratio_a = 0, max_ratio_b = 0;  // largest |error|/bound per side (0 when none measured)
  double max_abs_ulp_a = 0, max_abs_ulp_b = 0;
};

struct OpAttribution {
  Verdict verdict = Verdict::kIdentical;
  std::string op, phase, config;  // the first op with the pair's verdict ("" when identical)
  int64_t step = -1;              // the step of the rows
  std::vector<OpVerdict> ops;     // every op and phase present on both sides, in step order
  int64_t unmatched = 0;          // rows of one side with no counterpart (other k, seed or model)
};

// Classifies rows of one step from configs a and b. Rows of other steps than the smallest step both
// sides have are ignored (recorded taps may hold many steps). Rows whose flag is not within/beyond
// (non-finite values) count as differing when their bits differ, and as code when only one side is
// non-finite.
OpAttribution attribute_ops(const std::vector<store::OpRow>& a, const std::vector<store::OpRow>& b);

}  // namespace saddlescope::analysis
