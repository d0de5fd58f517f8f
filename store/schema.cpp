#include "saddlescope/store/schema.h"

namespace saddlescope::store {

// Column order is file order. A change here is a new version of the file (docs/run-store.md). Columns
// marked `true` are timings (wall clock): runs that are the same run differ there and only there.

const Table<MetricsRow> kMetrics{"metrics.csv", 1,
    {{"step", &MetricsRow::step}, {"loss", &MetricsRow::loss},
     {"batch_grad_norm", &MetricsRow::batch_grad_norm}, {"lr", &MetricsRow::lr}, {"wall_s", &MetricsRow::wall_s, true}}};

const Table<CurvatureRow> kCurvature{"curvature.csv", 1,
    {{"step", &CurvatureRow::step}, {"probe_loss", &CurvatureRow::probe_loss},
     {"probe_grad_norm", &CurvatureRow::probe_grad_norm}, {"lambda_min", &CurvatureRow::lambda_min},
     {"lambda_min_residual", &CurvatureRow::lambda_min_residual}, {"lambda_max", &CurvatureRow::lambda_max},
     {"lambda_max_residual", &CurvatureRow::lambda_max_residual}, {"tolerance", &CurvatureRow::tolerance},
     {"converged", &CurvatureRow::converged}, {"iterations", &CurvatureRow::iterations},
     {"restarts", &CurvatureRow::restarts}, {"trace", &CurvatureRow::trace}, {"trace_se", &CurvatureRow::trace_se},
     {"negative_mass", &CurvatureRow::negative_mass}, {"negative_mass_lower", &CurvatureRow::negative_mass_lower},
     {"negative_mass_upper", &CurvatureRow::negative_mass_upper}, {"g_dot_vmin", &CurvatureRow::g_dot_vmin},
     {"hessian_lipschitz", &CurvatureRow::hessian_lipschitz}, {"hvp_count", &CurvatureRow::hvp_count},
     {"float64", &CurvatureRow::float64}, {"probe_s", &CurvatureRow::probe_s, true}}};

const Table<CurvatureEigenRow> kCurvatureEigen{"curvature_eigen.csv", 1,
    {{"step", &CurvatureEigenRow::step}, {"end", &CurvatureEigenRow::end}, {"index", &CurvatureEigenRow::index},
     {"lambda", &CurvatureEigenRow::lambda}, {"residual", &CurvatureEigenRow::residual}}};

const Table<SymmetryRow> kSymmetry{"symmetry.csv", 1,
    {{"step", &SymmetryRow::step}, {"layer", &SymmetryRow::layer}, {"units", &SymmetryRow::units},
     {"identical_pairs", &SymmetryRow::identical_pairs},
     {"min_relative_distance", &SymmetryRow::min_relative_distance}, {"closest_a", &SymmetryRow::closest_a},
     {"closest_b", &SymmetryRow::closest_b}}};

const Table<NoiseRow> kNoise{"noise.csv", 1,
    {{"step", &NoiseRow::step}, {"batch", &NoiseRow::batch}, {"examples", &NoiseRow::examples},
     {"grad_norm", &NoiseRow::grad_norm}, {"rounding_norm", &NoiseRow::rounding_norm},
     {"rounding_relative", &NoiseRow::rounding_relative}, {"sampling_norm", &NoiseRow::sampling_norm},
     {"ratio", &NoiseRow::ratio}, {"perturbation_norm", &NoiseRow::perturbation_norm},
     {"lambda_min", &NoiseRow::lambda_min}, {"rounding_vmin", &NoiseRow::rounding_vmin},
     {"sampling_vmin", &NoiseRow::sampling_vmin}, {"probe_s", &NoiseRow::probe_s}}};

const Table<OpHashRow> kOpHash{"ophash.csv", 2,
    {{"step", &OpHashRow::step}, {"index", &OpHashRow::index}, {"phase", &OpHashRow::phase}, {"op", &OpHashRow::op},
     {"shape", &OpHashRow::shape}, {"dtype", &OpHashRow::dtype}, {"inputs", &OpHashRow::inputs},
     {"outputs", &OpHashRow::outputs}}};

const Table<OpRow> kOps{"ops.csv", 1,
    {{"step", &OpRow::step}, {"op", &OpRow::op}, {"phase", &OpRow::phase}, {"index", &OpRow::index},
     {"observed", &OpRow::observed}, {"exact", &OpRow::exact}, {"ulp_error", &OpRow::ulp_error},
     {"bound", &OpRow::bound}, {"bound_ratio", &OpRow::bound_ratio}, {"call", &OpRow::call},
     {"kernel", &OpRow::kernel}, {"dtype", &OpRow::dtype}, {"terms", &OpRow::terms}, {"flag", &OpRow::flag}}};

}  // namespace saddlescope::store
