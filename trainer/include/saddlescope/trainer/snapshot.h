// Parameter and gradient snapshots, one NumPy .npy file per parameter so that numpy.load reads them
// (store/run_dir.h owns the layout and reads them back):
//   <run>/snapshots/step-00000100/encoder.fc1.weight.npy        parameters θ_t (before update t)
//   <run>/snapshots/step-00000100/encoder.fc1.weight.grad.npy   gradient at θ_t (when asked for)
// The last snapshot holds the final parameters θ_steps (no gradient).
#pragma once

#include <cstdint>
#include <string>

#include <torch/types.h>
#include <torch/ordered_dict.h>

#include "saddlescope/base/status.h"
#include "saddlescope/store/npy.h"

namespace saddlescope::trainer {

using NamedTensors = torch::OrderedDict<std::string, torch::Tensor>;

// The array as a CPU tensor of its own element type (float32, float64 or uint8): a copy of its bytes.
torch::Tensor to_tensor(const store::NpyArray& a);

// Writes `t` (float32, float64 or uint8; on any device: copied to the host) to `path` as .npy,
// atomically. Errors name the file: another element type, a failed write.
Status write_tensor(const std::string& path, const torch::Tensor& t);

// Writes every parameter (and its gradient when `with_grads` and defined) of `params` into `dir`
// (store::snapshot_dir), all or nothing (store::AtomicDir). Copies from the device (a
// synchronisation): call at snapshot steps only. Errors name the file.
Status save_snapshot(const std::string& dir, const NamedTensors& params, bool with_grads);

// Copies parameters into `params` (CPU tensors) from `path`: a run directory (its step-0 snapshot,
// i.e. that run's exact initial weights) or a snapshot directory. Every parameter must be there with
// its shape; float32 files may widen into a float64 model, float64 files never narrow into float32.
// A NaN or ±inf element is an error naming the file and the element's flat index.
Status load_parameters(const std::string& path, NamedTensors& params);

}  // namespace saddlescope::trainer
