// The CSV files of a run directory: one row struct and one Table each, declared here and nowhere
// else. Writers (the trainer, the probes, the op taps) and readers (RunDir, the catalogue, the
// analysis) both go through these declarations. docs/run-store.md documents every column; change a
// table's columns only together with its version.
//
// Names say what was measured on what: metrics.csv's batch_grad_norm is the mini-batch gradient the
// optimiser stepped with; curvature.csv's probe_loss and probe_grad_norm are measured on the fixed
// probe batch the Hessian is taken on.
#pragma once

#include <cstdint>
#include <string>

#include "saddlescope/store/table.h"

namespace saddlescope::store {

// metrics.csv: one row per optimiser step.
struct MetricsRow {
  int64_t step = 0;
  double loss = 0;             // training loss on the step's mini-batch, before the update
  double batch_grad_norm = 0;  // ‖g‖₂ of that mini-batch's gradient (after any gradient perturbation)
  double lr = 0;               // learning rate of the update
  double wall_s = 0;           // seconds since the loop started (since the run started, over resumes)
};
extern const Table<MetricsRow> kMetrics;

// curvature.csv: one row per curvature probe step (probes/probe.h).
struct CurvatureRow {
  int64_t step = 0;
  double probe_loss = 0, probe_grad_norm = 0;   // on the probe batch, at θ_step
  double lambda_min = 0, lambda_min_residual = 0;  // smallest Hessian eigenvalue, ‖Hv − λv‖
  double lambda_max = 0, lambda_max_residual = 0;  // largest
  double tolerance = 0;                          // Lanczos stopping tolerance (relative)
  bool converged = false;
  int64_t iterations = 0, restarts = 0;
  double trace = 0, trace_se = 0;                // Hutchinson estimate and standard error (NaN: off)
  double negative_mass = 0, negative_mass_lower = 0, negative_mass_upper = 0;  // SLQ (NaN: off)
  double g_dot_vmin = 0;                         // g·v_min/‖v_min‖ on the probe batch (sign arbitrary)
  double hessian_lipschitz = 0;                  // ‖H(θ+)v − H(θ)v‖ / ‖θ+ − θ‖ (NaN: no estimate)
  int64_t hvp_count = 0;
  bool float64 = false;                          // measured on a float64 copy of the model
  double probe_s = 0;                            // seconds the measurement took
};
extern const Table<CurvatureRow> kCurvature;

// curvature_eigen.csv: every Ritz pair the Lanczos probe returned at a step.
struct CurvatureEigenRow {
  int64_t step = 0;
  std::string end;  // min | max: which end of the spectrum
  int64_t index = 0;  // 0 = the extreme one
  double lambda = 0, residual = 0;
};
extern const Table<CurvatureEigenRow> kCurvatureEigen;

// symmetry.csv: per probe step and layer, how close the layer's units are to duplicates.
struct SymmetryRow {
  int64_t step = 0;
  std::string layer;
  int64_t units = 0;
  int64_t identical_pairs = 0;       // pairs of units bitwise identical (incoming and outgoing weights)
  double min_relative_distance = 0;  // min ‖u_a − u_b‖ / max(‖u_a‖, ‖u_b‖) over pairs (0: a duplicate)
  int64_t closest_a = 0, closest_b = 0;  // the pair attaining it; -1 when none
};
extern const Table<SymmetryRow> kSymmetry;

// noise.csv: one row per noise probe step (probes/probe.h): how large the arithmetic's perturbation of
// the gradient is against the noise SGD itself injects at the run's batch size, on the probe examples.
struct NoiseRow {
  int64_t step = 0;
  int64_t batch = 0;              // B: the SGD batch size whose sampling noise is measured
  int64_t examples = 0;           // k: per-example gradients the spread is estimated from
  double grad_norm = 0;           // ‖g‖₂, g the float64 gradient on the first B probe examples
  double rounding_norm = 0;       // ‖g32 − g‖₂: the run's dtype's gradient against float64, same parameters
  double rounding_relative = 0;   // rounding_norm / grad_norm (NaN when grad_norm is 0)
  double sampling_norm = 0;       // √(tr Σ / B · (N − B)/(N − 1)): SGD's mini-batch noise, Σ the per-example
                                  // gradients' covariance (from k), N the training examples
  double ratio = 0;               // rounding_norm / sampling_norm (inf: no sampling noise; NaN: neither)
  double perturbation_norm = 0;   // ‖δ‖₂ of one draw of the run's gradient perturbation on g32 (0: none)
  double lambda_min = 0;          // the curvature probe's λmin at this step (NaN: no curvature probe here)
  double rounding_vmin = 0;       // |(g32 − g)·v_min|: the rounding along the escape direction (NaN: no v_min)
  double sampling_vmin = 0;       // √(Var(g_i·v_min) / B · (N − B)/(N − 1)): the sampling noise along it
  double probe_s = 0;             // seconds the measurement took
};
extern const Table<NoiseRow> kNoise;

// ophash.csv: one row per op an ophash probe step ran (probes/op_hashes.h), in execution order.
struct OpHashRow {
  int64_t step = 0;
  int64_t index = 0;            // the op's place among the step's ops (0, 1, ...), in the order they ended
  std::string phase;            // fwd | bwd | update
  std::string op;               // as the op taps name it: "encoder.fc1:linear", "AddmmBackward0:mm", "relu"
  std::string shape, dtype;     // of its first floating output: "64x256", "float"
  std::string inputs, outputs;  // 16 hex digits: digests of its tensor inputs as it began, and of its outputs
};
extern const Table<OpHashRow> kOpHash;

// ops.csv: one row per sampled op element (op taps, probes/op_taps.h).
struct OpRow {
  int64_t step = 0;
  std::string op, phase;  // tap name; fwd | wgrad | dgrad (the loss's gradient w.r.t. its prediction)
  std::string index;      // the element's coordinates in the op's output (or weight), joined by ':'
  double observed = 0;    // what the kernel computed
  double exact = 0;       // the exact value rounded to nearest binary64
  double ulp_error = 0;   // (observed − exact) in ULPs of the exact value in `dtype` (signed)
  double bound = 0;       // a-priori rounding bound γ_n·Σ|terms|, absolute
  double bound_ratio = 0; // |observed − exact| / bound
  int64_t call = 0;       // which call of the op (PredNet's frame); -1 for wgrad, which sums every call
  std::string kernel;     // linear | conv2d | sigmoid | tanh | relu | mse_loss
  std::string dtype;      // float32 | float64: the data's format, which ULPs and bound are in
  int64_t terms = 0;      // products and additions summed (1 for an activation)
  std::string flag;       // within | beyond | nonfinite_input | ... (analysis/op_summary.h says each)
};
extern const Table<OpRow> kOps;

}  // namespace saddlescope::store
