// A run's model with its initial weights, as training and `saddlescope curvature` both need it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/types.h>

#include "saddlescope/base/status.h"
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

}  // namespace saddlescope::trainer
