#include "saddlescope/probes/spectrum.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>

#include "lanczos_process.h"

namespace saddlescope::probes {
namespace {

// Mean and standard error of the mean of xs (standard error 0 for a single value).
std::pair<double, double> mean_and_se(const std::vector<double>& xs) {
  double n = static_cast<double>(xs.size()), mean = 0, ss = 0;
  for (double x : xs) mean += x / n;
  for (double x : xs) ss += (x - mean) * (x - mean);
  return {mean, xs.size() > 1 ? std::sqrt(ss / (n - 1) / n) : 0.0};
}

}  // namespace

Result<TraceEstimate> hutchinson_trace(const HessianOperator& H, const HutchinsonOptions& options,
                                       at::Generator& gen) {
  if (options.samples < 2)
    return Status::Error(fmt::format("hutchinson: samples must be >= 2, got {}", options.samples));
  std::vector<double> quad;
  for (int64_t i = 0; i < options.samples; ++i) {
    at::Tensor z = detail::rademacher(H.n, H.options, gen);
    quad.push_back((z * H.apply(z)).sum(torch::kFloat64).item<double>());
    if (!std::isfinite(quad.back()))
      return Status::Error(fmt::format("hutchinson: non-finite zᵀHz at sample {}", i));
  }
  auto [mean, se] = mean_and_se(quad);
  return TraceEstimate{mean, se, options.samples, options.samples};
}

Result<SpectralDensity> slq_density(const HessianOperator& H, const SlqOptions& options,
                                    at::Generator& gen) {
  if (options.probes < 1)
    return Status::Error(fmt::format("slq: probes must be >= 1, got {}", options.probes));
  if (options.steps < 1)
    return Status::Error(fmt::format("slq: steps must be >= 1, got {}", options.steps));
  if (!(options.zero_tolerance >= 0))
    return Status::Error(fmt::format("slq: zero_tolerance must be >= 0, got {}", options.zero_tolerance));
  const int64_t steps = std::min(options.steps, H.n);
  SpectralDensity density;
  std::vector<size_t> probe_begin;
  std::vector<bool> exact;  // the probe's Krylov space is invariant: its quadrature is the measure itself
  double radius = 0;
  for (int64_t p = 0; p < options.probes; ++p) {
    detail::LanczosProcess lanczos(H, steps);
    SADDLESCOPE_CHECK(lanczos.begin(detail::random_unit_vector(H.n, H.options, gen, true)));
    // Breakdown ends a probe: its Krylov space is invariant and the quadrature already exact.
    do {
      lanczos.step();
      if (!std::isfinite(lanczos.alpha().back()) || !std::isfinite(lanczos.beta().back()))
        return Status::Error(fmt::format("slq: non-finite Hessian-vector product in probe {}", p));
    } while (lanczos.has_pending());
    density.hvp_count += lanczos.steps();
    exact.push_back(lanczos.broke_down() || lanczos.steps() == H.n);
    auto eig = detail::tridiagonal_eigh(lanczos.alpha(), lanczos.beta());
    // Gauss weights: squared first components of the eigenvectors of T (the start vector is q_0).
    at::Tensor first = eig.vectors[0].contiguous();
    const double* s = first.data_ptr<double>();
    probe_begin.push_back(density.nodes.size());
    for (size_t i = 0; i < eig.values.size(); ++i) {
      density.nodes.push_back(eig.values[i]);
      density.weights.push_back(s[i] * s[i] / static_cast<double>(options.probes));
      radius = std::max(radius, std::abs(eig.values[i]));
    }
  }
  probe_begin.push_back(density.nodes.size());
  // Negative mass per probe: F(t) = μ((−∞, t)) of the probe's spectral measure μ. With t between the
  // Gauss nodes θ_j < t ≤ θ_{j+1}, the Chebyshev-Markov-Stieltjes inequalities bracket it:
  // Σ_{i<j} w_i ≤ F(t) ≤ Σ_{i≤j+1} w_i (collapsing to Σ_{i≤j} w_i when the quadrature is exact). We
  // report the bracket and its midpoint, averaged over probes. The plain count Σ_{i≤j} w_i is biased:
  // a node near zero stands for eigenvalues on both sides, and it counts all of them as negative.
  const double t = -options.zero_tolerance * radius;
  std::vector<double> mid, lower, upper;
  for (size_t p = 0; p + 1 < probe_begin.size(); ++p) {
    double below = 0, last_below = 0, first_above = 0;
    for (size_t i = probe_begin[p]; i < probe_begin[p + 1]; ++i) {
      double w = density.weights[i] * static_cast<double>(options.probes);
      if (density.nodes[i] < t) {
        below += w;
        last_below = w;
      } else if (first_above == 0) {
        first_above = w;
      }
    }
    lower.push_back(exact[p] ? below : below - last_below);
    upper.push_back(exact[p] ? below : std::min(1.0, below + first_above));
    mid.push_back(0.5 * (lower.back() + upper.back()));
  }
  std::tie(density.negative_mass, density.negative_mass_se) = mean_and_se(mid);
  density.negative_mass_lower = mean_and_se(lower).first;
  density.negative_mass_upper = mean_and_se(upper).first;
  return density;
}

std::vector<double> smoothed_density(const SpectralDensity& density, const std::vector<double>& grid,
                                     double sigma) {
  SADDLESCOPE_CHECK(sigma > 0);
  const double norm = 1.0 / (sigma * std::sqrt(2 * M_PI));
  std::vector<double> out(grid.size(), 0.0);
  for (size_t g = 0; g < grid.size(); ++g)
    for (size_t i = 0; i < density.nodes.size(); ++i) {
      double z = (grid[g] - density.nodes[i]) / sigma;
      out[g] += density.weights[i] * norm * std::exp(-0.5 * z * z);
    }
  return out;
}

}  // namespace saddlescope::probes
