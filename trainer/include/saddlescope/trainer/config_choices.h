// The closed choices of a run config — model, dtype, device — held as enums, with the names configs,
// manifests and run ids spell them in. Each parse accepts exactly the names its name function prints.
// Torch-free: initial.h turns them into LibTorch's types.
#pragma once

#include <string>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

// The network a run trains (config key model). Not trainer::Model, the built network (model.h).
// kTorchScript: a user's module saved with torch.jit.save (model_file).
enum class ModelKind { kAutoencoder, kPredNet, kLinear, kTorchScript };

// "autoencoder", "prednet", "linear", "torchscript".
const char* model_name(ModelKind m);
// Parses a model's name; on failure the message says what was expected, worded to follow the key's name:
//   "must be one of autoencoder, prednet, linear, torchscript, got 'resnet'"
Result<ModelKind> parse_model(const std::string& text);

// The floating type of a run's model, data and optimiser state (config key dtype). Not store::Dtype
// (the element type of an .npy file) nor torch::Dtype (dtype_of in initial.h converts).
enum class Dtype { kFloat32, kFloat64 };

// "float32", "float64".
const char* dtype_name(Dtype d);
// Parses a dtype's name; on failure: "must be one of float32, float64, got 'float16'".
Result<Dtype> parse_dtype(const std::string& text);

// The device a run trains on (config key device): "cpu", "cuda" (LibTorch's current CUDA device) or
// "cuda:N". "cuda" and "cuda:0" are kept apart: they name different runs.
struct Device {
  enum class Kind { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int index = -1;  // cuda:N: N, 0..999; -1 for cpu and for "cuda"

  bool is_cuda() const { return kind == Kind::kCuda; }
  // "cpu", "cuda", "cuda:1": as configs spell it, and as torch::Device parses it.
  std::string name() const;
};

// Parses cpu, cuda or cuda:N (N of 1 to 3 digits; "cuda:01" is cuda:1). On failure:
//   "must be cpu, cuda or cuda:N, got 'gpu'"
Result<Device> parse_device(const std::string& text);

}  // namespace saddlescope::trainer
