// What the probes see of an autoencoder being trained (probes/probe.h): its parameters, its loss on a
// fixed probe set, a float64 copy, and its layers.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "saddlescope/probes/probe.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/trainer/autoencoder.h"

namespace saddlescope::trainer {

// The probe set: `examples` rows of `train_x` (on the model's device, in its dtype) drawn once without
// replacement from their own seed — the same examples at every probe step, whatever the training order.
// The loss on its first `batch` rows is the training loss (MSE reconstruction). The float64 copy is
// made on first use and gets the live parameters copied in at every call.
probes::ModelView autoencoder_view(Autoencoder model, const std::vector<int64_t>& hidden,
                                   const torch::Tensor& train_x, int64_t examples, uint64_t seed);

// How many probe examples `specs` need: the largest curvature batch (at least 1).
int64_t probe_examples_needed(const std::vector<probes::ProbeSpec>& specs);

}  // namespace saddlescope::trainer
