#include "saddlescope/trainer/teacher.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <torch/torch.h>

namespace saddlescope::trainer {
namespace {

// (rows, cols) with orthonormal columns: the Q of a Gaussian matrix's QR. REQUIRES: rows >= cols.
torch::Tensor orthonormal_columns(int64_t rows, int64_t cols, at::Generator& gen) {
  return std::get<0>(torch::linalg_qr(torch::randn({rows, cols}, gen, torch::kFloat64), "reduced"));
}

}  // namespace

TeacherData make_teacher(const TeacherConfig& o, uint64_t seed) {
  const int64_t n = o.examples, d = o.inputs, c = o.outputs, r = static_cast<int64_t>(o.sigmas.size());
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  auto gen = at::detail::createCPUGenerator(seed);
  torch::Tensor Q = orthonormal_columns(n, d, gen);
  torch::Tensor X = Q * std::sqrt(static_cast<double>(n));
  torch::Tensor U = orthonormal_columns(c, r, gen), V = orthonormal_columns(d, r, gen);
  torch::Tensor M = (U * torch::tensor(o.sigmas, f64)).mm(V.t());
  torch::Tensor Y = X.mm(M.t());
  if (o.noise > 0) {
    torch::Tensor E = torch::randn({n, c}, gen, torch::kFloat64);
    E -= Q.mm(Q.t().mm(E));  // orthogonal to X's columns: Σ_yx stays M
    Y += E * (o.noise * std::sqrt(static_cast<double>(n * c)) / E.norm().item<double>());
  }
  torch::Tensor Xt = torch::randn({n, d}, gen, torch::kFloat64);
  torch::Tensor Yt = Xt.mm(M.t()) + o.noise * torch::randn({n, c}, gen, torch::kFloat64);
  return {torch::cat({X, Y}, 1).to(torch::kFloat32), torch::cat({Xt, Yt}, 1).to(torch::kFloat32), M};
}

double teacher_optimal_loss(const TeacherConfig& o, int64_t hidden) {
  std::vector<double> s = o.sigmas;
  std::sort(s.begin(), s.end(), std::greater<double>());
  double rest = static_cast<double>(o.outputs) * o.noise * o.noise;
  for (size_t i = static_cast<size_t>(std::max<int64_t>(hidden, 0)); i < s.size(); ++i) rest += s[i] * s[i];
  return 0.5 * rest;
}

}  // namespace saddlescope::trainer
