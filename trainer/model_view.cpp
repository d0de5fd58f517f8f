#include "saddlescope/trainer/model_view.h"

#include <algorithm>

#include <torch/torch.h>

#include "saddlescope/trainer/perturbation.h"

namespace saddlescope::trainer {

probes::ModelView model_view(std::shared_ptr<Model> model, torch::Tensor probe_x, const RunFacts& run) {
  probes::ModelView view;
  view.params = model->module().parameters();
  view.probe_examples = probe_x.size(0);
  view.probe_loss = [model, probe_x](int64_t batch) { return model->loss(probe_x.narrow(0, 0, batch)); };
  view.probe_rows = [probe_x](int64_t first, int64_t count) { return probe_x.narrow(0, first, count); };
  view.loss_on = [model](const torch::Tensor& rows) { return model->loss(rows); };
  view.batch_size = run.batch_size;
  view.train_examples = run.train_examples;
  if (run.perturbation.kind == "gaussian")
    view.gradient_noise = [p = run.perturbation](const std::vector<torch::Tensor>& grads, uint64_t seed) {
      at::Generator gen = at::detail::createCPUGenerator(seed);
      return gaussian_noise(p, grads, gen);
    };
  auto twin = std::make_shared<std::shared_ptr<Model>>();
  view.float64 = [model, probe_x, twin](int64_t batch) {
    if (!*twin) *twin = model->float64_copy(probe_x.device());
    std::vector<torch::Tensor> params = (*twin)->module().parameters();
    Status copied = probes::copy_parameters(model->module().parameters(), params);
    SADDLESCOPE_CHECK(copied.ok());  // the same architecture by construction
    torch::Tensor x = probe_x.narrow(0, 0, batch).to(torch::kFloat64);
    std::shared_ptr<Model> m = *twin;
    probes::LossFn loss = [m, x] { return m->loss(x); };
    return std::make_pair(params, loss);
  };
  if (!model->unit_layers().empty()) view.layers = [model] { return model->unit_layers(); };
  return view;
}

int64_t probe_examples_needed(const std::vector<probes::ProbeSpec>& specs, int64_t batch_size) {
  int64_t n = 1;
  for (const auto& s : specs) {
    if (s.name == "curvature") n = std::max(n, s.get_int("batch"));
    if (s.name == "noise")
      n = std::max({n, s.get_int("sgd_batch") > 0 ? s.get_int("sgd_batch") : batch_size, s.get_int("k")});
  }
  return n;
}

}  // namespace saddlescope::trainer
