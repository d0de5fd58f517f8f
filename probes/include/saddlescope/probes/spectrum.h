// Whole-spectrum estimates of the Hessian: the Hutchinson trace and stochastic Lanczos quadrature (SLQ)
// for the spectral density and the negative mass (the fraction of negative eigenvalues: a saddle's
// index divided by the parameter count).
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Generator.h>

#include "saddlescope/base/status.h"
#include "saddlescope/probes/hvp.h"

namespace saddlescope::probes {

struct HutchinsonOptions {
  int64_t samples = 100;  // Rademacher vectors z, one HVP each; ≥ 2 for a standard error
};

struct TraceEstimate {
  double trace = 0;           // mean of zᵀHz over the samples
  double standard_error = 0;  // sample standard deviation of zᵀHz / sqrt(samples)
  int64_t samples = 0;
  int64_t hvp_count = 0;
};

// Hutchinson's estimate of tr(H). Rademacher vectors are drawn on the CPU from `gen` (device-independent).
// Returns an error when samples < 2 or an HVP is not finite. REQUIRES: gen is a CPU generator.
Result<TraceEstimate> hutchinson_trace(const HessianOperator& H, const HutchinsonOptions& options,
                                       at::Generator& gen);

struct SlqOptions {
  int64_t probes = 10;           // independent Rademacher start vectors
  int64_t steps = 80;            // Lanczos steps (Gauss quadrature nodes) per probe; clamped to n
  double zero_tolerance = 1e-6;  // nodes with |θ| ≤ zero_tolerance·max|θ| count as zero, not negative
};

struct SpectralDensity {
  // The quadrature: nodes θ (Ritz values) of all probes, with weights τ² / probes; weights sum to 1.
  // The density is Σ weight·δ(λ − node); n·weight is the estimated number of eigenvalues at a node.
  std::vector<double> nodes, weights;
  // The fraction of eigenvalues below t = −zero_tolerance·max|θ|. Per probe, the Gauss quadrature
  // brackets it (Chebyshev-Markov-Stieltjes) between the weight of the nodes below t less the last of
  // them and that weight plus the first node above t (exact when the Krylov space is invariant or
  // steps = n); negative_mass is the bracket's midpoint. All three are averages over probes; the
  // bracket shrinks with more steps, the standard error with more probes.
  double negative_mass = 0;
  double negative_mass_se = 0;     // standard error of negative_mass over the probes (0 with one)
  double negative_mass_lower = 0;  // mean lower end of the per-probe brackets
  double negative_mass_upper = 0;  // mean upper end
  int64_t hvp_count = 0;
};

// SLQ (Ubaru, Chen & Saad 2017; Ghorbani, Krishnan & Xiao 2019) with full reorthogonalisation.
// Returns an error when probes < 1, steps < 1, zero_tolerance < 0 or an HVP is not finite.
// REQUIRES: gen is a CPU generator.
Result<SpectralDensity> slq_density(const HessianOperator& H, const SlqOptions& options,
                                    at::Generator& gen);

// The density smoothed by a Gaussian of standard deviation sigma (> 0), evaluated at each grid point:
// a curve that integrates to 1 (for a grid fine and wide enough), for plots.
std::vector<double> smoothed_density(const SpectralDensity& density, const std::vector<double>& grid,
                                     double sigma);

}  // namespace saddlescope::probes
