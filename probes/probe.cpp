#include "saddlescope/probes/probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/gpu/graph.h"
#include "saddlescope/probes/lanczos.h"
#include "saddlescope/probes/spectrum.h"
#include "saddlescope/store/schema.h"
#include "saddlescope/store/npy.h"

namespace saddlescope::probes {

class Probe {
 public:
  virtual ~Probe() = default;
  virtual bool due(int64_t step) const = 0;
  virtual Status run(int64_t step, const ModelView& model) = 0;
  virtual Status finish() { return Status::Ok(); }
  // Whether nothing is buffered between steps (a checkpoint then holds the probe's whole state).
  virtual bool idle() const { return true; }
};

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using Clock = std::chrono::steady_clock;

// One curvature measurement at the current parameters.
struct Measurement {
  double loss = 0, grad_norm = 0;
  LanczosResult eig;
  std::optional<TraceEstimate> trace;
  std::optional<SpectralDensity> density;
  double g_dot_vmin = 0;
  int64_t hvp_count = 0;
  at::Tensor theta, hv_min;  // (n) flat parameters and H·v_min, for the Hessian-Lipschitz estimate
};

// The parameters and loss the probe measures: the live model, or its float64 copy.
std::pair<std::vector<at::Tensor>, LossFn> target(const ProbeSpec& spec, const ModelView& model) {
  int64_t batch = std::min(spec.get_int("batch"), model.probe_examples);
  if (spec.get_bool("float64")) return model.float64(batch);
  return {model.params, [&model, batch] { return model.probe_loss(batch); }};
}

Result<Measurement> measure(const ProbeSpec& spec, const ModelView& model, int64_t step) {
  if (spec.get_bool("float64") && !model.float64)
    return Status::Error("probe '" + spec.text + "': this model has no float64 copy");
  auto [params, loss] = target(spec, model);
  auto H = make_hvp(loss, params, spec.get_bool("graph"));
  if (!H) return H.status();
  if (!std::isfinite(H->loss) || !H->gradient.isfinite().all().item<bool>())
    return Status::Error(fmt::format("non-finite probe loss ({}) or gradient on the probe batch", H->loss));
  // Seeded per step, so that a probe's result at a step does not depend on what ran before.
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(spec.get_int("seed")) * 1000003u +
                                            static_cast<uint64_t>(step));
  LanczosOptions o;
  o.k = spec.get_int("k");
  o.tol = spec.get_double("tol");
  o.max_iterations = spec.get_int("iters");
  o.min_iterations = std::min<int64_t>(20, o.max_iterations);
  auto eig = lanczos_extreme(*H, o, gen);
  if (!eig) return eig.status();
  Measurement m;
  m.loss = H->loss;
  m.grad_norm = H->gradient.norm().item<double>();
  m.eig = std::move(*eig);
  m.hvp_count = m.eig.hvp_count;
  if (int64_t samples = spec.get_int("trace")) {
    auto t = hutchinson_trace(*H, {samples}, gen);
    if (!t) return t.status();
    m.trace = *t;
    m.hvp_count += t->hvp_count;
  }
  if (int64_t probes = spec.get_int("slq")) {
    SlqOptions so;
    so.probes = probes;
    so.steps = spec.get_int("slq_steps");
    auto d = slq_density(*H, so, gen);
    if (!d) return d.status();
    m.density = *d;
    m.hvp_count += d->hvp_count;
  }
  const EigenPair& lo = m.eig.smallest.front();
  m.g_dot_vmin = g_dot_v(H->gradient, lo.vector);
  m.hv_min = lo.hv;  // measured with its residual (true_residuals is on)
  m.theta = flatten(params, params);
  return m;
}

// A measurement as curvature.csv's row: the probe's rows and the `saddlescope curvature` command's one.
store::CurvatureRow curvature_row(const Measurement& m, int64_t step, double lipschitz, bool float64, double seconds) {
  const EigenPair &lo = m.eig.smallest.front(), &hi = m.eig.largest.front();
  store::CurvatureRow r;
  r.step = step;
  r.probe_loss = m.loss;
  r.probe_grad_norm = m.grad_norm;
  r.lambda_min = lo.lambda;
  r.lambda_min_residual = lo.residual;
  r.lambda_max = hi.lambda;
  r.lambda_max_residual = hi.residual;
  r.tolerance = m.eig.tolerance;
  r.converged = m.eig.converged;
  r.iterations = m.eig.iterations;
  r.restarts = m.eig.restarts;
  r.trace = m.trace ? m.trace->trace : kNaN;
  r.trace_se = m.trace ? m.trace->standard_error : kNaN;
  r.negative_mass = m.density ? m.density->negative_mass : kNaN;
  r.negative_mass_lower = m.density ? m.density->negative_mass_lower : kNaN;
  r.negative_mass_upper = m.density ? m.density->negative_mass_upper : kNaN;
  r.g_dot_vmin = m.g_dot_vmin;
  r.hessian_lipschitz = lipschitz;
  r.hvp_count = m.hvp_count;
  r.float64 = float64;
  r.probe_s = seconds;
  return r;
}

// Whether `s` is a measurement's numerical failure (measure's and lanczos.h's "non-finite" errors)
// rather than a bug or a setting.
bool numerical(const Status& s) { return s.message().find("non-finite") != std::string::npos; }

// The curvature probe's last escape direction, for the noise probe at the same step.
struct LatestVmin {
  int64_t step = -1;
  double lambda = kNaN;
  at::Tensor vector;  // (n) unit, float64, over all parameters in ModelView::params order
};

class CurvatureProbe : public Probe {
 public:
  CurvatureProbe(ProbeSpec spec, std::string run_dir, store::TableWriter<store::CurvatureRow> csv,
                 store::TableWriter<store::CurvatureEigenRow> eigen,
                 std::shared_ptr<std::vector<ProbeFailure>> failures, std::shared_ptr<LatestVmin> vmin)
      : spec_(std::move(spec)), run_dir_(std::move(run_dir)), csv_(std::move(csv)), eigen_(std::move(eigen)),
        failures_(std::move(failures)), vmin_(std::move(vmin)) {}

  // Due at the spec's steps, and at the step after one (for the Hessian-Lipschitz HVP).
  bool due(int64_t step) const override { return spec_.due(step) || (pending_ && pending_->step + 1 == step); }

  Status run(int64_t step, const ModelView& model) override {
    if (pending_ && pending_->step + 1 == step) SADDLESCOPE_RETURN_IF_ERROR(complete(model));
    if (!spec_.due(step)) return Status::Ok();
    Clock::time_point t0 = Clock::now();
    auto m = measure(spec_, model, step);
    if (!m && numerical(m.status())) {  // recorded; the run goes on
      failures_->push_back({step, "curvature", m.status().message()});
      return write_failed(step, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    if (!m) return m.status();
    SADDLESCOPE_RETURN_IF_ERROR(write_eigen(step, m->eig));
    *vmin_ = {step, m->eig.smallest.front().lambda, m->eig.smallest.front().vector.to(at::kDouble)};
    pending_ = Pending{step, std::move(*m), std::chrono::duration<double>(Clock::now() - t0).count()};
    return Status::Ok();
  }

  Status finish() override { return pending_ ? write(kNaN) : Status::Ok(); }
  bool idle() const override { return !pending_; }

 private:
  struct Pending {
    int64_t step;
    Measurement m;
    double seconds;
  };

  // ‖H(θ_{t+1})v − H(θ_t)v‖ / ‖θ_{t+1} − θ_t‖ with v = v_min(θ_t): one forward, backward and HVP.
  Status complete(const ModelView& model) {
    Clock::time_point t0 = Clock::now();
    auto [params, loss] = target(spec_, model);
    auto H = make_hvp(loss, params);  // one HVP: nothing to replay
    if (!H) return H.status();
    if (!std::isfinite(H->loss)) return write(kNaN);  // no estimate; the measurement at step stands
    at::Tensor hv1 = H->apply(pending_->m.eig.smallest.front().vector);
    at::Tensor step = flatten(params, params) - pending_->m.theta;
    auto lipschitz = hessian_lipschitz(pending_->m.hv_min, hv1, step);
    pending_->m.hvp_count += 1;
    pending_->seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    return write(lipschitz ? *lipschitz : kNaN);  // a zero step (no update) has no estimate
  }

  Status write(double lipschitz) {
    csv_.append(curvature_row(pending_->m, pending_->step, lipschitz, spec_.get_bool("float64"), pending_->seconds));
    pending_.reset();
    return csv_.flush();
  }

  // The row of a measurement that failed numerically: NaN values, not converged, no iterations.
  Status write_failed(int64_t step, double seconds) {
    store::CurvatureRow r;
    r.step = step;
    for (double* x : {&r.probe_loss, &r.probe_grad_norm, &r.lambda_min, &r.lambda_min_residual, &r.lambda_max,
                      &r.lambda_max_residual, &r.trace, &r.trace_se, &r.negative_mass, &r.negative_mass_lower,
                      &r.negative_mass_upper, &r.g_dot_vmin, &r.hessian_lipschitz})
      *x = kNaN;
    r.tolerance = spec_.get_double("tol");
    r.float64 = spec_.get_bool("float64");
    r.probe_s = seconds;
    csv_.append(r);
    return csv_.flush();
  }

  Status write_eigen(int64_t step, const LanczosResult& eig) {
    for (const auto* end : {&eig.smallest, &eig.largest}) {
      const char* name = end == &eig.smallest ? "min" : "max";
      for (size_t i = 0; i < end->size(); ++i) {
        const EigenPair& p = (*end)[i];
        eigen_.append({step, name, static_cast<int64_t>(i), p.lambda, p.residual});
        if (spec_.get_bool("vectors")) {
          std::string dir = run_dir_ + "/curvature";
          std::filesystem::create_directories(dir);
          at::Tensor v = p.vector.detach().to(torch::kCPU).contiguous();
          store::Dtype dt = v.scalar_type() == torch::kFloat64 ? store::Dtype::kFloat64 : store::Dtype::kFloat32;
          SADDLESCOPE_RETURN_IF_ERROR(store::write_npy(fmt::format("{}/step-{:08d}-v{}-{}.npy", dir, step, name, i),
                                                       dt, {v.numel()}, v.data_ptr()));
        }
      }
    }
    return eigen_.flush();
  }

  ProbeSpec spec_;
  std::string run_dir_;
  store::TableWriter<store::CurvatureRow> csv_;
  store::TableWriter<store::CurvatureEigenRow> eigen_;
  std::optional<Pending> pending_;
  std::shared_ptr<std::vector<ProbeFailure>> failures_;
  std::shared_ptr<LatestVmin> vmin_;
};

class SymmetryProbe : public Probe {
 public:
  SymmetryProbe(ProbeSpec spec, store::TableWriter<store::SymmetryRow> csv)
      : spec_(std::move(spec)), csv_(std::move(csv)) {}
  bool due(int64_t step) const override { return spec_.due(step); }

  Status run(int64_t step, const ModelView& model) override {
    if (!model.layers) return Status::Error("probe 'symmetry': this model does not list its layers");
    auto scan = symmetry_scan(model.layers());
    if (!scan) return scan.status();
    for (const auto& l : *scan) {
      csv_.append({step, l.name, l.units, static_cast<int64_t>(l.identical_pairs.size()), l.min_relative_distance,
                   l.closest_pair.first, l.closest_pair.second});
    }
    return csv_.flush();
  }

 private:
  ProbeSpec spec_;
  store::TableWriter<store::SymmetryRow> csv_;
};

// Rounding against SGD's own noise at one step, on the probe examples: the run's-dtype gradient on B
// examples against the same gradient in float64 from the same parameters (the arithmetic's
// perturbation), the spread of k per-example gradients scaled to a batch of B drawn from N (the
// sampling noise SGD injects), one draw of the run's gradient perturbation, and the first two along
// the curvature probe's v_min when it measured this step (it runs first).
class NoiseProbe : public Probe {
 public:
  NoiseProbe(ProbeSpec spec, store::TableWriter<store::NoiseRow> csv, std::shared_ptr<const LatestVmin> vmin)
      : spec_(std::move(spec)), csv_(std::move(csv)), vmin_(std::move(vmin)) {}
  bool due(int64_t step) const override { return spec_.due(step); }

  Status run(int64_t step, const ModelView& model) override {
    const Clock::time_point t0 = Clock::now();
    store::NoiseRow row;
    row.step = step;
    row.batch = std::min(spec_.get_int("sgd_batch") > 0 ? spec_.get_int("sgd_batch") : model.batch_size,
                         model.probe_examples);
    row.examples = std::min(spec_.get_int("k"), model.probe_examples);
    if (row.batch < 1 || row.examples < 2 || !model.probe_rows || !model.loss_on)
      return Status::Error(fmt::format("probe '{}': needs a batch and at least 2 probe examples (has {})", spec_.text,
                                       model.probe_examples));
    const bool along = vmin_->step == step && vmin_->vector.defined();
    row.lambda_min = along ? vmin_->lambda : kNaN;
    const at::Tensor v = along ? vmin_->vector : at::Tensor();
    const at::Tensor g32 = flat_gradient(model.probe_loss(row.batch), model.params);
    row.rounding_norm = row.rounding_relative = row.rounding_vmin = kNaN;
    if (model.float64) {
      auto [params64, loss64] = model.float64(row.batch);
      const at::Tensor g64 = flat_gradient(loss64(), params64);
      const at::Tensor delta = g32.to(at::kDouble) - g64;
      row.grad_norm = g64.norm().item<double>();
      row.rounding_norm = delta.norm().item<double>();
      row.rounding_relative = row.grad_norm > 0 ? row.rounding_norm / row.grad_norm : kNaN;
      if (along) row.rounding_vmin = std::fabs(delta.dot(v.to(delta.device())).item<double>());
    } else {
      row.grad_norm = g32.norm().item<double>();
    }
    // Σ‖g_i‖², Σ g_i, and the same moments of the projections g_i·v, summed in place on the gradients'
    // device in example order (zero plus the first term is that term: the bits of a sum started from it)
    // and read back once: a read per example would wait for the device k times, which on a GPU costs more
    // than the k passes. With graph=true on CUDA the passes after the first are one captured graph
    // replayed k − 1 times, each reading its example from a fixed buffer: the same kernels on the same
    // buffers, the same bits, without launching each kernel from the host.
    const at::TensorOptions f64 = g32.options().dtype(at::kDouble);
    at::Tensor sum = at::zeros({g32.numel()}, f64), squares = at::zeros({}, f64);
    at::Tensor proj_sum = at::zeros({}, f64), proj_squares = at::zeros({}, f64);
    const at::Tensor v_here = along ? v.to(g32.device()).to(at::kDouble) : at::Tensor();
    auto accumulate = [&](const at::Tensor& loss) {
      const at::Tensor gi = flat_gradient(loss, model.params).to(at::kDouble);
      squares.add_(gi.dot(gi));
      sum.add_(gi);
      if (along) {
        const at::Tensor p = gi.dot(v_here);
        proj_sum.add_(p);
        proj_squares.add_(p * p);
      }
    };
    if (spec_.get_bool("graph") && g32.is_cuda() && gpu::cuda_graphs_available()) {
      const at::Tensor rows = model.probe_rows(0, 1).clone();
      gpu::GraphedWork work(true, "noise:graph=false", /*warmup=*/1);
      for (int64_t i = 0; i < row.examples; ++i) {
        rows.copy_(model.probe_rows(i, 1));
        work.run([&] { accumulate(model.loss_on(rows)); });
      }
    } else {
      for (int64_t i = 0; i < row.examples; ++i) accumulate(model.loss_on(model.probe_rows(i, 1)));
    }
    const at::Tensor moments = at::stack({squares, sum.dot(sum), proj_sum, proj_squares}).cpu();
    const double* m = moments.data_ptr<double>();
    row.sampling_norm = sampling_noise(m[0], m[1], row.examples, row.batch, model.train_examples);
    row.sampling_vmin = along ? sampling_noise(m[3], m[2] * m[2], row.examples, row.batch,
                                               model.train_examples)
                              : kNaN;
    row.ratio = row.rounding_norm / row.sampling_norm;  // inf or NaN where sampling noise is 0: said so
    if (model.gradient_noise) {
      std::vector<at::Tensor> grads;
      int64_t offset = 0;
      for (const auto& p : model.params) {
        grads.push_back(g32.narrow(0, offset, p.numel()).view(p.sizes()));
        offset += p.numel();
      }
      const at::Tensor norm2 = at::zeros({}, f64);
      for (const auto& d : model.gradient_noise(grads, static_cast<uint64_t>(spec_.get_int("seed")) * 1000003u +
                                                           static_cast<uint64_t>(step)))
        norm2.add_(d.to(at::kDouble).pow(2).sum().to(norm2.device()));
      row.perturbation_norm = std::sqrt(norm2.item<double>());
    }
    row.probe_s = std::chrono::duration<double>(Clock::now() - t0).count();
    csv_.append(row);
    return csv_.flush();
  }

 private:
  static at::Tensor flat_gradient(const at::Tensor& loss, const std::vector<at::Tensor>& params) {
    std::vector<at::Tensor> g = torch::autograd::grad({loss}, params, {}, /*retain_graph=*/false,
                                                      /*create_graph=*/false, /*allow_unused=*/true);
    for (size_t i = 0; i < g.size(); ++i)
      g[i] = g[i].defined() ? g[i].detach().reshape({-1}) : torch::zeros({params[i].numel()}, params[i].options());
    return torch::cat(g);
  }

  ProbeSpec spec_;
  store::TableWriter<store::NoiseRow> csv_;
  std::shared_ptr<const LatestVmin> vmin_;
};

}  // namespace

double sampling_noise(double sum_of_squares, double squared_norm_of_sum, int64_t k, int64_t batch,
                      int64_t population) {
  if (k < 2 || batch < 1) return kNaN;
  // tr Σ = Σ‖g_i − ḡ‖²/(k − 1) = (Σ‖g_i‖² − ‖Σ g_i‖²/k)/(k − 1); rounding can make it a hair negative.
  const double trace = std::max(0.0, (sum_of_squares - squared_norm_of_sum / static_cast<double>(k)) /
                                         static_cast<double>(k - 1));
  // A batch of B drawn without replacement from N: the mean's covariance is Σ/B · (N − B)/(N − 1).
  const double fpc = population <= 0 ? 1.0
                     : population <= batch ? 0.0
                                           : static_cast<double>(population - batch) / static_cast<double>(population - 1);
  return std::sqrt(trace / static_cast<double>(batch) * fpc);
}

ProbeSet::ProbeSet() = default;
ProbeSet::ProbeSet(ProbeSet&&) noexcept = default;
ProbeSet& ProbeSet::operator=(ProbeSet&&) noexcept = default;
ProbeSet::~ProbeSet() = default;

Status check_probes(const std::vector<ProbeSpec>& specs, int64_t n_params) {
  std::vector<std::string> seen;
  for (const auto& spec : specs) {
    if (std::find(seen.begin(), seen.end(), spec.name) != seen.end())
      return Status::Error("probe '" + spec.name + "' given twice (one of each kind per run)");
    seen.push_back(spec.name);
    if (spec.name == "curvature" && spec.get_int("k") > n_params)
      return Status::Error(fmt::format("probe '{}': k = {} exceeds the model's {} parameters", spec.text,
                                       spec.get_int("k"), n_params));
  }
  return Status::Ok();
}

Result<ProbeSet> ProbeSet::create(const std::vector<ProbeSpec>& specs, int64_t n_params, const std::string& run_dir,
                                  int64_t resume_from) {
  SADDLESCOPE_RETURN_IF_ERROR(check_probes(specs, n_params));
  ProbeSet set;
  auto vmin = std::make_shared<LatestVmin>();
  // The curvature probe first whatever the specs' order: the noise probe reads its v_min.
  std::vector<ProbeSpec> ordered = specs;
  std::stable_partition(ordered.begin(), ordered.end(), [](const ProbeSpec& s) { return s.name == "curvature"; });
  for (const auto& spec : ordered) {
    if (spec.name == "curvature") {
      auto csv = store::TableWriter<store::CurvatureRow>::open(run_dir, store::kCurvature, resume_from);
      if (!csv) return csv.status();
      auto eigen = store::TableWriter<store::CurvatureEigenRow>::open(run_dir, store::kCurvatureEigen, resume_from);
      if (!eigen) return eigen.status();
      set.probes_.push_back(std::make_unique<CurvatureProbe>(spec, run_dir, std::move(*csv), std::move(*eigen),
                                                             set.failures_, vmin));
    } else if (spec.name == "symmetry") {
      auto csv = store::TableWriter<store::SymmetryRow>::open(run_dir, store::kSymmetry, resume_from);
      if (!csv) return csv.status();
      set.probes_.push_back(std::make_unique<SymmetryProbe>(spec, std::move(*csv)));
    } else if (spec.name == "noise") {
      auto csv = store::TableWriter<store::NoiseRow>::open(run_dir, store::kNoise, resume_from);
      if (!csv) return csv.status();
      set.probes_.push_back(std::make_unique<NoiseProbe>(spec, std::move(*csv), vmin));
    }
  }
  return set;
}

bool ProbeSet::idle() const {
  for (const auto& p : probes_)
    if (!p->idle()) return false;
  return true;
}

std::map<std::string, int> ProbeSet::files(const std::vector<ProbeSpec>& specs) {
  std::map<std::string, int> f;
  for (const auto& spec : specs) {
    if (spec.name == "curvature") {
      f[store::kCurvature.file] = store::kCurvature.version;
      f[store::kCurvatureEigen.file] = store::kCurvatureEigen.version;
    }
    if (spec.name == "symmetry") f[store::kSymmetry.file] = store::kSymmetry.version;
    if (spec.name == "noise") f[store::kNoise.file] = store::kNoise.version;
    if (spec.name == "ophash") f[store::kOpHash.file] = store::kOpHash.version;
  }
  return f;
}

bool ProbeSet::due(int64_t step) const {
  for (const auto& p : probes_)
    if (p->due(step)) return true;
  return false;
}

Status ProbeSet::run(int64_t step, const ModelView& model) {
  Clock::time_point t0 = Clock::now();
  for (auto& p : probes_)
    if (p->due(step)) SADDLESCOPE_RETURN_IF_ERROR(p->run(step, model));
  seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
  return Status::Ok();
}

Status ProbeSet::finish() {
  for (auto& p : probes_) SADDLESCOPE_RETURN_IF_ERROR(p->finish());
  return Status::Ok();
}

Result<CurvatureEvaluation> evaluate_curvature(const ProbeSpec& spec, const ModelView& model) {
  Clock::time_point t0 = Clock::now();
  auto m = measure(spec, model, 0);
  if (!m) return m.status();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  auto pairs = [](const std::vector<EigenPair>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& p : v) a.push_back({{"lambda", p.lambda}, {"residual", p.residual}});
    return a;
  };
  nlohmann::json j = {{"probe", spec.resolved()}, {"probe_loss", m->loss}, {"probe_grad_norm", m->grad_norm},
                      {"lambda_min", m->eig.lambda_min()}, {"lambda_min_residual", m->eig.smallest.front().residual},
                      {"lambda_max", m->eig.lambda_max()}, {"lambda_max_residual", m->eig.largest.front().residual},
                      {"tolerance", m->eig.tolerance}, {"converged", m->eig.converged},
                      {"iterations", m->eig.iterations}, {"hvp_count", m->hvp_count},
                      {"g_dot_vmin", m->g_dot_vmin}, {"smallest", pairs(m->eig.smallest)},
                      {"largest", pairs(m->eig.largest)}};
  if (m->trace) j["trace"] = {{"estimate", m->trace->trace}, {"standard_error", m->trace->standard_error}};
  if (m->density)
    j["negative_mass"] = {{"estimate", m->density->negative_mass}, {"lower", m->density->negative_mass_lower},
                          {"upper", m->density->negative_mass_upper}, {"standard_error", m->density->negative_mass_se}};
  return CurvatureEvaluation{curvature_row(*m, 0, kNaN, spec.get_bool("float64"), seconds), std::move(j)};
}

}  // namespace saddlescope::probes
