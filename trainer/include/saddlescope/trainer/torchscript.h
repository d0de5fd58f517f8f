// A user's own PyTorch model (model = torchscript): a module saved with torch.jit.script + torch.jit.save
// whose forward(x) returns the prediction, trained, probed and evaluated like the built-in models.
//
// The module runs as written: the TorchScript graph executor's optimisations (operator fusion, which
// would change the arithmetic from run to run of the profiling executor) are switched off for the
// process. Its parameters are the file's, so every device starts from the same bits; `seed` then
// varies only the data order (data_seed's default) and the perturbations.
//
// Data rows are [x, y] (dataset.h): x is reshaped to (N, data.input_shape...) for forward; y is the
// target of loss mse (x itself when the data has no targets), the class labels of loss cross_entropy
// (prediction (N, C) or (N, ..., C) against labels (N) or (N, ...)), or what the module's own scripted
// loss(prediction, target) takes (loss module).
#pragma once

#include <memory>

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/model.h"

namespace saddlescope::trainer {

// Loads cfg.model_file and checks it on the first two training examples, on the CPU in the run's
// dtype, before anything is written: a forward that fails or returns no tensor, a loss that does not
// fit the prediction and target (labels outside the prediction's classes among them), a module
// without parameters or without the loss method that loss module names. Each error is one line naming
// model_file (or loss) and what was expected.
Result<std::shared_ptr<Model>> load_torchscript(const RunConfig& cfg, const Dataset& data);

}  // namespace saddlescope::trainer
