// The perturbation grammar of configs, parsed and printed in one place (torch-free; what a
// perturbation does is trainer/perturbation.h):
//   none | shuffle-reduction | gaussian:σ[:element|:absolute] | stochastic-rounding | bitflip[:PARAM[:INDEX]]
#pragma once

#include <cstdint>
#include <string>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

// A controlled perturbation (ablation), with its own seed: does an effect need the hardware, or does
// noise of a given size do the same?
struct Perturbation {
  std::string kind = "none";  // none | shuffle-reduction | gaussian | stochastic-rounding | bitflip
  double sigma = 0;           // gaussian: noise size relative to the gradient norm (or element)
  bool elementwise = false;   // gaussian: relative to each element's magnitude instead
  bool absolute = false;      // gaussian: σ is each element's standard deviation, whatever the gradient
                              // (noise relative to the gradient is zero at an exact critical point)
  std::string param;          // bitflip: parameter name ("" = the last one, the output bias)
  int64_t index = 0;          // bitflip: flat index of the element whose last mantissa bit flips
  int64_t seed = 0;           // the perturbation's own random stream

  // "gaussian:1e-07:element", "gaussian:1e-06:absolute", "bitflip:encoder.fc1.weight:12": the spec as
  // written in configs. parse_perturbation(p.spec()) gives p back (but for the seed).
  std::string spec() const;
};

// Parses a spec as written in configs into a Perturbation with seed 0 (the seed is a key of its own).
// On failure the message says what was expected, worded to follow the key's name:
//   "gaussian sigma must be a number > 0, got 'x'"   "must be none, shuffle-reduction, ..., got 'y'"
Result<Perturbation> parse_perturbation(const std::string& spec);

}  // namespace saddlescope::trainer
