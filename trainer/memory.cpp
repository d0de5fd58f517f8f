#include "saddlescope/trainer/memory.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "saddlescope/base/memory.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/model.h"

namespace saddlescope::trainer {
namespace {

// Output elements of every op one forward pass over `examples` examples runs: the activations
// autograd keeps for the backward pass (and as many gradients flow back through them).
double activations(const Model& model, int64_t examples) {
  double n = 0;
  for (const auto& op : model.tap_ops(examples)) n += static_cast<double>(op.outputs);
  return n;
}

// Elements per example of encoder.fc1's gathered terms (inputs × outputs) under fc1_kernel =
// index_add (autoencoder.cpp's bag), else 0: they dwarf the activations (784 × 512 per example
// against a few thousand).
double fc1_terms(const RunConfig& cfg, const Model& model) {
  if (cfg.model != ModelKind::kAutoencoder || cfg.fc1_kernel != "index_add") return 0;
  for (const auto& op : model.tap_ops(1))
    if (op.name == "encoder.fc1") return static_cast<double>(op.weights);
  return 0;
}

double numel(const std::vector<int64_t>& shape) {
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n;
}

double tensor_bytes(const torch::Tensor& t) {
  return t.defined() ? static_cast<double>(t.numel()) * static_cast<double>(t.element_size()) : 0.0;
}

}  // namespace

std::string model_size_key(const RunConfig& cfg) {
  auto list = [](const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); };
  if (cfg.model == ModelKind::kLinear) return fmt::format("linear_hidden {}", cfg.linear_hidden);
  if (cfg.model == ModelKind::kPredNet) return "prednet_stacks " + list(cfg.prednet.stack_sizes);
  return "hidden " + list(cfg.hidden);
}

bool is_allocation_failure(const std::string& what) {
  return what.find("can't allocate memory") != std::string::npos ||
         what.find("out of memory") != std::string::npos;
}

Status check_memory(const std::vector<MemoryUse>& uses, uint64_t limit) {
  double total = 0;
  const MemoryUse* largest = nullptr;
  for (const auto& u : uses) {
    total += u.bytes;
    if (!largest || u.bytes > largest->bytes) largest = &u;
  }
  if (!largest || total <= static_cast<double>(limit)) return Status::Ok();
  return Status::Error(fmt::format("{}: about {} for {}; the run needs about {} in all, more than this machine's {}",
                                   largest->key, format_bytes(largest->bytes), largest->what, format_bytes(total),
                                   format_bytes(static_cast<double>(limit))));
}

std::vector<MemoryUse> run_memory(const RunConfig& cfg, const Dataset& data, Model& model) {
  const double bytes = cfg.execution.dtype == Dtype::kFloat64 ? 8 : 4;
  const double example = numel(data.example_shape);
  std::vector<MemoryUse> uses;

  double data_bytes = tensor_bytes(data.train) + (data.eval.is_same(data.train) ? 0 : tensor_bytes(data.eval));
  uses.push_back({"data " + cfg.data, "the training and evaluation data", data_bytes});

  double params = 0;
  for (const auto& p : model.module().parameters()) params += static_cast<double>(p.numel());
  // Parameters, gradients, Adam's first and second moments, and the copy a snapshot writes from.
  uses.push_back({model_size_key(cfg), "the parameters (with gradients, Adam state and a snapshot's copy)",
                  5 * params * bytes});

  uses.push_back({fmt::format("batch_size {}", cfg.batch_size),
                  "a training step (the batch, its activations and their gradients)",
                  (cfg.batch_size * example + 2 * activations(model, cfg.batch_size)) * bytes});
  // The gathered terms are kept for the backward pass, which forms two more of their size.
  const double terms = fc1_terms(cfg, model);
  if (terms > 0)
    uses.push_back({"fc1_kernel index_add", fmt::format("encoder.fc1's gathered terms at batch_size {}", cfg.batch_size),
                    3 * terms * static_cast<double>(cfg.batch_size) * bytes});

  for (const auto& text : cfg.probes) {
    auto spec = probes::parse_probe_spec(text, probe_defaults(cfg.model));
    if (!spec || spec->name != "curvature") continue;
    int64_t batch = spec->get_int("batch");
    if (!data.sequences) batch = std::min<int64_t>(batch, data.train.size(0));  // probe rows come from the data
    const double probe_bytes = spec->get_bool("float64") ? 8 : bytes;
    // A Hessian-vector product keeps the forward graph, the first backward's graph and their gradients.
    uses.push_back({fmt::format("probe curvature batch={}", batch),
                    "a curvature probe (its batch and Hessian-vector-product graphs)",
                    (batch * example + 4 * activations(model, batch)) * probe_bytes});
    if (terms > 0)  // as the activations: the HVP's graphs hold twice the training step's
      uses.push_back({"fc1_kernel index_add", fmt::format("encoder.fc1's gathered terms at probe curvature batch={}", batch),
                      6 * terms * static_cast<double>(batch) * probe_bytes});
  }

  // One forward pass of the evaluation: one chunk (eval_chunk), without gradients; under index_add
  // the gathered terms and their products are alive together.
  const int64_t eval = data.eval.defined() ? data.eval.size(0) : 0;
  const int64_t eval_pass = std::min(eval, eval_chunk(cfg.model));
  uses.push_back({cfg.model == ModelKind::kPredNet ? fmt::format("eval_sequences {}", cfg.prednet.eval_sequences)
                                         : "data " + cfg.data,
                  "the evaluation's forward pass",
                  (activations(model, eval_pass) + 2 * terms * static_cast<double>(eval_pass)) * bytes});
  return uses;
}

}  // namespace saddlescope::trainer
