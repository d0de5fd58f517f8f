// Unit symmetry: hidden units whose weights are exact copies of each other. Deterministic arithmetic
// keeps such copies identical forever (a permutation-symmetric saddle); only nondeterministic rounding
// or explicit noise separates them, so a run stuck there shows up here.
//
// A unit i of a layer is its incoming weights W[i] (a row of a Linear weight, an output channel of a
// conv), its bias b[i], and its outgoing weights — the matching column of the next layer's weight.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "saddlescope/base/status.h"

namespace saddlescope::probes {

struct LayerUnits {
  std::string name;     // e.g. "encoder.fc1"
  at::Tensor incoming;  // (out, in) Linear weight or (out, in, kh, kw) conv weight
  at::Tensor bias;      // (out), or undefined
  // (next_out, out, ...) the next layer's weight, its dim 1 indexing this layer's units, or undefined
  // (last layer). A Linear after a flattened conv takes it reshaped to (next_out, out, H*W).
  at::Tensor outgoing;
};

struct LayerSymmetry {
  std::string name;
  int64_t units = 0;
  std::vector<std::pair<int64_t, int64_t>> identical_pairs;  // (i, j), i < j: bitwise identical units
  // min over i < j of ‖u_i − u_j‖ / max(‖u_i‖, ‖u_j‖), differences taken in float64 (exact for float32
  // weights); 0 when a pair is identical; +infinity with fewer than two units. Pairs involving NaN are
  // skipped.
  double min_relative_distance = std::numeric_limits<double>::infinity();
  std::pair<int64_t, int64_t> closest_pair{-1, -1};  // the pair attaining it, (-1, -1) if none
};

// One LayerSymmetry per layer, in order. O(out² · unit size) per layer; tensors may live on any device.
// Returns an error naming the layer when incoming has fewer than 2 dims, or bias/outgoing do not match
// its number of units.
Result<std::vector<LayerSymmetry>> symmetry_scan(const std::vector<LayerUnits>& layers);

}  // namespace saddlescope::probes
