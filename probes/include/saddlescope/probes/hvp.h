// Hessian-vector products (HVPs) by double backward, on flat parameter vectors.
//
// A curvature estimate evaluates the loss on ONE fixed probe batch: every HVP of one estimate must see the
// same function, or Lanczos sees a different matrix at every step. The operator is built once per estimate
// (one forward and one backward with create_graph), after which each HVP is one more backward pass.
//
// Float64 measurements: a float64 copy of a model is model-specific, so the caller builds it. For a
// torch::nn::Module: construct the same module, `->to(torch::kFloat64)`, copy the float32 parameters in
// with copy_parameters() before each estimate, and pass a closure that evaluates the loss of the float64
// module on a float64 copy of the probe batch, with the float64 module's parameters. Everything the
// probes return then is float64; convert eigenvectors back with `.to(torch::kFloat32)` where needed.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "saddlescope/base/status.h"

namespace saddlescope::probes {

// Evaluates the scalar training loss on a fixed probe batch, as a function of the parameters it was
// built over (it must not detach them). Called once per make_hvp.
using LossFn = std::function<at::Tensor()>;

// The Hessian of a loss at fixed parameter values, as a linear operator on flat vectors.
struct HessianOperator {
  int64_t n = 0;                  // number of parameters (length of every flat vector)
  at::TensorOptions options;      // dtype and device of the vectors `apply` takes and returns
  double loss = 0;                // the loss at the parameters, on the probe batch
  at::Tensor gradient;            // (n) the loss gradient at the parameters, flat, detached
  // (n) -> (n): H v. Each call is one HVP (one backward pass). Thread-compatible, not thread-safe.
  std::function<at::Tensor(const at::Tensor&)> apply;
};

// Concatenation of the tensors, each flattened in row-major order: (sum of numel). Detached copy.
// Undefined tensors count as zeros of the shape of the matching entry of `like` (pass the parameters),
// so that unused parameters' gradients keep their place.
at::Tensor flatten(const std::vector<at::Tensor>& tensors, const std::vector<at::Tensor>& like);

// The inverse of flatten: views into `flat` shaped like each tensor of `like`.
// REQUIRES: flat.numel() == sum of like[i].numel(), flat contiguous.
std::vector<at::Tensor> unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& like);

// The Hessian of loss() with respect to `params` by double backward. Evaluates loss() once, now, with
// grad mode enabled (whatever the caller's mode); the autograd graph is kept by the returned operator
// until it is destroyed. Put dropout/batch-norm modules in eval mode first if the measurement must be
// of a deterministic function.
// Returns an error when params is empty, a parameter does not require grad, the parameters disagree
// in dtype or device, or loss() is not a scalar that depends on the parameters.
// graph: on CUDA, capture one HVP as a CUDA graph (after one eager call) and replay it for the
// others — the same kernels on the same buffers, so the same bits, without launching each of an HVP's
// hundreds of small kernels from the host. Ignored on the CPU. A capture that fails throws, naming
// the probe's graph key.
// REQUIRES: the parameters are not modified while the operator is in use; with graph on CUDA, the
// operator is built and applied inside one gpu::SideStream.
Result<HessianOperator> make_hvp(const LossFn& loss, const std::vector<at::Tensor>& params, bool graph = false);

// Copies parameter values `from` into `to` (e.g. a float32 model into its float64 copy), converting
// dtype and device. Returns an error naming the index when the lists or shapes differ.
Status copy_parameters(const std::vector<at::Tensor>& from, const std::vector<at::Tensor>& to);

// ---- Along the trajectory ----

// g·v / ‖v‖ in float64: the gradient's component along v (e.g. the λmin eigenvector, the escape
// direction). The sign follows v's, which Lanczos leaves arbitrary: compare magnitudes.
// REQUIRES: g and v of equal numel, v nonzero.
double g_dot_v(const at::Tensor& g, const at::Tensor& v);

// Hessian-Lipschitz estimate ‖H(θ1)v − H(θ0)v‖ / ‖θ1 − θ0‖ (float64) from two HVPs with the same v
// and the parameter step θ1 − θ0 (all flat, same numel). Per unit ‖v‖ when v is a unit vector.
// Returns an error when the step is zero or any input is not finite.
Result<double> hessian_lipschitz(const at::Tensor& hv0, const at::Tensor& hv1, const at::Tensor& step);

}  // namespace saddlescope::probes
