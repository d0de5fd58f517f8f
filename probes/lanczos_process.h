// Internal to saddlescope_probes: the Lanczos process with full reorthogonalisation, shared by the
// extreme-eigenpair solver (lanczos.cpp) and stochastic Lanczos quadrature (spectrum.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include "saddlescope/probes/hvp.h"

namespace saddlescope::probes::detail {

// ‖v‖, reduced in v's dtype (see lanczos.cpp for why not float64).
double norm_of(const at::Tensor& v);

// (n) entries ±1 with equal probability, drawn in float64 on the CPU from `gen`, moved to `options`.
at::Tensor rademacher(int64_t n, const at::TensorOptions& options, at::Generator& gen);

// (n) a unit vector drawn in float64 on the CPU from `gen` (Gaussian, or Rademacher ±1/√n), then moved
// to `options`: the same numbers on every device for the same generator state.
at::Tensor random_unit_vector(int64_t n, const at::TensorOptions& options, at::Generator& gen,
                              bool rademacher);

// Eigen-decomposition of the symmetric tridiagonal matrix with diagonal `alpha` (m) and off-diagonal
// `beta` (the first m − 1 entries are used), in float64 by torch::linalg_eigh on the dense m×m matrix
// (m is at most a few hundred). Eigenvalues ascending; vectors (m, m) float64 CPU, one per column.
struct TridiagonalEigen {
  std::vector<double> values;
  at::Tensor vectors;
};
TridiagonalEigen tridiagonal_eigh(const std::vector<double>& alpha, const std::vector<double>& beta);

// H Q_m = Q_m T_m + β_m q_{m+1} e_mᵀ, built one HVP at a time. Q_m is kept in H's dtype and device
// and reorthogonalised fully at every step (classical Gram-Schmidt, a second pass when the first
// removed more than 1 − 1/√2 of the vector's norm).
class LanczosProcess {
 public:
  // REQUIRES: 1 <= max_steps <= H.n.
  LanczosProcess(const HessianOperator& H, int64_t max_steps);

  // Appends `v` orthogonalised against the basis and normalised as the next Lanczos vector (the start,
  // or a restart after breakdown: the coupling to the previous block is then 0). Returns false when v
  // lies in the span of the basis (nothing left to explore).
  // REQUIRES: no pending vector (first call, or broke_down()).
  bool begin(const at::Tensor& v);

  // One HVP: α_m = q_mᵀ H q_m and β_m = ‖w‖ of the orthogonalised remainder w, which becomes q_{m+1}
  // unless max_steps is reached or w vanishes (breakdown). REQUIRES: a pending vector.
  void step();

  bool has_pending() const { return pending_; }
  bool broke_down() const { return !pending_ && steps() < max_steps_; }
  int64_t steps() const { return static_cast<int64_t>(alpha_.size()); }  // m: HVPs so far
  const std::vector<double>& alpha() const { return alpha_; }
  // β_j couples q_j and q_{j+1} in T (0 across a restart); beta().back() is β_m of the relation.
  const std::vector<double>& beta() const { return beta_; }
  // (n, cols) Ritz vectors Q_mᵀ S for the columns S (m, cols) of tridiagonal eigenvectors.
  at::Tensor ritz_vectors(const at::Tensor& s) const;

 private:
  // Removes from w its components along the first `rows` basis vectors; returns ‖w‖ after.
  double orthogonalise(at::Tensor& w, int64_t rows) const;
  static constexpr double kDgks = 0.7071067811865476;  // 1/√2

  const HessianOperator& H_;
  int64_t max_steps_;
  at::Tensor Q_;  // (max_steps, n): rows 0..m-1 the basis, row m the pending vector if any
  std::vector<double> alpha_, beta_;
  bool pending_ = false;
  double scale_ = 0;  // largest |α|, |β| seen: the breakdown threshold's yardstick
};

}  // namespace saddlescope::probes::detail
