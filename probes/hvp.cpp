#include "saddlescope/probes/hvp.h"

#include <cmath>
#include <memory>

#include <fmt/format.h>
#include <torch/torch.h>

#include "saddlescope/gpu/graph.h"

namespace saddlescope::probes {

at::Tensor flatten(const std::vector<at::Tensor>& tensors, const std::vector<at::Tensor>& like) {
  SADDLESCOPE_CHECK(tensors.size() == like.size() && !like.empty());
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].defined()) {
      SADDLESCOPE_CHECK(tensors[i].numel() == like[i].numel());
      parts.push_back(tensors[i].detach().reshape(-1));
    } else {
      parts.push_back(torch::zeros({like[i].numel()}, like[i].options().requires_grad(false)));
    }
  }
  return torch::cat(parts);
}

std::vector<at::Tensor> unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& like) {
  std::vector<at::Tensor> views;
  int64_t offset = 0;
  for (const auto& t : like) {
    views.push_back(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
  SADDLESCOPE_CHECK(offset == flat.numel());
  return views;
}

Result<HessianOperator> make_hvp(const LossFn& loss_fn, const std::vector<at::Tensor>& params, bool graph_on) {
  if (params.empty()) return Status::Error("make_hvp: no parameters");
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& p = params[i];
    if (!p.defined() || !p.requires_grad())
      return Status::Error(fmt::format("make_hvp: parameter {} is undefined or does not require grad", i));
    if (p.scalar_type() != params[0].scalar_type() || p.device() != params[0].device())
      return Status::Error(fmt::format("make_hvp: parameter {} is {} on {}, parameter 0 is {} on {}", i,
                                       c10::toString(p.scalar_type()), p.device().str(),
                                       c10::toString(params[0].scalar_type()), params[0].device().str()));
  }
  // The graph of the gradient is built once and kept: each HVP is then one backward pass through it.
  struct Graph {
    std::vector<at::Tensor> params, grads;
    at::Tensor v, hv;                         // a captured HVP's input and output
    std::shared_ptr<gpu::GraphedWork> work;   // the capture, with graph_on on CUDA
  };
  auto graph = std::make_shared<Graph>();
  graph->params = params;
  torch::AutoGradMode grad_mode(true);
  at::Tensor loss = loss_fn();
  if (!loss.defined() || loss.numel() != 1)
    return Status::Error(fmt::format("make_hvp: the loss must be a scalar, got {} elements",
                                     loss.defined() ? loss.numel() : 0));
  if (!loss.requires_grad())
    return Status::Error("make_hvp: the loss does not depend on the parameters through autograd");
  graph->grads = torch::autograd::grad({loss}, params, /*grad_outputs=*/{}, /*retain_graph=*/true,
                                       /*create_graph=*/true, /*allow_unused=*/true);

  HessianOperator H;
  for (const auto& p : params) H.n += p.numel();
  H.options = torch::TensorOptions().dtype(params[0].scalar_type()).device(params[0].device());
  H.loss = loss.detach().to(torch::kFloat64).item<double>();
  H.gradient = flatten(graph->grads, params);
  // H·v for a flat v of the parameters' dtype and device: one backward pass through the kept graph.
  auto product = [graph, n = H.n, options = H.options](const at::Tensor& v) {
    torch::AutoGradMode hvp_grad_mode(true);
    std::vector<at::Tensor> vs = unflatten(v, graph->params);
    // g·v over the gradients that depend on the parameters (a constant gradient has no curvature).
    at::Tensor gv;
    for (size_t i = 0; i < vs.size(); ++i) {
      const at::Tensor& g = graph->grads[i];
      if (!g.defined() || !g.requires_grad()) continue;
      at::Tensor term = (g * vs[i]).sum();
      gv = gv.defined() ? gv + term : term;
    }
    if (!gv.defined()) return torch::zeros({n}, options);
    auto hv = torch::autograd::grad({gv}, graph->params, {}, /*retain_graph=*/true,
                                    /*create_graph=*/false, /*allow_unused=*/true);
    return flatten(hv, graph->params);
  };
  if (!graph_on || !params[0].is_cuda()) {
    H.apply = [product, n = H.n, options = H.options](const at::Tensor& v) {
      SADDLESCOPE_CHECK(v.numel() == n);
      return product(v.detach().to(options).reshape(-1).contiguous());
    };
    return H;
  }
  // Replays read v from and write H·v to fixed buffers; the caller gets a copy it may keep.
  graph->v = torch::empty({H.n}, H.options);
  graph->hv = torch::empty({H.n}, H.options);
  graph->work = std::make_shared<gpu::GraphedWork>(true, "curvature:graph=false", /*warmup=*/1);
  H.apply = [graph, product, n = H.n](const at::Tensor& v) {
    SADDLESCOPE_CHECK(v.numel() == n);
    graph->v.copy_(v.detach().reshape(-1));
    graph->work->run([&] { graph->hv.copy_(product(graph->v)); });
    return graph->hv.clone();
  };
  return H;
}

Status copy_parameters(const std::vector<at::Tensor>& from, const std::vector<at::Tensor>& to) {
  if (from.size() != to.size())
    return Status::Error(fmt::format("copy_parameters: {} tensors into {}", from.size(), to.size()));
  for (size_t i = 0; i < from.size(); ++i)
    if (!from[i].defined() || !to[i].defined() || from[i].sizes() != to[i].sizes())
      return Status::Error(fmt::format("copy_parameters: tensor {} is undefined or differs in shape", i));
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
  return Status::Ok();
}

double g_dot_v(const at::Tensor& g, const at::Tensor& v) {
  SADDLESCOPE_CHECK(g.numel() == v.numel());
  at::Tensor g64 = g.detach().reshape(-1).to(torch::kFloat64);
  at::Tensor v64 = v.detach().reshape(-1).to(g64.device(), torch::kFloat64);
  double norm = v64.norm().item<double>();
  SADDLESCOPE_CHECK(norm > 0);
  return g64.dot(v64).item<double>() / norm;
}

Result<double> hessian_lipschitz(const at::Tensor& hv0, const at::Tensor& hv1, const at::Tensor& step) {
  SADDLESCOPE_CHECK(hv0.numel() == hv1.numel() && hv0.numel() == step.numel());
  auto as64 = [&](const at::Tensor& t) { return t.detach().reshape(-1).to(hv0.device(), torch::kFloat64); };
  double change = (as64(hv1) - as64(hv0)).norm().item<double>();
  double size = as64(step).norm().item<double>();
  if (!std::isfinite(change) || !std::isfinite(size))
    return Status::Error(fmt::format("hessian_lipschitz: non-finite input (|ΔHv| = {}, |Δθ| = {})",
                                     change, size));
  if (size == 0) return Status::Error("hessian_lipschitz: the parameter step is zero");
  return change / size;
}

}  // namespace saddlescope::probes
