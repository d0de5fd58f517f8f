#include "saddlescope/probes/lanczos.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <torch/torch.h>

#include "lanczos_process.h"

namespace saddlescope::probes {
namespace detail {
namespace {

double unit_roundoff(const at::TensorOptions& options) {
  if (options.dtype() == at::kDouble) return 0x1p-53;
  if (options.dtype() == at::kFloat) return 0x1p-24;
  return 0x1p-8;  // half, bfloat16: the coarser of the two
}

}  // namespace

double norm_of(const at::Tensor& v) {
  // Sum of squares, then the root: LibTorch's sum is cascaded (pairwise) on the CPU and a tree on CUDA,
  // accurate to the dtype's rounding; its float32 norm() accumulates less carefully, and converting to
  // float64 first costs a copy of n doubles at every Lanczos step.
  return std::sqrt((v * v).sum().item<double>());
}

at::Tensor rademacher(int64_t n, const at::TensorOptions& options, at::Generator& gen) {
  auto cpu64 = torch::TensorOptions().dtype(torch::kFloat64);
  return torch::randint(0, 2, {n}, gen, cpu64).mul_(2).sub_(1).to(options);
}

at::Tensor random_unit_vector(int64_t n, const at::TensorOptions& options, at::Generator& gen,
                              bool rademacher) {
  auto cpu64 = torch::TensorOptions().dtype(torch::kFloat64);
  at::Tensor v = rademacher ? detail::rademacher(n, cpu64, gen) : torch::randn({n}, gen, cpu64);
  return v.div_(v.norm()).to(options);
}

TridiagonalEigen tridiagonal_eigh(const std::vector<double>& alpha, const std::vector<double>& beta) {
  auto m = static_cast<int64_t>(alpha.size());
  SADDLESCOPE_CHECK(m >= 1 && beta.size() + 1 >= alpha.size());
  at::Tensor T = torch::zeros({m, m}, torch::kFloat64);
  double* t = T.data_ptr<double>();
  for (int64_t i = 0; i < m; ++i) {
    t[i * m + i] = alpha[i];
    if (i + 1 < m) t[i * m + i + 1] = t[(i + 1) * m + i] = beta[i];
  }
  auto [values, vectors] = torch::linalg_eigh(T, "L");
  values = values.contiguous();
  const double* v = values.data_ptr<double>();
  return {std::vector<double>(v, v + m), vectors.contiguous()};
}

// Uninitialised: only the rows the process writes are ever read, and an untouched row costs no memory
// traffic (zeroing max_steps × n floats cost as much as a third of a probe's HVPs).
LanczosProcess::LanczosProcess(const HessianOperator& H, int64_t max_steps)
    : H_(H), max_steps_(max_steps), Q_(torch::empty({max_steps, H.n}, H.options)) {
  SADDLESCOPE_CHECK(max_steps >= 1 && max_steps <= H.n);
}

double LanczosProcess::orthogonalise(at::Tensor& w, int64_t rows) const {
  double norm = norm_of(w);
  if (rows == 0) return norm;
  at::Tensor Q = Q_.narrow(0, 0, rows);
  // Classical Gram-Schmidt, repeated when a pass removed most of w (the DGKS criterion: Daniel, Gragg,
  // Kaufman & Stewart 1976) — then a second pass is needed, and enough ("twice is enough", Kahan and
  // Parlett). In a Lanczos step w is already orthogonal to Q up to the lost orthogonality, so the
  // second pass is rare: it halves the reorthogonalisation cost without weakening it.
  for (int pass = 0; pass < 2; ++pass) {
    w.sub_(Q.t().mv(Q.mv(w)));
    double after = norm_of(w);
    bool enough = after >= kDgks * norm;
    norm = after;
    if (enough) break;
  }
  return norm;
}

bool LanczosProcess::begin(const at::Tensor& v) {
  SADDLESCOPE_CHECK(!pending_ && steps() < max_steps_);
  at::Tensor w = v.to(H_.options).clone();
  double before = norm_of(w);
  double after = orthogonalise(w, steps());
  // What survives orthogonalisation at the dtype's rounding level is noise, not a new direction.
  if (!(after > 100 * unit_roundoff(H_.options) * before)) return false;
  if (!beta_.empty()) beta_.back() = 0;  // a new block: T stays block diagonal
  Q_[steps()].copy_(w.div_(after));
  pending_ = true;
  return true;
}

void LanczosProcess::step() {
  SADDLESCOPE_CHECK(pending_);
  int64_t m = steps();
  at::Tensor q = Q_[m];
  at::Tensor w = H_.apply(q).to(H_.options).contiguous();
  double a = (q * w).sum().item<double>();  // a cascaded sum: as accurate as float64 here, 5x faster
  w.sub_(q, a);
  if (m > 0 && beta_.back() != 0) w.sub_(Q_[m - 1], beta_.back());
  double b = orthogonalise(w, m + 1);
  alpha_.push_back(a);
  beta_.push_back(b);
  scale_ = std::max({scale_, std::abs(a), b});
  pending_ = m + 1 < max_steps_ && b > 100 * unit_roundoff(H_.options) * scale_;
  if (pending_) Q_[m + 1].copy_(w.div_(b));
}

at::Tensor LanczosProcess::ritz_vectors(const at::Tensor& s) const {
  return Q_.narrow(0, 0, steps()).t().mm(s.to(H_.options));
}

}  // namespace detail

namespace {

// Indices of the wanted Ritz values (ascending order): the k lowest and the k highest, without repeats.
std::vector<int64_t> wanted(int64_t m, int64_t k) {
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < std::min(k, m); ++i) idx.push_back(i);
  for (int64_t i = std::max(m - k, k); i < m; ++i) idx.push_back(i);
  return idx;
}

double spectral_radius(const std::vector<double>& values) {
  return std::max(std::abs(values.front()), std::abs(values.back()));
}

// β_m |e_mᵀ s_i|: the residual ‖Hy − θ_i y‖ of Ritz pair i by the Lanczos relation.
double residual_estimate(const detail::LanczosProcess& lanczos, const detail::TridiagonalEigen& eig,
                         int64_t i) {
  int64_t m = lanczos.steps();
  return lanczos.beta().back() * std::abs(eig.vectors.data_ptr<double>()[(m - 1) * m + i]);
}

}  // namespace

Result<LanczosResult> lanczos_extreme(const HessianOperator& H, const LanczosOptions& options,
                                      at::Generator& gen) {
  const int64_t k = options.k;
  if (k < 1) return Status::Error(fmt::format("lanczos: k must be >= 1, got {}", k));
  if (k > H.n)
    return Status::Error(fmt::format("lanczos: k = {} exceeds the parameter count {}", k, H.n));
  if (!(options.tol > 0) || !std::isfinite(options.tol))
    return Status::Error(fmt::format("lanczos: tol must be finite and > 0, got {}", options.tol));
  if (options.max_iterations < k)
    return Status::Error(fmt::format("lanczos: max_iterations must be >= k = {}, got {}", k,
                                     options.max_iterations));
  const int64_t max_steps = std::min(options.max_iterations, H.n);
  const int64_t min_steps =
      std::min(std::max(options.min_iterations, std::min(2 * k, H.n)), max_steps);

  LanczosResult result;
  detail::LanczosProcess lanczos(H, max_steps);
  SADDLESCOPE_CHECK(lanczos.begin(detail::random_unit_vector(H.n, H.options, gen, false)));
  detail::TridiagonalEigen eig;
  for (;;) {
    lanczos.step();
    int64_t m = lanczos.steps();
    if (!std::isfinite(lanczos.alpha().back()) || !std::isfinite(lanczos.beta().back()))
      return Status::Error(fmt::format("lanczos: non-finite Hessian-vector product at iteration {}", m));
    bool last = m == max_steps;
    if (m >= min_steps || last) {
      eig = detail::tridiagonal_eigh(lanczos.alpha(), lanczos.beta());
      double bound = options.tol * spectral_radius(eig.values);
      bool done = true;
      for (int64_t i : wanted(m, k)) done = done && residual_estimate(lanczos, eig, i) <= bound;
      if (done || last) break;
    }
    if (lanczos.broke_down()) {
      // An invariant subspace before the check could pass: explore the rest of the space.
      if (!lanczos.begin(detail::random_unit_vector(H.n, H.options, gen, false))) {
        eig = detail::tridiagonal_eigh(lanczos.alpha(), lanczos.beta());
        break;
      }
      ++result.restarts;
    }
  }

  const int64_t m = lanczos.steps();
  result.iterations = m;
  result.hvp_count = m;
  result.tolerance = options.tol * spectral_radius(eig.values);
  std::vector<int64_t> idx = wanted(m, k);
  at::Tensor cols = torch::tensor(idx, torch::kInt64);
  at::Tensor Y = lanczos.ritz_vectors(eig.vectors.index_select(1, cols));  // (n, wanted)
  std::vector<EigenPair> pairs(idx.size());
  result.converged = true;
  for (size_t c = 0; c < idx.size(); ++c) {
    EigenPair& p = pairs[c];
    p.lambda = eig.values[idx[c]];
    p.residual_estimate = residual_estimate(lanczos, eig, idx[c]);
    at::Tensor y = Y.select(1, static_cast<int64_t>(c)).contiguous();
    p.vector = y.div_(y.to(torch::kFloat64).norm().item<double>());
    p.residual = p.residual_estimate;
    if (options.true_residuals) {
      p.hv = H.apply(p.vector);
      at::Tensor r = p.hv.to(torch::kFloat64) - p.lambda * p.vector.to(torch::kFloat64);
      p.residual = r.norm().item<double>();
      ++result.hvp_count;
    }
    result.converged = result.converged && p.residual <= result.tolerance;
  }
  // idx is ascending: its first min(k, m) entries are the smallest, its last k (reversed) the largest.
  auto at_value = [&](int64_t i) {
    return pairs[std::find(idx.begin(), idx.end(), i) - idx.begin()];
  };
  for (int64_t i = 0; i < std::min(k, m); ++i) result.smallest.push_back(at_value(i));
  for (int64_t i = m - 1; i >= std::max<int64_t>(m - k, 0); --i) result.largest.push_back(at_value(i));
  return result;
}

}  // namespace saddlescope::probes
