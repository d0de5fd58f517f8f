// Generated regression data for the linear network (data = "teacher"): input–target pairs whose
// cross-moment Σ_yx = (1/N) Σ_n y_n x_nᵀ has exactly the prescribed singular values σ_i.
//
// Training set (N rows, float64 then stored as float32): X = √N·Q with Q (N, d) orthonormal columns
// (QR of a Gaussian matrix), so Σ_xx = XᵀX/N = I exactly; a teacher M = U diag(σ) Vᵀ (outputs, inputs)
// with Haar-random orthonormal U, V; Y = X Mᵀ + E, where the noise E is orthogonal to X's columns and
// scaled to (1/Nc) ‖E‖² = noise² exactly. Hence Σ_yx = M: the Hessian of the linear network at the
// origin has eigenvalues exactly ±σ_i, and the best rank-h loss is teacher_optimal_loss().
// Test set (N more rows): x ~ N(0, I), y = M x + noise·ε, ε ~ N(0, I), from the same stream.
// Every draw comes from one CPU generator seeded with `seed` (the run's data_seed), in a fixed order.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "saddlescope/trainer/config.h"

namespace saddlescope::trainer {

struct TeacherData {
  torch::Tensor train;  // (N, d + c) float32 rows [x, y]
  torch::Tensor test;   // (N, d + c) float32 rows [x, y]
  torch::Tensor M;      // (c, d) float64, the teacher: Σ_yx of the training rows
};

// REQUIRES: 1 <= sigmas.size() <= min(inputs, outputs); examples >= inputs, and > inputs when
// noise > 0 (ConfigBuilder::resolve checks these and names the keys).
TeacherData make_teacher(const TeacherConfig& teacher, uint64_t seed);

// The minimum training loss (1/2N) Σ ‖W2 W1 x − y‖² over networks of `hidden` units on this data:
// ½ (Σ_{i>h} σ_i² + c·noise²), σ sorted descending.
double teacher_optimal_loss(const TeacherConfig& teacher, int64_t hidden);

}  // namespace saddlescope::trainer
