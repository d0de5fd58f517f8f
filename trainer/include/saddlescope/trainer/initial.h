// A run's model with its initial weights, as training and `saddlescope curvature` both need it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/types.h>

#include "saddlescope/base/status.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/model.h"
#include "saddlescope/trainer/perturbation.h"

namespace saddlescope::trainer {

// The model with its initial weights: drawn on the CPU from cfg.seed (or loaded from cfg.init_from),
// then perturbed, then moved to the device — so every device starts from the same bits. `applied`
// gets what the perturbation did at the start (null when nothing).
Result<std::shared_ptr<Model>> initial_model(const RunConfig& cfg, const Dataset& data, Perturber& perturb,
                                             nlohmann::json* applied);

torch::Dtype dtype_of(const RunConfig& cfg);
int64_t parameter_count(Model& model);
// The model's parameters with their names ("encoder.fc1.weight"), as the op observers name ops by them.
std::vector<std::pair<std::string, at::Tensor>> named_parameters(Model& model);

// Whether the op taps observe every ATen op (probes/op_observer.h) rather than the model's named taps:
// always for a TorchScript module, which names no ops; for a built-in model when an ops spec among
// `specs` says aten=true (diverge classifies ops, e.g. a convolution's input gradient, that the named
// taps do not sample).
bool generic_op_taps(const RunConfig& cfg, const std::vector<probes::ProbeSpec>& specs);
// Hands `taps` to the model; generic taps on a built-in model learn its parameters' names, so its ops
// are named "l0.conv_ahat:convolution" as a module's are.
void attach_op_taps(Model& model, const RunConfig& cfg, bool generic, const std::shared_ptr<probes::OpTaps>& taps);

}  // namespace saddlescope::trainer
