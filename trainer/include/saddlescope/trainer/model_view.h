// What the probes see of a model being trained (probes/probe.h): its parameters, its training loss on
// a fixed probe set, a float64 copy, and its layers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "saddlescope/probes/probe.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/trainer/model.h"
#include "saddlescope/trainer/perturbation_spec.h"

namespace saddlescope::trainer {

// What the run is, for the probes that measure against it (the noise probe).
struct RunFacts {
  int64_t batch_size = 0;      // the run's batch size
  int64_t train_examples = 0;  // the examples its batches are drawn from (0: generated, unbounded)
  Perturbation perturbation;   // its gradient perturbation (drawn by the probe with a generator of its own)
};

// `probe_x` holds the probe examples (the same at every probe step), on the model's device and in its
// dtype; the loss on its first `batch` rows is the training loss. The float64 copy is made on first
// use and gets the live parameters copied in at every call.
probes::ModelView model_view(std::shared_ptr<Model> model, torch::Tensor probe_x, const RunFacts& run = {});

// How many probe examples `specs` need: the largest curvature batch, the noise probe's batch (the run's
// `batch_size` unless it sets sgd_batch) and its k (at least 1).
int64_t probe_examples_needed(const std::vector<probes::ProbeSpec>& specs, int64_t batch_size = 1);

}  // namespace saddlescope::trainer
