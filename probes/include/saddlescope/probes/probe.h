// Probes in a training run: registered once, called by the training loop at their own cadence, each
// writing rows to the run directory. The loop only asks `due(step)` — a few comparisons, so probes
// off cost nothing measurable — and, when due, calls `run`.
//
//   curvature.csv       one row per curvature probe step (store::kCurvature, store/schema.h)
//   curvature_eigen.csv the k smallest and k largest eigenpairs: step, end (min|max), index, lambda, residual
//   symmetry.csv        one row per layer per symmetry probe step
//   noise.csv           one row per noise probe step: rounding against SGD's sampling noise (store::kNoise)
//   curvature/step-%08d-{vmin,vmax}-<i>.npy   eigenvectors, when vectors=true
#pragma once

#include <map>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "saddlescope/base/status.h"
#include "saddlescope/probes/hvp.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/probes/symmetry.h"
#include "saddlescope/store/schema.h"

namespace saddlescope::probes {

// What probes may read of the model being trained. The trainer builds it; probes never change the
// parameters or their gradients.
struct ModelView {
  std::vector<at::Tensor> params;  // live parameters, in forward order
  // The training loss on the first `batch` examples of a fixed probe set (the same examples at every
  // probe step), as a function of `params`.
  std::function<at::Tensor(int64_t batch)> probe_loss;
  // The probe examples [first, first + count) as the loss reads them, and the same loss on any such rows:
  // one example's gradient, for the noise probe, whose captured passes (graph=true) read their example
  // from a fixed buffer. Null when a view has none.
  std::function<at::Tensor(int64_t first, int64_t count)> probe_rows;
  std::function<at::Tensor(const at::Tensor& rows)> loss_on;
  // A float64 copy of the model with the current parameter values copied in: its parameters and its
  // loss on the same probe examples (converted to float64). Null when the model has none.
  std::function<std::pair<std::vector<at::Tensor>, LossFn>(int64_t batch)> float64;
  // The layers for the symmetry probe (weights of the live model).
  std::function<std::vector<LayerUnits>()> layers;
  int64_t probe_examples = 0;      // size of the probe set (batch is clamped to it)
  int64_t batch_size = 0;          // the run's batch size: the noise probe's B unless its spec sets one
  int64_t train_examples = 0;      // N, the examples SGD draws its batches from (0: unbounded, generated)
  // One draw of the run's gradient perturbation for the gradients `grads` (one per parameter), from a
  // generator seeded with `seed` — never the run's own stream, which stays as it was. Null when the run
  // perturbs no gradient.
  std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>& grads, uint64_t seed)> gradient_noise;
};

class Probe;

// A probe's own numerical failure at a step on finite parameters (a probe loss, gradient or
// Hessian-vector product that is not finite): recorded, and the run goes on. Its row in the probe's
// CSV holds NaN measurements (converged false, no iterations), which the analysis skips.
struct ProbeFailure {
  int64_t step = 0;
  std::string probe;   // "curvature"
  std::string reason;  // one line
};

// Checks `specs` against a model of `n_params` parameters before anything is written: one probe of
// each kind, curvature's k at most the parameter count.
Status check_probes(const std::vector<ProbeSpec>& specs, int64_t n_params);

class ProbeSet {
 public:
  // The probes of `specs` for a model with `n_params` parameters, writing into `run_dir` (which must
  // exist) the tables of store/schema.h. With `resume_from` >= 0, a resumed run: their rows of steps
  // before it are kept, later ones dropped. Errors, before anything runs: the same probe twice, k
  // larger than the parameter count, a table that cannot be written.
  static Result<ProbeSet> create(const std::vector<ProbeSpec>& specs, int64_t n_params, const std::string& run_dir,
                                 int64_t resume_from = -1);
  // The files the probes of `specs` write, with their schema versions (the manifest's file list).
  static std::map<std::string, int> files(const std::vector<ProbeSpec>& specs);
  // No probes at all.
  ProbeSet();
  ProbeSet(ProbeSet&&) noexcept;
  ProbeSet& operator=(ProbeSet&&) noexcept;
  ~ProbeSet();

  // Whether any probe has work at optimiser step `step` (parameters θ_step, before update `step`).
  bool due(int64_t step) const;
  // Runs the probes due at `step`. A probe's numerical failure on finite parameters is recorded
  // (failures()), not an error; the caller checks that the parameters are finite first (a run whose
  // parameters are not is diverged). REQUIRES: due(step).
  Status run(int64_t step, const ModelView& model);
  // The numerical failures so far, in step order.
  const std::vector<ProbeFailure>& failures() const { return *failures_; }
  // Writes what is still buffered (a curvature row waiting for its Hessian-Lipschitz HVP at step+1).
  Status finish();
  // Whether no probe holds a measurement between steps: a checkpoint taken now loses nothing.
  bool idle() const;
  // Seconds spent in probes so far.
  double seconds() const { return seconds_; }

 private:
  std::vector<std::unique_ptr<Probe>> probes_;
  std::shared_ptr<std::vector<ProbeFailure>> failures_ = std::make_shared<std::vector<ProbeFailure>>();
  double seconds_ = 0;
};

// SGD's sampling noise at batch size `batch`: √(tr Σ / B · (N − B)/(N − 1)), with tr Σ the trace of the
// covariance of k per-example gradients g_i given as Σ‖g_i‖² and ‖Σ g_i‖², and N = `population` the
// examples batches are drawn from without replacement (0: unbounded, no correction; N ≤ B: 0, full
// batch). NaN for k < 2.
double sampling_noise(double sum_of_squares, double squared_norm_of_sum, int64_t k, int64_t batch,
                      int64_t population);

// One curvature evaluation at the current parameters (the `saddlescope curvature` command): the row the
// probe would write to curvature.csv (step 0, no Hessian-Lipschitz estimate: that needs the next step),
// and, as JSON, the same numbers under the same names plus every eigenpair and the trace and density
// estimates' detail.
struct CurvatureEvaluation {
  store::CurvatureRow row;
  nlohmann::json detail;
};
Result<CurvatureEvaluation> evaluate_curvature(const ProbeSpec& spec, const ModelView& model);

}  // namespace saddlescope::probes
