// softmax's and log_softmax's input gradients: closed forms, softmax's exact value against GMP rationals and
// log_softmax's correct rounding against MPFR at 3000 bits (both computed here independently), naive
// kernels within the bound or allowance, wrong values beyond it.
#include "saddlescope/reference/softmax_backward.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <mpfr.h>

#include <random>
#include <vector>

#include "rational.h"

namespace saddlescope::reference {
namespace {

using testing::Rational;

// y_i·(g_i − Σ g_j y_j) as a GMP rational, sharing no code with the module.
template <class T>
void exact_value(const std::vector<T>& g, const std::vector<T>& y, size_t i, Rational& out) {
  testing::exact_dot(g.data(), y.data(), static_cast<int64_t>(g.size()), out);
  Rational gi(static_cast<double>(g[i])), yi(static_cast<double>(y[i]));
  mpq_sub(out.get(), gi.get(), out.get());
  mpq_mul(out.get(), out.get(), yi.get());
}

// A softmax output row (float32, as a forward kernel leaves it) and a gradient arriving at it.
struct Row {
  std::vector<float> y, g;
};
Row random_row(std::mt19937_64& rng, int n, double scale) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(normal(rng));
  float m = -INFINITY, s = 0;
  for (float v : x) m = std::max(m, v);
  for (float v : x) s += std::exp(v - m);
  Row r;
  for (float v : x) r.y.push_back(std::exp(v - m) / s);
  for (int k = 0; k < n; ++k) r.g.push_back(static_cast<float>(normal(rng)));
  return r;
}

TEST(SoftmaxBackward, ClosedForms) {
  // g = 1 everywhere on a row summing to 1 exactly: 0, exactly.
  const std::vector<float> y = {0.25f, 0.5f, 0.125f, 0.125f}, ones(4, 1.0f);
  for (int64_t i = 0; i < 4; ++i) {
    auto e = evaluate_softmax_backward(ones.data(), y.data(), 4, i);
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_TRUE(e->exact.is_zero());
    EXPECT_TRUE(e->exact_is_exact);
    EXPECT_EQ(e->f32, 0.0f);
    EXPECT_EQ(e->rounding_steps, 6);
    EXPECT_STREQ(op_name(e->op), "softmax_backward");
  }
  // g = c everywhere: c·y_i·(1 − Σy), exactly, when the row does not sum to 1 (1/3 rounded three times).
  const std::vector<float> third(3, 1.0f / 3), c(3, 3.0f);
  const double defect = 1.0 - 3.0 * static_cast<double>(1.0f / 3);  // exact in binary64
  EXPECT_EQ(evaluate_softmax_backward(c.data(), third.data(), 3, 1)->f64, 3.0 * (1.0f / 3) * defect);
  // One-hot g at k: −y_i·y_k for i ≠ k, y_k·(1 − y_k) at k; both exact in binary64 for float32 inputs.
  const std::vector<float> p = {0.1f, 0.7f, 0.2f}, hot = {0, 1, 0};
  for (int64_t i = 0; i < 3; ++i) {
    auto e = evaluate_softmax_backward(hot.data(), p.data(), 3, i);
    const double want = i == 1 ? double{p[1]} * (1.0 - double{p[1]}) : -double{p[i]} * double{p[1]};
    EXPECT_EQ(e->f64, want) << i;
    EXPECT_EQ(e->f32, static_cast<float>(want)) << i;
    EXPECT_TRUE(e->exact_is_exact);
  }
  // n = 1: y·(g − g·y).
  const float g1 = 2.5f, y1 = 0.75f;
  EXPECT_EQ(evaluate_softmax_backward(&g1, &y1, 1, 0)->f64, 0.75 * (2.5 - 2.5 * 0.75));
}

// The exact value equals GMP's, and f32/f64 are its correct roundings, float32 and float64 rows.
TEST(SoftmaxBackward, ExactAgainstRationals) {
  std::mt19937_64 rng(61);
  int checked = 0;
  for (int n : {1, 2, 7, 64, 300}) {
    for (double scale : {0.5, 4.0, 30.0}) {
      const Row r = random_row(rng, n, scale);
      const std::vector<double> y64(r.y.begin(), r.y.end());
      std::vector<double> g64;
      for (float v : r.g) g64.push_back(static_cast<double>(v) * (1 + 0x1p-40));  // not float32 values
      for (int64_t i : {int64_t{0}, int64_t(n / 2), int64_t(n - 1)}) {
        Rational want;
        exact_value(r.g, r.y, i, want);
        auto e = evaluate_softmax_backward(r.g.data(), r.y.data(), n, i);
        ASSERT_TRUE(e.ok());
        EXPECT_TRUE(e->exact_is_exact);
        mpfr_t v;
        mpfr_init2(v, 53);
        mpfr_set_q(v, want.get(), MPFR_RNDN);
        EXPECT_EQ(e->f64, mpfr_get_d(v, MPFR_RNDN)) << "n=" << n << " i=" << i;
        mpfr_set_prec(v, 24);
        mpfr_set_q(v, want.get(), MPFR_RNDN);
        EXPECT_EQ(e->f32, mpfr_get_flt(v, MPFR_RNDN)) << "n=" << n << " i=" << i;
        Rational want64;
        exact_value(g64, y64, i, want64);
        mpfr_set_prec(v, 53);
        mpfr_set_q(v, want64.get(), MPFR_RNDN);
        EXPECT_EQ(evaluate_softmax_backward(g64.data(), y64.data(), n, i)->f64, mpfr_get_d(v, MPFR_RNDN));
        mpfr_clear(v);
        ++checked;
      }
    }
  }
  std::printf("%d softmax_backward elements exact (float32 and float64 rows)\n", checked);
}

// A long double computation lies within the float64 bound; naive float32 kernels (both forms of the
// header) within the float32 bound. The largest error/bound ratios are printed.
TEST(SoftmaxBackward, KernelsAreWithinTheBound) {
  std::mt19937_64 rng(62);
  double ratio32 = 0, ratio_cuda = 0, ratio64 = 0, ulps32 = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 1 + trial * 5;
    const Row r = random_row(rng, n, trial % 2 ? 6.0 : 0.7);
    float d = 0;
    long double dl = 0;
    for (int j = 0; j < n; ++j) d += r.g[j] * r.y[j], dl += static_cast<long double>(r.g[j]) * r.y[j];
    for (int64_t i = 0; i < n; ++i) {
      auto e = evaluate_softmax_backward(r.g.data(), r.y.data(), n, i);
      ASSERT_TRUE(e.ok());
      const ErrorReport a = assess(*e, r.y[i] * (r.g[i] - d));
      const ErrorReport b = assess(*e, r.y[i] * r.g[i] - r.y[i] * d);
      const ErrorReport c = assess(*e, static_cast<double>(r.y[i] * (r.g[i] - dl)));
      EXPECT_TRUE(a.matches) << "n=" << n << " i=" << i << ": " << a.bound_ratio;
      EXPECT_TRUE(b.matches) << "n=" << n << " i=" << i << ": " << b.bound_ratio;
      EXPECT_TRUE(c.matches) << "n=" << n << " i=" << i << ": " << c.bound_ratio;
      EXPECT_LE(std::fabs(c.ulp_error), 1.0);  // 64 bits of long double, one rounding to binary64
      ratio32 = std::max(ratio32, a.bound_ratio);
      ratio_cuda = std::max(ratio_cuda, b.bound_ratio);
      ratio64 = std::max(ratio64, c.bound_ratio);
      ulps32 = std::max(ulps32, std::fabs(a.ulp_error));
    }
  }
  std::printf("softmax_backward: max error/bound float32 y(g − D) %.3g, y·g − y·D %.3g, long double %.3g; "
              "max |ULP| float32 %.3g\n", ratio32, ratio_cuda, ratio64, ulps32);
}

TEST(SoftmaxBackward, WrongValuesAreBeyondTheBound) {
  std::mt19937_64 rng(63);
  const Row r = random_row(rng, 9, 1.0);
  for (int64_t i = 0; i < 9; ++i) {
    auto e = evaluate_softmax_backward(r.g.data(), r.y.data(), 9, i);
    const float v = e->f32, off = v + 1000 * (std::nextafter(v, INFINITY) - v);
    EXPECT_TRUE(assess(*e, v).matches);
    const ErrorReport bad = assess(*e, off);
    EXPECT_FALSE(bad.matches) << i << ": " << bad.bound_ratio;
    EXPECT_GT(bad.bound_ratio, 3) << i;
  }
  // The gradient of log_softmax taken for softmax's (g_i − Σg·e^ℓ, without the factor y_i): far beyond.
  float sum_g = 0;
  for (float v : r.g) sum_g += v;
  auto e = evaluate_softmax_backward(r.g.data(), r.y.data(), 9, 4);
  EXPECT_FALSE(assess(*e, r.g[4] - r.y[4] * sum_g).matches);
}

TEST(SoftmaxBackward, NonFiniteInputs) {
  const std::vector<double> y = {0.5, 0.5, 0.0}, g_nan = {1, NAN, 2}, g_inf = {1, 2, INFINITY};
  auto e = evaluate_softmax_backward(g_nan.data(), y.data(), 3, 0);
  EXPECT_EQ(e->kind, Kind::kNaN);
  EXPECT_EQ(e->first_nonfinite, 1);
  e = evaluate_softmax_backward(g_inf.data(), y.data(), 3, 0);  // inf·0 in D: NaN
  EXPECT_EQ(e->kind, Kind::kNaN);
  EXPECT_EQ(e->first_nonfinite, 2);
  const std::vector<double> y2 = {0.5, 0.25, 0.25};
  e = evaluate_softmax_backward(g_inf.data(), y2.data(), 3, 0);  // 0.5·(1 − inf)
  EXPECT_EQ(e->kind, Kind::kMinusInf);
  EXPECT_EQ(e->f64, -INFINITY);
  EXPECT_TRUE(assess(*e, -INFINITY).matches);
}

TEST(SoftmaxBackward, BadInputsAreOneLineErrors) {
  const std::vector<float> x = {1, 2};
  auto expect_error = [](const Result<Evaluation>& r, const char* want) {
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  };
  expect_error(evaluate_softmax_backward(x.data(), x.data(), 0, 0), "softmax_backward: needs at least one element, got n = 0");
  expect_error(evaluate_softmax_backward(static_cast<const float*>(nullptr), x.data(), 2, 0),
               "softmax_backward: grad_output is null but has length 2");
  expect_error(evaluate_softmax_backward(x.data(), static_cast<const float*>(nullptr), 2, 0), "softmax_backward: output is null");
  expect_error(evaluate_softmax_backward(x.data(), x.data(), 2, 2), "softmax_backward: i = 2 is outside [0, 2)");
}

// bound(f) = γ_{n+2}(f)·|y_i|(|g_i| + Σ|g_j y_j|).
TEST(SoftmaxBackward, BoundIsGammaNPlus2) {
  const std::vector<float> y = {0.5f, 0.25f, 0.25f}, g = {-2.0f, 1.0f, 4.0f};
  auto e = evaluate_softmax_backward(g.data(), y.data(), 3, 0);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->abs_sum, 0.5 * (2 + (1 + 0.25 + 1)));
  EXPECT_EQ(e->bound(Format::kFloat32), gamma_n(5, Format::kFloat32) * e->abs_sum);
  EXPECT_EQ(e->f64, 0.5 * (-2 - (-1 + 0.25 + 1)));
}

}  // namespace
}  // namespace saddlescope::reference

namespace saddlescope::reference {
namespace {

// g_i − e^ℓ·Σg at 3000 bits, from the definition, rounded to `bits` (24 or 53).
double log_backward_3000(const std::vector<double>& g, double l, size_t i, mpfr_prec_t bits) {
  mpfr_t s, t;
  mpfr_inits2(3000, s, t, static_cast<mpfr_ptr>(nullptr));
  mpfr_set_ui(s, 0, MPFR_RNDN);
  for (double v : g) mpfr_add_d(s, s, v, MPFR_RNDN);
  mpfr_set_d(t, l, MPFR_RNDN);
  mpfr_exp(t, t, MPFR_RNDN);
  mpfr_mul(t, t, s, MPFR_RNDN);
  mpfr_d_sub(t, g[i], t, MPFR_RNDN);
  mpfr_prec_round(t, bits, MPFR_RNDN);
  const double v = bits == 24 ? static_cast<double>(mpfr_get_flt(t, MPFR_RNDN)) : mpfr_get_d(t, MPFR_RNDN);
  mpfr_clears(s, t, static_cast<mpfr_ptr>(nullptr));
  return v;
}

TEST(LogSoftmaxBackward, ClosedForms) {
  const std::vector<float> g = {0.5f, -1.5f, 1.0f}, l = {-1.0986123f, 0.0f, -INFINITY};
  auto e = evaluate_log_softmax_backward(g.data(), l.data(), 3, 1);  // Σg = 0: g_i
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->f32, -1.5f);
  EXPECT_TRUE(e->exact_is_exact);
  EXPECT_STREQ(op_name(e->op), "log_softmax_backward");
  const std::vector<float> h = {0.25f, 2.0f, 1.0f};
  EXPECT_EQ(evaluate_log_softmax_backward(h.data(), l.data(), 3, 1)->f64, 2.0 - 3.25);  // ℓ = 0: g_i − G
  EXPECT_EQ(evaluate_log_softmax_backward(h.data(), l.data(), 3, 2)->f64, 1.0);         // ℓ = −inf: g_i
  auto irr = evaluate_log_softmax_backward(h.data(), l.data(), 3, 0);
  EXPECT_FALSE(irr->exact_is_exact);
  EXPECT_EQ(irr->rounding_steps, 3);
}

TEST(LogSoftmaxBackward, CorrectlyRoundedAndKernelsWithinTheAllowance) {
  std::mt19937_64 rng(64);
  std::normal_distribution<double> normal(0, 1);
  double ratio32 = 0, ratio64 = 0;
  int checked = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 1 + trial * 7;
    std::vector<float> x(n), g(n);
    for (int j = 0; j < n; ++j) x[j] = static_cast<float>(normal(rng) * (trial % 2 ? 5 : 1)), g[j] = static_cast<float>(normal(rng));
    float m = -INFINITY, s = 0, sum_g = 0;
    for (float v : x) m = std::max(m, v);
    for (float v : x) s += std::exp(v - m);
    std::vector<float> l;
    for (float v : x) l.push_back((v - m) - std::log(s));
    for (float v : g) sum_g += v;
    const std::vector<double> g64(g.begin(), g.end());
    double sum64 = 0;
    for (double v : g64) sum64 += v;
    for (int64_t i = 0; i < n; i += 3) {
      auto e = evaluate_log_softmax_backward(g.data(), l.data(), n, i);
      ASSERT_TRUE(e.ok());
      EXPECT_EQ(e->f64, log_backward_3000(g64, l[i], i, 53)) << "n=" << n << " i=" << i;
      EXPECT_EQ(static_cast<double>(e->f32), log_backward_3000(g64, l[i], i, 24)) << "n=" << n << " i=" << i;
      const ErrorReport r = assess(*e, g[i] - std::exp(l[i]) * sum_g);
      const ErrorReport r64 = assess(*e, g64[i] - std::exp(static_cast<double>(l[i])) * sum64);
      EXPECT_TRUE(r.matches) << "n=" << n << " i=" << i << ": " << r.bound_ratio;
      EXPECT_TRUE(r64.matches) << "n=" << n << " i=" << i << ": " << r64.bound_ratio;
      ratio32 = std::max(ratio32, r.bound_ratio);
      ratio64 = std::max(ratio64, r64.bound_ratio);
      ++checked;
    }
  }
  // Up to ~1 where g_i dominates: the final subtraction's rounding alone may take u|value|, all of the
  // allowance's last term.
  std::printf("%d log_softmax_backward elements correctly rounded; naive max error/bound float32 %.3g, "
              "float64 %.3g\n", checked, ratio32, ratio64);
}

// 1000 ULPs off is beyond the allowance on a short row where g_i − e^ℓG does not cancel (the allowance
// is absolute: γ_n·e^ℓΣ|g| and ~9u|e^ℓG|); softmax's gradient observed for log_softmax's is far beyond.
TEST(LogSoftmaxBackward, WrongValuesAreBeyondTheAllowance) {
  const std::vector<float> g = {0.8f, -0.3f, 0.1f, 0.45f, -0.2f}, l = {-1.2f, -2.5f, -0.9f, -3.1f, -1.7f};
  for (int64_t i = 0; i < 5; ++i) {
    auto e = evaluate_log_softmax_backward(g.data(), l.data(), 5, i);
    const float v = e->f32, off = v + 1000 * (std::nextafter(v, INFINITY) - v);
    EXPECT_TRUE(assess(*e, v).matches) << i;
    const ErrorReport r = assess(*e, off);
    EXPECT_FALSE(r.matches) << i << ": " << r.bound_ratio;
  }
  auto e = evaluate_log_softmax_backward(g.data(), l.data(), 5, 0);
  const float y0 = std::exp(l[0]);
  EXPECT_FALSE(assess(*e, y0 * (g[0] - (0.8f * y0 - 0.3f * std::exp(l[1])))).matches);
}

TEST(LogSoftmaxBackward, NonFiniteAndBadInputs) {
  const std::vector<double> g = {1, NAN}, l = {-0.5, -1.0}, l_inf = {INFINITY, 0};
  EXPECT_EQ(evaluate_log_softmax_backward(g.data(), l.data(), 2, 0)->kind, Kind::kNaN);
  EXPECT_EQ(evaluate_log_softmax_backward(g.data(), l.data(), 2, 0)->first_nonfinite, 1);
  const std::vector<double> g2 = {1, 2};
  auto e = evaluate_log_softmax_backward(g2.data(), l_inf.data(), 2, 0);  // 1 − inf·3
  EXPECT_EQ(e->kind, Kind::kMinusInf);
  EXPECT_EQ(e->first_nonfinite, 2);
  auto r = evaluate_log_softmax_backward(g2.data(), l.data(), 2, 5);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "log_softmax_backward: i = 5 is outside [0, 2)");
}

}  // namespace
}  // namespace saddlescope::reference
