// Curvature probes against exact answers: quadratics with prescribed spectra, the two-layer linear
// network at the origin (closed form), and a small MLP whose full Hessian is built from HVPs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <torch/torch.h>

#include "saddlescope/gpu/graph.h"
#include "saddlescope/probes/hvp.h"
#include "saddlescope/probes/lanczos.h"
#include "saddlescope/probes/spectrum.h"

namespace saddlescope::probes {
namespace {

const auto kF64 = torch::TensorOptions().dtype(torch::kFloat64);

double rel_diff(double got, double want) { return std::abs(got - want) / std::abs(want); }

double nearest_distance(double x, const std::vector<double>& spectrum) {
  double best = INFINITY;
  for (double s : spectrum) best = std::min(best, std::abs(x - s));
  return best;
}

// 0.5 xᵀAx with A = Q diag(λ) Qᵀ, Q Haar-random: the Hessian is A wherever x is.
struct Quadratic {
  std::vector<double> spectrum;  // ascending
  torch::Tensor A;               // (n, n)
  torch::Tensor x;               // (n), the parameter
  LossFn loss() const {
    return [this] { return 0.5 * x.dot(A.mv(x)); };
  }
};

Quadratic make_quadratic(std::vector<double> lambda, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto n = static_cast<int64_t>(lambda.size());
  auto qr = torch::linalg_qr(torch::randn({n, n}, gen, kF64));
  torch::Tensor Q = std::get<0>(qr);
  torch::Tensor l = torch::tensor(lambda, kF64);
  torch::Tensor A = (Q * l).mm(Q.t());
  std::sort(lambda.begin(), lambda.end());
  return {lambda, 0.5 * (A + A.t()), torch::randn({n}, gen, kF64).requires_grad_(true)};
}

std::vector<double> linspace(double a, double b, int64_t count) {
  std::vector<double> v;
  for (int64_t i = 0; i < count; ++i) v.push_back(a + (b - a) * i / static_cast<double>(count - 1));
  return v;
}

// Reported residuals agree with ‖Ay − λy‖ computed here from A, and every Ritz value lies within its
// residual of an exact eigenvalue (what a residual promises for a symmetric matrix).
// Returns the largest disagreement between reported and recomputed residuals, relative to |λ|max.
double check_honest(const LanczosResult& r, const Quadratic& q) {
  double worst = 0, radius = std::max(-q.spectrum.front(), q.spectrum.back());
  for (const auto* side : {&r.smallest, &r.largest})
    for (const EigenPair& p : *side) {
      double truth = (q.A.mv(p.vector) - p.lambda * p.vector).norm().item<double>();
      EXPECT_NEAR(p.vector.norm().item<double>(), 1.0, 1e-12);
      EXPECT_LE(std::abs(p.residual - truth), 1e-12 * radius + 1e-6 * truth);
      EXPECT_LE(nearest_distance(p.lambda, q.spectrum), truth * (1 + 1e-9) + 1e-12);
      worst = std::max(worst, std::abs(p.residual - truth) / radius);
    }
  return worst;
}

TEST(Lanczos, QuadraticWithTinyNegativeEigenvalue) {
  // λmin = −1e-3 against λmax = 10: the case a change-in-λ stopping rule gets wrong.
  std::vector<double> lambda = linspace(0.05, 9.5, 998);
  lambda.push_back(-1e-3);
  lambda.push_back(10.0);
  Quadratic q = make_quadratic(lambda, 1);
  auto H = make_hvp(q.loss(), {q.x});
  ASSERT_TRUE(H.ok()) << H.status().message();
  LanczosOptions options;
  options.tol = 1e-7;
  options.max_iterations = 400;
  auto gen = at::detail::createCPUGenerator(7);
  auto r = lanczos_extreme(*H, options, gen);
  ASSERT_TRUE(r.ok()) << r.status().message();
  double dmin = rel_diff(r->lambda_min(), -1e-3), dmax = rel_diff(r->lambda_max(), 10.0);
  double honest = check_honest(*r, q);
  std::printf("[ max diff ] lambda_min rel %.3g, lambda_max rel %.3g, |residual reported - recomputed|/|lambda|max %.3g;"
              " %lld iterations, %lld HVPs, residuals %.3g %.3g\n",
              dmin, dmax, honest, (long long)r->iterations, (long long)r->hvp_count,
              r->smallest[0].residual, r->largest[0].residual);
  EXPECT_TRUE(r->converged);
  EXPECT_LT(r->lambda_min(), 0);
  EXPECT_LE(dmin, 1e-3);
  EXPECT_LE(dmax, 1e-3);
  EXPECT_LE(r->smallest[0].residual, r->tolerance);
  EXPECT_EQ(r->hvp_count, r->iterations + 2);
}

TEST(Lanczos, QuadraticWithClusteredEigenvalues) {
  // Clusters at both ends, spacing 1e-4 relative to the spectral radius; k = 3 of each.
  std::vector<double> lambda = linspace(-1.5, 8.0, 1193);
  for (double d : {0.0, 1e-3, 2e-3, 3e-3}) lambda.push_back(10.0 - d);
  for (double d : {0.0, 1e-3, 2e-3}) lambda.push_back(-2.0 + d);
  Quadratic q = make_quadratic(lambda, 2);
  auto H = make_hvp(q.loss(), {q.x});
  ASSERT_TRUE(H.ok()) << H.status().message();
  LanczosOptions options;
  options.k = 3;
  options.tol = 1e-4;
  options.max_iterations = 400;
  auto gen = at::detail::createCPUGenerator(8);
  auto r = lanczos_extreme(*H, options, gen);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& s = q.spectrum;
  size_t n = s.size();
  double worst = 0;
  for (size_t i = 0; i < 3; ++i) {
    worst = std::max({worst, rel_diff(r->smallest[i].lambda, s[i]), rel_diff(r->largest[i].lambda, s[n - 1 - i])});
    EXPECT_LE(r->smallest[i].residual, r->tolerance);
    EXPECT_LE(r->largest[i].residual, r->tolerance);
  }
  double honest = check_honest(*r, q);
  std::printf("[ max diff ] 3 smallest/largest rel %.3g, |residual reported - recomputed|/|lambda|max %.3g;"
              " %lld iterations, %lld HVPs\n", worst, honest, (long long)r->iterations,
              (long long)r->hvp_count);
  EXPECT_TRUE(r->converged);
  EXPECT_LE(worst, 1e-3);
}

TEST(Lanczos, IterationCapReportsLargeResidualHonestly) {
  Quadratic q = make_quadratic(linspace(-1.0, 10.0, 1000), 3);
  auto H = make_hvp(q.loss(), {q.x});
  ASSERT_TRUE(H.ok()) << H.status().message();
  LanczosOptions options;
  options.tol = 1e-6;
  options.max_iterations = 8;
  auto gen = at::detail::createCPUGenerator(9);
  auto r = lanczos_extreme(*H, options, gen);
  ASSERT_TRUE(r.ok()) << r.status().message();
  double honest = check_honest(*r, q);
  std::printf("[ max diff ] capped: lambda_min %.4f (exact -1), residual %.3g vs tolerance %.3g;"
              " |residual reported - recomputed|/|lambda|max %.3g\n",
              r->lambda_min(), r->smallest[0].residual, r->tolerance, honest);
  EXPECT_FALSE(r->converged);
  EXPECT_EQ(r->iterations, 8);
  EXPECT_EQ(r->hvp_count, 10);
  EXPECT_GT(r->smallest[0].residual, 100 * r->tolerance);
  // The probe does not lie: the error it made is within the residual it reports.
  EXPECT_LE(std::abs(r->lambda_min() + 1.0), r->smallest[0].residual);
}

TEST(Lanczos, RepeatedEigenvaluesFoundByRestarts) {
  // Three distinct eigenvalues: each Krylov space is 3-dimensional and holds one copy of each, so the
  // triple −1 and the triple 2 are only found by restarting after breakdowns.
  std::vector<double> lambda(1000, 0.5);
  for (int i = 0; i < 3; ++i) lambda[i] = -1.0, lambda[999 - i] = 2.0;
  Quadratic q = make_quadratic(lambda, 4);
  auto H = make_hvp(q.loss(), {q.x});
  ASSERT_TRUE(H.ok()) << H.status().message();
  LanczosOptions options;
  options.k = 3;
  options.tol = 1e-8;
  auto gen = at::detail::createCPUGenerator(10);
  auto r = lanczos_extreme(*H, options, gen);
  ASSERT_TRUE(r.ok()) << r.status().message();
  double worst = 0;
  for (int i = 0; i < 3; ++i)
    worst = std::max({worst, rel_diff(r->smallest[i].lambda, -1.0), rel_diff(r->largest[i].lambda, 2.0)});
  double honest = check_honest(*r, q);
  std::printf("[ max diff ] repeated: 3 smallest/largest rel %.3g, |residual reported - recomputed|/|lambda|max"
              " %.3g; %lld restarts, %lld HVPs\n", worst, honest, (long long)r->restarts,
              (long long)r->hvp_count);
  EXPECT_TRUE(r->converged);
  EXPECT_GE(r->restarts, 2);
  EXPECT_LE(worst, 1e-8);
  // The three returned copies span the eigenspace: their vectors are orthonormal.
  torch::Tensor V = torch::stack({r->smallest[0].vector, r->smallest[1].vector, r->smallest[2].vector});
  EXPECT_LE((V.mm(V.t()) - torch::eye(3, kF64)).abs().max().item<double>(), 1e-8);
}

TEST(Lanczos, TwoLayerLinearNetworkAtOrigin) {
  // L = (1/2N) Σ_n ‖W2 W1 x_n − y_n‖². At W1 = W2 = 0 only the bilinear term −(1/N) Σ y_nᵀ W2 W1 x_n is
  // second order, so H = [[0, Mᵀ], [M, 0]] with M coupling W1[b,:] and W2[:,b] by −C for each hidden
  // unit b, C = (1/N) Σ y_n x_nᵀ = YᵀX/N. Its nonzero eigenvalues are ±σ_i(C) (each h times).
  const int64_t N = 64, d = 20, c = 10, h = 8;
  auto gen = at::detail::createCPUGenerator(11);
  torch::Tensor X = torch::randn({N, d}, gen, kF64).to(torch::kFloat32);
  torch::Tensor Y = (X.to(torch::kFloat64).mm(torch::randn({d, c}, gen, kF64)) +
                     torch::randn({N, c}, gen, kF64)).to(torch::kFloat32);
  torch::Tensor C = Y.to(torch::kFloat64).t().mm(X.to(torch::kFloat64)) / N;
  torch::Tensor sigma = torch::linalg_svdvals(C);
  double sigma1 = sigma[0].item<double>();

  torch::Tensor W1 = torch::zeros({h, d}).requires_grad_(true), W2 = torch::zeros({c, h}).requires_grad_(true);
  auto loss = [&] { return 0.5 * (X.mm(W1.t()).mm(W2.t()) - Y).pow(2).sum() / N; };
  auto H = make_hvp(loss, {W1, W2});
  ASSERT_TRUE(H.ok()) << H.status().message();
  EXPECT_EQ(H->gradient.abs().max().item<float>(), 0.0f);  // the origin is a critical point
  LanczosOptions options;
  options.tol = 1e-4;
  auto r = lanczos_extreme(*H, options, gen);
  ASSERT_TRUE(r.ok()) << r.status().message();
  double dmin = rel_diff(r->lambda_min(), -sigma1), dmax = rel_diff(r->lambda_max(), sigma1);
  std::printf("[ max diff ] float32 HVPs: lambda_min rel %.3g, lambda_max rel %.3g (sigma_1 = %.6f);"
              " %lld HVPs, residuals %.3g %.3g\n", dmin, dmax, sigma1, (long long)r->hvp_count,
              r->smallest[0].residual, r->largest[0].residual);
  EXPECT_TRUE(r->converged);
  EXPECT_LE(dmin, 1e-3);
  EXPECT_LE(dmax, 1e-3);
  EXPECT_EQ(g_dot_v(H->gradient, r->smallest[0].vector), 0.0);
}

// A 5→4→3 tanh MLP in float64 at random (non-critical) parameters: an indefinite Hessian.
struct Mlp {
  torch::Tensor W1, b1, W2, b2, X, T;
  std::vector<torch::Tensor> params() const { return {W1, b1, W2, b2}; }
  torch::Tensor loss() const {
    torch::Tensor out = torch::tanh(X.mm(W1.t()) + b1).mm(W2.t()) + b2;
    return 0.5 * (out - T).pow(2).sum() / X.size(0);
  }
};

TEST(Spectrum, SmallMlpAgainstFullHessian) {
  auto gen = at::detail::createCPUGenerator(21);
  auto rnd = [&](std::vector<int64_t> shape) { return torch::randn(shape, gen, kF64); };
  Mlp mlp{rnd({4, 5}), rnd({4}), rnd({3, 4}), rnd({3}), rnd({16, 5}), rnd({16, 3})};
  for (auto& p : mlp.params()) p.requires_grad_(true);
  auto H = make_hvp([&] { return mlp.loss(); }, mlp.params());
  ASSERT_TRUE(H.ok()) << H.status().message();
  const int64_t n = H->n;
  ASSERT_EQ(n, 39);

  // The full Hessian, column by column from HVPs with unit vectors.
  torch::Tensor full = torch::zeros({n, n}, kF64);
  for (int64_t i = 0; i < n; ++i) full.select(1, i).copy_(H->apply(torch::eye(n, kF64)[i]));
  double asym = (full - full.t()).abs().max().item<double>();
  torch::Tensor exact = std::get<0>(torch::linalg_eigh(0.5 * (full + full.t()), "L"));
  std::vector<double> ev(exact.data_ptr<double>(), exact.data_ptr<double>() + n);
  double trace = full.trace().item<double>(), radius = std::max(-ev.front(), ev.back());
  double neg = static_cast<double>(std::count_if(ev.begin(), ev.end(), [&](double x) {
                 return x < -1e-6 * radius; })) / static_cast<double>(n);
  ASSERT_LT(ev.front(), 0);

  LanczosOptions lo;
  lo.k = 2;
  lo.tol = 1e-8;
  auto r = lanczos_extreme(*H, lo, gen);
  ASSERT_TRUE(r.ok()) << r.status().message();
  double dl = std::max({rel_diff(r->lambda_min(), ev[0]), rel_diff(r->lambda_max(), ev[n - 1]),
                        rel_diff(r->smallest[1].lambda, ev[1]), rel_diff(r->largest[1].lambda, ev[n - 2])});
  EXPECT_TRUE(r->converged);
  EXPECT_LE(dl, 1e-3);

  HutchinsonOptions ho;
  ho.samples = 400;
  auto t = hutchinson_trace(*H, ho, gen);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_LE(std::abs(t->trace - trace), 3 * t->standard_error);

  SlqOptions so;
  so.probes = 40;
  so.steps = 20;
  auto slq = slq_density(*H, so, gen);
  ASSERT_TRUE(slq.ok()) << slq.status().message();
  double wsum = 0;
  for (double w : slq->weights) wsum += w;
  EXPECT_NEAR(wsum, 1.0, 1e-12);
  EXPECT_LE(std::abs(slq->negative_mass - neg), 0.05);
  EXPECT_LE(slq->negative_mass_lower - 3 * slq->negative_mass_se, neg);
  EXPECT_GE(slq->negative_mass_upper + 3 * slq->negative_mass_se, neg);

  std::printf("[ max diff ] asymmetry of built Hessian %.3g; eigenvalues rel %.3g (lambda_min %.5f,"
              " lambda_max %.5f); trace %.5f vs %.5f (%.2f SE); negative mass %.4f vs %.4f (SE %.3g, bracket [%.4f, %.4f])\n",
              asym, dl, ev[0], ev[n - 1], t->trace, trace, std::abs(t->trace - trace) / t->standard_error,
              slq->negative_mass, neg, slq->negative_mass_se, slq->negative_mass_lower,
              slq->negative_mass_upper);
}

TEST(Hvp, Float64CopyOfAFloat32Model) {
  // The float64 workflow of hvp.h: copy float32 parameters into a float64 twin, then probe the twin.
  auto gen = at::detail::createCPUGenerator(41);
  auto rnd = [&](std::vector<int64_t> shape) { return torch::randn(shape, gen, kF64); };
  Mlp m64{rnd({4, 5}), rnd({4}), rnd({3, 4}), rnd({3}), rnd({16, 5}), rnd({16, 3})};
  Mlp m32{torch::zeros({4, 5}), torch::zeros({4}), torch::zeros({3, 4}), torch::zeros({3}),
          m64.X.to(torch::kFloat32), m64.T.to(torch::kFloat32)};
  for (auto& p : m32.params()) p.copy_(torch::randn(p.sizes(), gen)).requires_grad_(true);
  for (auto& p : m64.params()) p.requires_grad_(true);
  ASSERT_TRUE(copy_parameters(m32.params(), m64.params()).ok());
  EXPECT_FALSE(copy_parameters(m32.params(), {m64.W1}).ok());
  auto h32 = make_hvp([&] { return m32.loss(); }, m32.params());
  auto h64 = make_hvp([&] { return m64.loss(); }, m64.params());
  ASSERT_TRUE(h32.ok() && h64.ok());
  EXPECT_EQ(h64->options.dtype(), torch::kFloat64);
  torch::Tensor v = torch::randn({h64->n}, gen, kF64);
  torch::Tensor hv64 = h64->apply(v), hv32 = h32->apply(v.to(torch::kFloat32)).to(torch::kFloat64);
  double diff = ((hv32 - hv64).norm() / hv64.norm()).item<double>();
  std::printf("[ max diff ] float32 vs float64 HVP rel %.3g\n", diff);
  EXPECT_LE(diff, 1e-5);
  EXPECT_GT(diff, 0.0);  // they are different computations
}

// graph=true: on CUDA one HVP is captured and replayed; the replays must give the eager products' bits
// (the same kernels on the same buffers), and Lanczos the same eigenpairs. On the CPU graph is ignored.
TEST(Hvp, GraphedProductsGiveTheBitsOfEagerOnes) {
  const bool cuda = torch::cuda::is_available() && gpu::cuda_graphs_available();
  const auto device = cuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  const auto f32 = torch::TensorOptions().device(device);
  auto gen = at::detail::createCPUGenerator(5);
  auto rnd = [&](std::vector<int64_t> shape) { return torch::randn(shape, gen).to(device); };
  Mlp mlp{rnd({64, 32}), rnd({64}), rnd({8, 64}), rnd({8}), rnd({256, 32}), rnd({256, 8})};
  for (auto& p : mlp.params()) p.requires_grad_(true);
  gpu::SideStream stream(device);
  auto eager = make_hvp([&] { return mlp.loss(); }, mlp.params());
  auto graphed = make_hvp([&] { return mlp.loss(); }, mlp.params(), /*graph=*/true);
  ASSERT_TRUE(eager.ok() && graphed.ok());
  for (int i = 0; i < 5; ++i) {  // the eager call, the capture, then replays
    torch::Tensor v = torch::randn({eager->n}, gen).to(f32);
    torch::Tensor a = eager->apply(v), b = graphed->apply(v);
    ASSERT_TRUE(torch::equal(a, b)) << "product " << i << ": max diff " << (a - b).abs().max().item<double>();
  }
  LanczosOptions lo;
  lo.tol = 1e-4;
  auto g1 = at::detail::createCPUGenerator(9), g2 = at::detail::createCPUGenerator(9);
  auto r1 = lanczos_extreme(*eager, lo, g1), r2 = lanczos_extreme(*graphed, lo, g2);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->lambda_min(), r2->lambda_min());
  EXPECT_EQ(r1->lambda_max(), r2->lambda_max());
  EXPECT_EQ(r1->hvp_count, r2->hvp_count);
  if (!cuda) GTEST_SKIP() << "no CUDA device: graph=true was checked to be ignored on the CPU";
}

TEST(Trajectory, HessianLipschitzOfCubic) {
  // L = Σ x³/6: H(x) = diag(x), so H(θ1)v − H(θ0)v = (θ1 − θ0)∘v.
  auto gen = at::detail::createCPUGenerator(31);
  torch::Tensor theta0 = torch::randn({50}, gen, kF64), step = 1e-2 * torch::randn({50}, gen, kF64);
  torch::Tensor v = torch::randn({50}, gen, kF64);
  auto hvp_at = [&](const torch::Tensor& theta) {
    torch::Tensor x = theta.clone().requires_grad_(true);
    auto H = make_hvp([&] { return x.pow(3).sum() / 6; }, {x});
    EXPECT_TRUE(H.ok());
    return H->apply(v);
  };
  auto L = hessian_lipschitz(hvp_at(theta0), hvp_at(theta0 + step), step);
  ASSERT_TRUE(L.ok()) << L.status().message();
  double want = (step * v).norm().item<double>() / step.norm().item<double>();
  std::printf("[ max diff ] Hessian-Lipschitz rel %.3g\n", rel_diff(*L, want));
  EXPECT_LE(rel_diff(*L, want), 1e-12);
  auto zero = hessian_lipschitz(v, v, torch::zeros({50}, kF64));
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("zero"), std::string::npos);
}

TEST(Errors, BadArgumentsAreStatuses) {
  torch::Tensor x = torch::randn({10}, kF64).requires_grad_(true);
  auto H = make_hvp([&] { return x.pow(2).sum(); }, {x});
  ASSERT_TRUE(H.ok());
  auto gen = at::detail::createCPUGenerator(1);
  auto lanczos_error = [&](int64_t k, double tol, int64_t max_it) {
    LanczosOptions o;
    o.k = k;
    o.tol = tol;
    o.max_iterations = max_it;
    auto r = lanczos_extreme(*H, o, gen);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(lanczos_error(0, 1e-3, 100).find("k must be >= 1"), std::string::npos);
  EXPECT_NE(lanczos_error(-2, 1e-3, 100).find("k must be >= 1"), std::string::npos);
  EXPECT_NE(lanczos_error(11, 1e-3, 100).find("exceeds the parameter count 10"), std::string::npos);
  EXPECT_NE(lanczos_error(1, 0.0, 100).find("tol"), std::string::npos);
  EXPECT_NE(lanczos_error(1, NAN, 100).find("tol"), std::string::npos);
  EXPECT_NE(lanczos_error(3, 1e-3, 2).find("max_iterations"), std::string::npos);
  // k = n is allowed: the whole spectrum (here 2, ten times).
  LanczosOptions all;
  all.k = 10;
  auto r = lanczos_extreme(*H, all, gen);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r->lambda_min(), 2.0, 1e-12);
  EXPECT_TRUE(r->converged);

  // A diverged model: NaN curvature is an error, not a number.
  torch::Tensor diverged = torch::full({10}, NAN, kF64).requires_grad_(true);
  auto Hnan = make_hvp([&] { return diverged.pow(3).sum(); }, {diverged});
  ASSERT_TRUE(Hnan.ok());
  auto rnan = lanczos_extreme(*Hnan, LanczosOptions{}, gen);
  ASSERT_FALSE(rnan.ok());
  EXPECT_NE(rnan.status().message().find("non-finite"), std::string::npos);
  EXPECT_FALSE(hutchinson_trace(*Hnan, HutchinsonOptions{}, gen).ok());
  EXPECT_FALSE(slq_density(*Hnan, SlqOptions{}, gen).ok());

  EXPECT_FALSE(hutchinson_trace(*H, HutchinsonOptions{1}, gen).ok());
  EXPECT_FALSE(slq_density(*H, SlqOptions{0}, gen).ok());
  EXPECT_FALSE(make_hvp([&] { return x.pow(2).sum(); }, {}).ok());
  EXPECT_FALSE(make_hvp([&] { return x * 2; }, {x}).ok());                        // not a scalar
  EXPECT_FALSE(make_hvp([&] { return x.pow(2).sum(); }, {x.detach()}).ok());      // no grad
  EXPECT_FALSE(make_hvp([&] { return torch::ones({}, kF64); }, {x}).ok());        // no dependence
  EXPECT_FALSE(make_hvp([&] { return x.sum(); }, {x, torch::zeros({2}).requires_grad_(true)}).ok());
}

}  // namespace
}  // namespace saddlescope::probes
