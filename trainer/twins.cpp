#include "saddlescope/trainer/twins.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/dataset.h"
#include "saddlescope/trainer/model.h"
#include "saddlescope/trainer/snapshot.h"

namespace saddlescope::trainer {
namespace {

std::vector<torch::Tensor> clones(const NamedTensors& named) {
  std::vector<torch::Tensor> out;
  for (const auto& item : named) out.push_back(item.value().clone());
  return out;
}

}  // namespace

Result<std::vector<TwinDifference>> twin_differences(const RunConfig& config, const std::string& run_dir, int64_t step,
                                                     bool grads, const Duplication& duplication) {
  auto run = store::RunDir::open(run_dir);
  if (!run) return run.status();
  auto snap = grads ? run->snapshot_grads(step) : run->snapshot(step);
  if (!snap) return snap.status();
  if (snap->empty())
    return Status::Error(fmt::format("{}: its snapshot at step {} holds no gradients (train with snapshot_grads)",
                                     run_dir, step));
  auto data = load_dataset(config);
  if (!data) return data.status();
  auto model = make_model(config, *data);
  if (!model) return model.status();
  torch::nn::Module& m = (*model)->module();
  torch::NoGradGuard no_grad;
  NamedTensors named = m.named_parameters();
  for (const auto& item : named) {
    auto it = snap->find(item.key());
    std::vector<int64_t> shape(item.value().sizes().begin(), item.value().sizes().end());
    if (it == snap->end() || it->second.shape != shape)
      return Status::Error(fmt::format("{}: the snapshot at step {} is not of this model ({} {})", run_dir, step,
                                       item.key(), it == snap->end() ? "is missing" : "has another shape"));
    if (it->second.dtype != store::Dtype::kFloat32 && it->second.dtype != store::Dtype::kFloat64)
      return Status::Error(fmt::format("{}: the snapshot at step {} holds {} as {}, not float32 or float64", run_dir,
                                       step, item.key(), store::dtype_descr(it->second.dtype)));
    item.value().set_data(to_tensor(it->second));
  }
  if (snap->size() != named.size())
    return Status::Error(fmt::format("{}: the snapshot at step {} has {} arrays, this model {} parameters", run_dir,
                                     step, snap->size(), named.size()));

  // The values, then the same after duplicate(): a copy now holds its original's value.
  const std::vector<torch::Tensor> values = clones(named);
  SADDLESCOPE_RETURN_IF_ERROR((*model)->duplicate(duplication));
  const std::vector<torch::Tensor> duplicated = clones(named);
  // Which elements duplicate() writes: distinct values in (exact up to 2^53 in float64) change there.
  m.to(torch::kFloat64);
  named = m.named_parameters();
  std::vector<torch::Tensor> marks;
  for (const auto& item : named) {
    item.value().copy_(torch::arange(item.value().numel(), torch::kFloat64).reshape(item.value().sizes()));
    marks.push_back(item.value().clone());
  }
  SADDLESCOPE_RETURN_IF_ERROR((*model)->duplicate(duplication));

  std::vector<TwinDifference> out;
  for (size_t i = 0; i < named.size(); ++i) {
    const torch::Tensor copy = named[i].value().ne(marks[i]);  // elements that received a copy
    const int64_t copies = copy.sum().item<int64_t>();
    if (copies == 0) continue;
    const torch::Tensor own = values[i].to(torch::kFloat64).masked_select(copy);            // the copy's value
    const torch::Tensor original = duplicated[i].to(torch::kFloat64).masked_select(copy);  // its original's
    TwinDifference d;
    d.parameter = named[i].key();
    d.copies = copies;
    d.differing = values[i].masked_select(copy).ne(duplicated[i].masked_select(copy)).sum().item<int64_t>();
    d.max_abs = (own - original).abs().max().item<double>();
    d.scale = std::max(own.abs().max().item<double>(), original.abs().max().item<double>());
    out.push_back(d);
  }
  return out;
}

}  // namespace saddlescope::trainer
