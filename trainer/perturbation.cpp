#include "saddlescope/trainer/perturbation.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/trainer/step.h"

namespace saddlescope::trainer {
namespace {

// Flips the lowest mantissa bit of element `i` of the contiguous CPU tensor `t`; returns the value
// before and after as hex floats.
template <class Float, class Bits>
std::pair<std::string, std::string> flip_last_bit(torch::Tensor& t, int64_t i) {
  Float* data = t.data_ptr<Float>();
  std::string before = fmt::format("{:a}", data[i]);
  Bits bits;
  std::memcpy(&bits, data + i, sizeof bits);
  bits ^= 1;
  std::memcpy(data + i, &bits, sizeof bits);
  return {before, fmt::format("{:a}", data[i])};
}

}  // namespace

Perturber::Perturber(const Perturbation& p)
    : p_(p), gen_(at::detail::createCPUGenerator(static_cast<uint64_t>(p.seed))) {}

Perturber::~Perturber() = default;

void Perturber::save(std::map<std::string, torch::Tensor>* out) const {
  (*out)["perturbation.rng"] = gen_.get_state();
  // The shadows equal the parameters between steps.
  if (opt64_) opt64_->save(std::string("perturbation.") + opt64_->name() + "64.", out);
}

Status Perturber::load(const std::map<std::string, torch::Tensor>& in) {
  auto rng = in.find("perturbation.rng");
  if (rng == in.end()) return Status::Error("checkpoint lacks the perturbation's random stream");
  gen_.set_state(rng->second);
  for (const auto& [name, t] : in)
    if (name.rfind("perturbation.", 0) == 0 && name != "perturbation.rng") resumed_opt64_[name] = t;  // applied at the first step
  return Status::Ok();
}

Result<nlohmann::json> Perturber::at_start(NamedTensors& params) {
  if (p_.kind != "bitflip") return nlohmann::json();
  // Default: the output layer's bias, which every prediction uses (an input weight may multiply a pixel
  // that is always 0, so its flipped bit would never matter).
  std::string name = p_.param.empty() ? (params.end() - 1)->key() : p_.param;
  torch::Tensor* t = params.find(name);
  if (!t) return Status::Error("perturbation bitflip: the model has no parameter '" + name + "'");
  if (p_.index >= t->numel())
    return Status::Error(fmt::format("perturbation bitflip: index {} is out of range for {} ({} elements)",
                                     p_.index, name, t->numel()));
  SADDLESCOPE_CHECK(t->device().is_cpu() && t->is_contiguous());
  torch::NoGradGuard no_grad;
  torch::Tensor data = t->detach();
  auto [before, after] = t->scalar_type() == torch::kFloat64 ? flip_last_bit<double, uint64_t>(data, p_.index)
                                                             : flip_last_bit<float, uint32_t>(data, p_.index);
  return nlohmann::json{{"param", name}, {"index", p_.index}, {"before", before}, {"after", after}};
}

torch::Tensor Perturber::batch(const torch::Tensor& x) {
  if (p_.kind != "shuffle-reduction" || x.size(0) < 2) return x;
  torch::Tensor order = torch::randperm(x.size(0), gen_, torch::kInt64).to(x.device());
  return x.index_select(0, order);
}

std::vector<torch::Tensor> gaussian_noise(const Perturbation& p, const std::vector<torch::Tensor>& grads,
                                          at::Generator& gen) {
  std::vector<torch::Tensor> noise;
  if (p.kind != "gaussian") return noise;
  torch::NoGradGuard no_grad;
  torch::Tensor scale;  // per-element standard deviation of the noise, or its global value
  if (!p.elementwise && !p.absolute) {
    int64_t n = 0;
    std::vector<torch::Tensor> squares;
    for (const auto& g : grads) {
      n += g.numel();
      squares.push_back(g.pow(2).sum());
    }
    scale = torch::stack(squares).sum().sqrt() * (p.sigma / std::sqrt(static_cast<double>(n)));
  }
  for (const auto& g : grads) {
    torch::Tensor z = torch::randn(g.sizes(), gen, torch::TensorOptions().dtype(g.scalar_type())).to(g.device());
    noise.push_back(p.elementwise ? z * g.abs() * p.sigma : p.absolute ? z * p.sigma : z * scale);
  }
  return noise;
}

void Perturber::gradients(const std::vector<torch::Tensor>& params) {
  if (p_.kind != "gaussian") return;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) grads.push_back(p.grad());
  std::vector<torch::Tensor> noise = gaussian_noise(p_, grads, gen_);
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < grads.size(); ++i) grads[i].add_(noise[i]);
}

void Perturber::step(DeviceOptimizer& opt, const std::vector<torch::Tensor>& params) {
  if (p_.kind != "stochastic-rounding") {
    opt.step();
    return;
  }
  torch::NoGradGuard no_grad;
  if (!opt64_) {
    for (const auto& p : params) shadow_.push_back(p.detach().to(torch::kFloat64).requires_grad_(true));
    opt64_ = opt.fresh(shadow_);
    if (!resumed_opt64_.empty())
      SADDLESCOPE_CHECK(opt64_->load(std::string("perturbation.") + opt64_->name() + "64.", resumed_opt64_).ok());
    resumed_opt64_.clear();
  }
  if (opt64_->lr() != opt.lr()) opt64_->set_lr(opt.lr());  // follow the schedule
  for (size_t i = 0; i < params.size(); ++i) shadow_[i].mutable_grad() = params[i].grad().to(torch::kFloat64);
  opt64_->step();
  for (size_t i = 0; i < params.size(); ++i) {
    torch::Tensor u = torch::rand(shadow_[i].sizes(), gen_, torch::kFloat64).to(shadow_[i].device());
    params[i].detach().copy_(stochastic_round(shadow_[i].detach(), u));
    shadow_[i].detach().copy_(params[i].detach());  // the next update starts from the rounded value
  }
}

torch::Tensor stochastic_round(const torch::Tensor& x, const torch::Tensor& u) {
  torch::Tensor nearest = x.to(torch::kFloat32);
  torch::Tensor near64 = nearest.to(torch::kFloat64);
  // The other neighbour lies on the far side of x from the nearest float32.
  torch::Tensor toward = torch::where(x > near64, torch::full_like(nearest, INFINITY), torch::full_like(nearest, -INFINITY));
  torch::Tensor other = torch::nextafter(nearest, toward);
  torch::Tensor gap = (other.to(torch::kFloat64) - near64).abs();
  torch::Tensor p_other = torch::where(gap > 0, (x - near64).abs() / gap, torch::zeros_like(x));
  return torch::where(u < p_other, other, nearest);
}

}  // namespace saddlescope::trainer
