// Extreme eigenpairs of the Hessian (λmin, λmax and k of each) by Lanczos with full reorthogonalisation.
//
// Stopping rule: every wanted Ritz pair (θ, y) has residual ‖Hy − θy‖ ≤ tol·|λ|max, with the residual
// taken from the Lanczos relation H Q_m = Q_m T_m + β_m q_{m+1} e_mᵀ, i.e. β_m |e_mᵀ s| for the Ritz
// vector y = Q_m s — never the change in θ between iterations, which stalls long before a slowly
// converging λmin is found. |λ|max is the largest |θ|, the spectral radius estimate (|λmax| when λmax
// dominates; it stays meaningful at a saddle whose λmax is tiny). The returned residuals are then
// measured by one extra HVP per returned pair, so they hold whatever rounding did to the recurrence.
//
// What a residual guarantees: for symmetric H, some eigenvalue lies within `residual` of each reported
// θ. It does not guarantee that θ is the extreme one when the start vector was (nearly) orthogonal to
// the extreme eigenvector; min_iterations guards against stopping before it entered the Krylov space.
// Exactly repeated eigenvalues: each Krylov space holds one copy; on breakdown (an invariant subspace)
// the iteration restarts from a fresh random vector orthogonal to the basis, which finds further copies.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include "saddlescope/base/status.h"
#include "saddlescope/probes/hvp.h"

namespace saddlescope::probes {

struct LanczosOptions {
  int64_t k = 1;                 // eigenpairs wanted at each end: the k smallest and the k largest
  double tol = 1e-3;             // stop when each wanted pair's residual ≤ tol·|λ|max
  int64_t max_iterations = 100;  // cap on the Krylov dimension (HVPs of the iteration); clamped to n
  int64_t min_iterations = 20;   // Krylov dimension before the first convergence check; clamped to n
  bool true_residuals = true;    // measure returned residuals by an extra HVP per pair (else: estimates)
};

struct EigenPair {
  double lambda = 0;             // Ritz value, in loss units per parameter unit squared
  double residual = 0;           // ‖Hy − λy‖, measured (true_residuals) or the Lanczos estimate
  double residual_estimate = 0;  // β_m |e_mᵀ s|, from the Lanczos relation
  at::Tensor vector;             // (n) unit Ritz vector y, dtype/device of the operator; sign arbitrary
  at::Tensor hv;                 // (n) H·y from the measured residual; undefined without true_residuals
};

struct LanczosResult {
  std::vector<EigenPair> smallest;  // ascending: smallest[0] is λmin
  std::vector<EigenPair> largest;   // descending: largest[0] is λmax
  int64_t iterations = 0;           // Krylov dimension m reached
  int64_t hvp_count = 0;            // HVPs used, including the true-residual checks
  int64_t restarts = 0;             // breakdowns (invariant subspaces) met and restarted from
  // Every wanted pair meets the tolerance by the residuals reported (measured ones when measured).
  // False when max_iterations ran out first: the residuals then say how far off the pairs are.
  bool converged = false;
  double tolerance = 0;             // the absolute residual bound tol·|λ|max that was applied

  double lambda_min() const { return smallest.front().lambda; }
  double lambda_max() const { return largest.front().lambda; }
};

// The k smallest and k largest eigenpairs of H. The start vector (and any restart vector) is Gaussian,
// drawn in float64 on the CPU from `gen` and then moved to H's dtype/device, so that it is the same on
// every device for the same generator state. Vectors are kept in H's dtype, and α = qᵀHq and β = ‖w‖
// are reduced in it too, by cascaded sums (their rounding is below the HVP's own; a float32 dot or
// norm() is not accurate enough: it degrades the Ritz residuals 100-fold on the autoencoder); the m×m
// tridiagonal eigenproblem and the returned residuals are float64. Memory: up to max_iterations vectors of n
// (only the rows used are touched).
// Returns an error when k < 1, k > H.n, tol ≤ 0 or not finite, max_iterations < k, or an HVP is not
// finite (a diverged model).
// REQUIRES: gen is a CPU generator.
Result<LanczosResult> lanczos_extreme(const HessianOperator& H, const LanczosOptions& options,
                                      at::Generator& gen);

}  // namespace saddlescope::probes
