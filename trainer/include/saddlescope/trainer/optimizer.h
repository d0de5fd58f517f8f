// The optimiser of a training run behind one interface: DeviceAdam (adam.h) or DeviceSgd (sgd.h).
// Every implementation keeps its whole state on the parameters' device, the learning rate included: a
// step only enqueues kernels and reads nothing back, so it can be captured in a CUDA graph and
// replayed, and a schedule changes the learning rate without a new capture. The training step
// (step.h), stochastic rounding (perturbation.h) and checkpoints see only this interface.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct RunConfig;

// Which optimiser, and its settings (config keys optimizer, lr, momentum).
struct OptimizerOptions {
  std::string kind = "adam";  // adam | sgd
  double lr = 1e-3;           // learning rate
  double momentum = 0;        // sgd only: 0 <= momentum < 1
  bool fused = false;         // adam only: one fused kernel per parameter tensor (kernels = fused)
};

// The optimiser options of a resolved config.
OptimizerOptions optimizer_options(const RunConfig& cfg);

class DeviceOptimizer {
 public:
  virtual ~DeviceOptimizer() = default;

  // One update from every parameter's .grad. REQUIRES: all grads defined.
  virtual void step() = 0;
  // The learning rate from the next step on (an enqueued fill: no synchronisation).
  virtual void set_lr(double lr) = 0;
  virtual double lr() const = 0;
  // "adam" or "sgd": the first part of its tensors' names in a checkpoint ("adam.m.0", "sgd.buf.0").
  virtual const char* name() const = 0;

  // The whole state as named tensors "<prefix>..." for a checkpoint; load() copies such a map back in
  // place (exact). Errors name the missing or mis-shaped entry.
  virtual void save(const std::string& prefix, std::map<std::string, torch::Tensor>* out) const = 0;
  virtual Status load(const std::string& prefix, const std::map<std::string, torch::Tensor>& in) = 0;

  // An optimiser of the same kind, options and current learning rate for other parameters, with fresh
  // state (stochastic rounding's float64 shadows). REQUIRES: params as for the constructor.
  virtual std::unique_ptr<DeviceOptimizer> fresh(std::vector<torch::Tensor> params) const = 0;
};

// load()'s work for every optimiser: copies into each tensor of `mine` (an optimiser's own save())
// the entry of the same name in `in`, in place and exact. Errors name the missing entry, or the one of
// another shape or type.
Status copy_state(const std::map<std::string, torch::Tensor>& mine, const std::map<std::string, torch::Tensor>& in);

// The optimiser `o` names over `params`. REQUIRES: params non-empty, all on one device; o.kind is
// adam or sgd (the config checked it), momentum 0 for adam.
std::unique_ptr<DeviceOptimizer> make_optimizer(std::vector<torch::Tensor> params, const OptimizerOptions& o);

}  // namespace saddlescope::trainer
