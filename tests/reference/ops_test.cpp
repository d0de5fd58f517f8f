// matmul, conv2d and weight-gradient elements and the mean losses: exact values against GMP rationals
// computed straight from the definitions, roundings against MPFR, bounds on naive float32 kernels.
#include "saddlescope/reference/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "rational.h"
#include "saddlescope/reference/oracle.h"

namespace saddlescope::reference {
namespace {

using testing::Rational;

void add_product(Rational& sum, double x, double y) {
  Rational a(x), b(y);
  mpq_mul(a.get(), a.get(), b.get());
  mpq_add(sum.get(), sum.get(), a.get());
}

// The evaluation's value (exact_decimal, "/divisor" included) equals q, and f32/f64 are q rounded once.
void expect_value(const Evaluation& e, const Rational& q, const char* what) {
  const std::string s = e.exact_decimal();
  const size_t slash = s.find('/');
  Rational parsed, divisor;
  ASSERT_TRUE(testing::parse_decimal(s.substr(0, slash), parsed)) << s;
  if (slash != std::string::npos) {
    ASSERT_EQ(mpq_set_str(divisor.get(), s.substr(slash + 1).c_str(), 10), 0) << s;
    mpq_div(parsed.get(), parsed.get(), divisor.get());
  }
  EXPECT_TRUE(mpq_equal(parsed.get(), q.get())) << what << ": " << s;
  EXPECT_EQ(e.f64, testing::to_double(q)) << what;
  EXPECT_EQ(e.f32, testing::to_float(q)) << what;
}

std::vector<float> random_floats(size_t n, std::mt19937_64& rng, int spread = 8) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-spread, spread);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(std::ldexp(unit(rng), exponent(rng)));
  return v;
}

TEST(Ops, MatmulElementWithStridesMatchesRationalsAndTheOracle) {
  std::mt19937_64 rng(21);
  const int64_t m = 5, k = 37, n = 6;
  const auto a = random_floats(m * k, rng), b = random_floats(k * n, rng);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      auto e = evaluate_matmul_element(&a[i * k], 1, &b[j], n, k);
      ASSERT_TRUE(e.ok()) << e.status().message();
      EXPECT_EQ(e->op, Op::kMatmul);
      EXPECT_EQ(e->rounding_steps, k);
      Rational q;
      std::vector<float> row, col;
      float naive = 0;
      for (int64_t t = 0; t < k; ++t) {
        add_product(q, a[i * k + t], b[t * n + j]);
        row.push_back(a[i * k + t]);
        col.push_back(b[t * n + j]);
        naive += a[i * k + t] * b[t * n + j];
      }
      expect_value(*e, q, "matmul");
      auto oracle = oracle_dot(row.data(), k, col.data(), k);
      ASSERT_TRUE(oracle.ok());
      EXPECT_TRUE(e->exact == oracle->exact);
      EXPECT_EQ(e->abs_sum, oracle->abs_sum);
      EXPECT_TRUE(assess(*e, naive).matches);
    }
  }
  EXPECT_EQ(evaluate_matmul_element(a.data(), 0, b.data(), 1, 3).status().message(),
            "matmul: strides must be >= 1, got 0 and 1");
}

// out[oy][ox] of one batch item and output channel, from the definition, as a rational and naively.
void conv_reference(const std::vector<float>& x, const std::vector<float>& w, const float* bias,
                    const Conv2dGeometry& g, int64_t oy, int64_t ox, Rational& q, float& naive) {
  mpq_set_ui(q.get(), 0, 1);
  naive = bias ? *bias : 0.0f;
  if (bias) add_product(q, *bias, 1.0);
  for (int64_t c = 0; c < g.channels; ++c)
    for (int64_t ky = 0; ky < g.kernel_h; ++ky)
      for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
        const int64_t iy = oy * g.stride_h - g.pad_h + ky * g.dilation_h;
        const int64_t ix = ox * g.stride_w - g.pad_w + kx * g.dilation_w;
        if (iy < 0 || iy >= g.height || ix < 0 || ix >= g.width) continue;
        const float xv = x[(c * g.height + iy) * g.width + ix], wv = w[(c * g.kernel_h + ky) * g.kernel_w + kx];
        add_product(q, xv, wv);
        naive += xv * wv;
      }
}

std::vector<Conv2dGeometry> geometries() {
  Conv2dGeometry plain{3, 6, 7, 3, 3};
  Conv2dGeometry padded = plain;
  padded.pad_h = padded.pad_w = 1;
  Conv2dGeometry strided{2, 9, 8, 3, 2, 2, 3, 2, 1, 2, 1};  // stride, padding and dilation differ by axis
  Conv2dGeometry wide{16, 5, 5, 5, 5, 1, 1, 2, 2};         // a 5x5 kernel, mostly over padding at corners
  return {plain, padded, strided, wide};
}

TEST(Ops, Conv2dElementsMatchTheDefinition) {
  std::mt19937_64 rng(22);
  int checked = 0;
  double max_ratio = 0;
  for (const Conv2dGeometry& g : geometries()) {
    ASSERT_TRUE(validate(g).ok()) << validate(g).message();
    const auto x = random_floats(g.channels * g.height * g.width, rng);
    const auto w = random_floats(g.channels * g.kernel_h * g.kernel_w, rng);
    const float bias = 0.375f;
    for (int64_t oy = 0; oy < g.out_height(); ++oy) {
      for (int64_t ox = 0; ox < g.out_width(); ++ox) {
        for (const float* b : {static_cast<const float*>(nullptr), &bias}) {
          auto e = evaluate_conv2d_element(x.data(), static_cast<int64_t>(x.size()), w.data(),
                                           static_cast<int64_t>(w.size()), b, g, oy, ox);
          ASSERT_TRUE(e.ok()) << e.status().message();
          Rational q;
          float naive;
          conv_reference(x, w, b, g, oy, ox, q, naive);
          expect_value(*e, q, "conv2d");
          const ErrorReport r = assess(*e, naive);
          EXPECT_TRUE(r.matches) << "ratio " << r.bound_ratio;
          max_ratio = std::max(max_ratio, r.bound_ratio);
          ++checked;
        }
      }
    }
  }
  std::printf("conv2d: %d elements exact; naive float32 max |error| / bound = %.3g\n", checked, max_ratio);
}

TEST(Ops, Conv2dWeightGradientMatchesTheDefinition) {
  std::mt19937_64 rng(23);
  for (const Conv2dGeometry& g : geometries()) {
    const int64_t batch = 3, oh = g.out_height(), ow = g.out_width();
    const auto in = random_floats(batch * g.height * g.width, rng);
    const auto grad = random_floats(batch * oh * ow, rng);
    for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
      for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
        auto e = evaluate_conv2d_weight_grad(in.data(), static_cast<int64_t>(in.size()), grad.data(),
                                             static_cast<int64_t>(grad.size()), batch, g, ky, kx);
        ASSERT_TRUE(e.ok()) << e.status().message();
        EXPECT_EQ(e->op, Op::kConv2dWeightGrad);
        Rational q;
        float naive = 0;
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t oy = 0; oy < oh; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox) {
              const int64_t iy = oy * g.stride_h - g.pad_h + ky * g.dilation_h;
              const int64_t ix = ox * g.stride_w - g.pad_w + kx * g.dilation_w;
              if (iy < 0 || iy >= g.height || ix < 0 || ix >= g.width) continue;
              const float gv = grad[(b * oh + oy) * ow + ox], xv = in[(b * g.height + iy) * g.width + ix];
              add_product(q, gv, xv);
              naive += gv * xv;
            }
        expect_value(*e, q, "conv2d_wgrad");
        EXPECT_TRUE(assess(*e, naive).matches);
      }
    }
  }
}

TEST(Ops, Conv2dInputErrorsNameTheProblem) {
  const Conv2dGeometry g{2, 4, 4, 3, 3};
  std::vector<float> x(32, 1.0f), w(18, 1.0f);
  EXPECT_EQ(evaluate_conv2d_element(x.data(), 31, w.data(), 18, nullptr, g, 0, 0).status().message(),
            "conv2d: input has 31 elements, expected 32 (C·H·W)");
  EXPECT_EQ(evaluate_conv2d_element(x.data(), 32, w.data(), 18, nullptr, g, 2, 0).status().message(),
            "conv2d: oy = 2 is outside [0, 2)");
  Conv2dGeometry bad = g;
  bad.stride_w = 0;
  EXPECT_EQ(validate(bad).message(), "conv2d: stride_w must be >= 1, got 0");
  bad = g;
  bad.kernel_h = 5;
  EXPECT_FALSE(validate(bad).ok());
  EXPECT_EQ(evaluate_conv2d_weight_grad(x.data(), 32, w.data(), 8, 2, g, 3, 0).status().message(),
            "conv2d_wgrad: ky = 3 is outside [0, 3)");
  x[5] = NAN;  // channel 0, row 1, column 1: inside the receptive field of (0, 0)
  auto e = evaluate_conv2d_element(x.data(), 32, w.data(), 18, nullptr, g, 0, 0);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind, Kind::kNaN);
  EXPECT_EQ(e->first_nonfinite, 4);  // term order (c, ky, kx): (0, 1, 1)
}

// sum (x - y)^2 / n or sum |x - y| / n as a rational.
template <class T>
void loss_reference(Op op, const std::vector<T>& x, const std::vector<T>& y, Rational& q) {
  mpq_set_ui(q.get(), 0, 1);
  for (size_t i = 0; i < x.size(); ++i) {
    Rational d(static_cast<double>(x[i])), t(static_cast<double>(y[i]));
    mpq_sub(d.get(), d.get(), t.get());
    if (op == Op::kMseLoss) mpq_mul(d.get(), d.get(), d.get());
    else mpq_abs(d.get(), d.get());
    mpq_add(q.get(), q.get(), d.get());
  }
  Rational n(static_cast<double>(x.size()));
  mpq_div(q.get(), q.get(), n.get());
}

template <class T>
T naive_loss(Op op, const std::vector<T>& x, const std::vector<T>& y) {
  T s = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const T d = x[i] - y[i];
    s += op == Op::kMseLoss ? d * d : std::fabs(d);
  }
  return s / static_cast<T>(x.size());
}

TEST(Ops, MeanLossesAreExactRationalsRoundedOnce) {
  std::mt19937_64 rng(24);
  double max_ratio = 0;
  for (Op op : {Op::kMseLoss, Op::kMaeLoss}) {
    for (size_t n : {1u, 3u, 7u, 64u, 100u, 1000u}) {
      for (int rep = 0; rep < 4; ++rep) {
        const auto x = random_floats(n, rng, rep * 10), y = random_floats(n, rng, rep * 10);
        auto e = op == Op::kMseLoss ? evaluate_mse_loss(x.data(), n, y.data(), n)
                                    : evaluate_mae_loss(x.data(), n, y.data(), n);
        ASSERT_TRUE(e.ok());
        EXPECT_EQ(e->divisor % 2, 1);
        Rational q;
        loss_reference(op, x, y, q);
        expect_value(*e, q, op_name(op));
        // The ULP error of the naive value, recomputed from the rational: (naive - q) / ulp(q).
        const float naive = naive_loss(op, x, y);
        const ErrorReport r = assess(*e, naive);
        Rational err(static_cast<double>(naive));
        mpq_sub(err.get(), err.get(), q.get());
        int top;
        std::frexp(e->f64, &top);  // q is far from a power of two here, so f64 has q's binade
        if (24 - top >= 0) mpq_mul_2exp(err.get(), err.get(), static_cast<mp_bitcnt_t>(24 - top));
        else mpq_div_2exp(err.get(), err.get(), static_cast<mp_bitcnt_t>(top - 24));
        EXPECT_EQ(r.ulp_error, testing::to_double(err)) << op_name(op) << " n=" << n;
        EXPECT_TRUE(r.matches) << op_name(op) << " n=" << n << " ratio " << r.bound_ratio;
        max_ratio = std::max(max_ratio, r.bound_ratio);
      }
    }
  }
  std::printf("mean losses: naive float32 max |error| / bound = %.3g\n", max_ratio);
}

TEST(Ops, MeanLossEdgeCases) {
  const std::vector<float> x = {1, 2, 3}, y = {1, 2};
  EXPECT_EQ(evaluate_mse_loss(x.data(), 3, y.data(), 2).status().message(),
            "mse_loss: lengths differ: x has 3 elements, y has 2");
  auto empty = evaluate_mae_loss(x.data(), 0, y.data(), 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->kind, Kind::kNaN);
  const std::vector<double> a = {1, INFINITY, 2}, b = {1, 5, INFINITY}, c = {1, INFINITY, 2};
  EXPECT_EQ(evaluate_mse_loss(a.data(), 3, b.data(), 3)->kind, Kind::kPlusInf);
  auto same = evaluate_mse_loss(a.data(), 3, c.data(), 3);  // inf - inf
  EXPECT_EQ(same->kind, Kind::kNaN);
  EXPECT_EQ(same->first_nonfinite, 1);
  // Exactly representable: mean((0.5)^2, (1.5)^2) = 1.25; divisor 1 for n = 2.
  const std::vector<float> p = {1, 2}, t = {0.5f, 0.5f};
  auto m = evaluate_mse_loss(p.data(), 2, t.data(), 2);
  EXPECT_EQ(m->exact_decimal(), "1.25");
  EXPECT_EQ(m->divisor, 1);
  auto third = evaluate_mae_loss(p.data(), 1, t.data(), 1);
  EXPECT_EQ(third->exact_decimal(), "0.5");
  const std::vector<float> p3 = {1, 0, 0}, t3 = {0, 0, 0};
  EXPECT_EQ(evaluate_mae_loss(p3.data(), 3, t3.data(), 3)->exact_decimal(), "1/3");
}

TEST(Ops, WrongLossBeyondTheBoundIsFlagged) {
  std::mt19937_64 rng(25);
  const auto x = random_floats(256, rng), y = random_floats(256, rng);
  auto e = evaluate_mse_loss(x.data(), 256, y.data(), 256);
  ASSERT_TRUE(e.ok());
  auto stale = y;
  stale[3] = x[3] + 1;  // an overwritten target (DESIGN.md's aliasing story)
  const ErrorReport r = assess(*e, naive_loss(Op::kMseLoss, x, stale));
  EXPECT_FALSE(r.matches) << "ratio " << r.bound_ratio;
  EXPECT_GT(r.bound_ratio, 10);
  std::printf("stale target in MSE: bound ratio %.3g\n", r.bound_ratio);
}

TEST(Ops, MseLossGradientIsTheExactRationalRoundedOnce) {
  std::mt19937_64 rng(26);
  double max_ratio = 0;
  for (int64_t n : {1, 3, 6, 64, 784, 1000}) {
    const auto x = random_floats(8, rng), y = random_floats(8, rng), g = random_floats(8, rng, 2);
    for (size_t i = 0; i < x.size(); ++i) {
      auto e = evaluate_mse_loss_grad(x[i], y[i], g[i], n);
      ASSERT_TRUE(e.ok());
      EXPECT_EQ(e->divisor % 2, 1);
      Rational q(static_cast<double>(x[i])), t(static_cast<double>(y[i])), gg(static_cast<double>(g[i]));
      mpq_sub(q.get(), q.get(), t.get());
      mpq_mul(q.get(), q.get(), gg.get());
      mpq_mul_2exp(q.get(), q.get(), 1);
      Rational nn(static_cast<double>(n));
      mpq_div(q.get(), q.get(), nn.get());
      expect_value(*e, q, "mse_loss_grad");
      // What a framework computes (norm = 2/n in float32, then two products) lies within gamma_5.
      const float norm = static_cast<float>(2.0 / static_cast<double>(n));
      const ErrorReport r = assess(*e, (x[i] - y[i]) * norm * g[i]);
      EXPECT_TRUE(r.matches) << "n=" << n << " ratio " << r.bound_ratio;
      max_ratio = std::max(max_ratio, r.bound_ratio);
    }
  }
  std::printf("mse loss gradient: float32 max |error| / bound = %.3g\n", max_ratio);
  EXPECT_EQ(evaluate_mse_loss_grad(1.0f, 2.0f, 1.0f, 0).status().message(),
            "mse_loss_grad: the loss must have >= 1 element, got 0");
  EXPECT_EQ(evaluate_mse_loss_grad(double{INFINITY}, double{INFINITY}, 1.0, 4)->kind, Kind::kNaN);
  EXPECT_EQ(evaluate_mse_loss_grad(1.0, 0.5, 1.0, 4)->exact_decimal(), "0.25");
  // A gradient against an overwritten target (the planted alias-target fault) is far beyond the bound.
  auto e = evaluate_mse_loss_grad(0.75f, 0.25f, 1.0f, 784);
  EXPECT_FALSE(assess(*e, (0.75f - 0.5f) * (2.0f / 784)).matches);
}

}  // namespace
}  // namespace saddlescope::reference
