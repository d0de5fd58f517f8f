#include "saddlescope/trainer/model_view.h"

#include <memory>

#include <torch/torch.h>

namespace saddlescope::trainer {

probes::ModelView autoencoder_view(Autoencoder model, const std::vector<int64_t>& hidden,
                                   const torch::Tensor& train_x, int64_t examples, uint64_t seed) {
  examples = std::min(examples, train_x.size(0));
  auto gen = at::detail::createCPUGenerator(seed);
  torch::Tensor rows = torch::randperm(train_x.size(0), gen, torch::kInt64).narrow(0, 0, examples);
  torch::Tensor probe_x = train_x.index_select(0, rows.to(train_x.device()));

  probes::ModelView view;
  view.params = model->parameters();
  view.probe_examples = examples;
  view.probe_loss = [model, probe_x](int64_t batch) mutable {
    torch::Tensor x = probe_x.narrow(0, 0, batch);
    return torch::mse_loss(model->forward(x), x);
  };
  auto twin = std::make_shared<Autoencoder>(nullptr);
  view.float64 = [model, hidden, probe_x, twin](int64_t batch) {
    if (!*twin) {
      *twin = Autoencoder(probe_x.size(1), hidden);
      (*twin)->to(torch::kFloat64);
      (*twin)->to(probe_x.device());
    }
    std::vector<torch::Tensor> params = (*twin)->parameters();
    Status copied = probes::copy_parameters(model->parameters(), params);
    SADDLESCOPE_CHECK(copied.ok());  // the same architecture by construction
    torch::Tensor x = probe_x.narrow(0, 0, batch).to(torch::kFloat64);
    Autoencoder m = *twin;
    probes::LossFn loss = [m, x]() mutable { return torch::mse_loss(m->forward(x), x); };
    return std::make_pair(params, loss);
  };
  view.layers = [model] { return model->unit_layers(); };
  return view;
}

int64_t probe_examples_needed(const std::vector<probes::ProbeSpec>& specs) {
  int64_t n = 1;
  for (const auto& s : specs)
    if (s.name == "curvature") n = std::max(n, s.get_int("batch"));
  return n;
}

}  // namespace saddlescope::trainer
