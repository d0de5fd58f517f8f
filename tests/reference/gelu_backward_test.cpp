// GELU's input gradient (erf and tanh forms): exact cases and limits, correct rounding against MPFR at
// 600 bits computed here from the derivative's literal formula, PyTorch's float32 and float64 backward
// kernels within the stated allowance (also near gelu's minimum, where the derivative's two terms
// cancel), wrong values beyond it.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "nearest.h"
#include "saddlescope/reference/gelu.h"

namespace saddlescope::reference {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();  // INFINITY is a float: ambiguous here

// g·gelu'(x) at 600 bits: g·(Φ(x) + x·e^{−x²/2}/√(2π)) with Φ = erfc(−x/√2)/2, or g·((1 + T)/2 +
// x/2·(1 − T²)·k(1 + 3c·x²)) with T = tanh(k(x + c·x³)) taken literally (|x| <= 12 keeps 1 + T and
// 1 − T² far above 2^-600).
class HighPrecisionGrad {
 public:
  HighPrecisionGrad(Op form, double g, double x) {
    mpfr_inits2(600, v_, t_, u_, w_, static_cast<mpfr_ptr>(nullptr));
    mpfr_set_d(w_, x, MPFR_RNDN);
    if (form == Op::kGelu) {
      mpfr_sqrt_ui(t_, 2, MPFR_RNDN);
      mpfr_div(t_, w_, t_, MPFR_RNDN);
      mpfr_neg(t_, t_, MPFR_RNDN);
      mpfr_erfc(t_, t_, MPFR_RNDN);
      mpfr_div_2ui(v_, t_, 1, MPFR_RNDN);  // Φ
      mpfr_sqr(t_, w_, MPFR_RNDN);
      mpfr_div_2ui(t_, t_, 1, MPFR_RNDN);
      mpfr_neg(t_, t_, MPFR_RNDN);
      mpfr_exp(t_, t_, MPFR_RNDN);
      mpfr_const_pi(u_, MPFR_RNDN);
      mpfr_mul_ui(u_, u_, 2, MPFR_RNDN);
      mpfr_sqrt(u_, u_, MPFR_RNDN);
      mpfr_div(t_, t_, u_, MPFR_RNDN);
      mpfr_mul(t_, t_, w_, MPFR_RNDN);
      mpfr_add(v_, v_, t_, MPFR_RNDN);
    } else {
      mpfr_t k, c, T;
      mpfr_inits2(600, k, c, T, static_cast<mpfr_ptr>(nullptr));
      mpfr_const_pi(k, MPFR_RNDN);
      mpfr_ui_div(k, 2, k, MPFR_RNDN);
      mpfr_sqrt(k, k, MPFR_RNDN);
      mpfr_set_str(c, "0.044715", 10, MPFR_RNDN);
      mpfr_pow_ui(T, w_, 3, MPFR_RNDN);
      mpfr_mul(T, T, c, MPFR_RNDN);
      mpfr_add(T, T, w_, MPFR_RNDN);
      mpfr_mul(T, T, k, MPFR_RNDN);
      mpfr_tanh(T, T, MPFR_RNDN);
      mpfr_add_ui(v_, T, 1, MPFR_RNDN);
      mpfr_div_2ui(v_, v_, 1, MPFR_RNDN);  // (1 + T)/2
      mpfr_sqr(t_, T, MPFR_RNDN);
      mpfr_ui_sub(t_, 1, t_, MPFR_RNDN);    // 1 − T²
      mpfr_sqr(u_, w_, MPFR_RNDN);
      mpfr_mul(u_, u_, c, MPFR_RNDN);
      mpfr_mul_ui(u_, u_, 3, MPFR_RNDN);
      mpfr_add_ui(u_, u_, 1, MPFR_RNDN);
      mpfr_mul(u_, u_, k, MPFR_RNDN);       // k(1 + 3c·x²)
      mpfr_mul(t_, t_, u_, MPFR_RNDN);
      mpfr_mul(t_, t_, w_, MPFR_RNDN);
      mpfr_div_2ui(t_, t_, 1, MPFR_RNDN);
      mpfr_add(v_, v_, t_, MPFR_RNDN);
      mpfr_clears(k, c, T, static_cast<mpfr_ptr>(nullptr));
    }
    mpfr_mul_d(v_, v_, g, MPFR_RNDN);
  }
  ~HighPrecisionGrad() { mpfr_clears(v_, t_, u_, w_, static_cast<mpfr_ptr>(nullptr)); }
  template <class T>
  void expect_nearest(T rounded, double x) const {
    testing::expect_nearest(v_, rounded, "x=" + std::to_string(x) + ": ");
  }

 private:
  mpfr_t v_, t_, u_, w_;
};

template <class T>
void check_correctly_rounded(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-12, 12);
  std::normal_distribution<double> normal(0, 2);
  int checked = 0;
  for (int k = 0; k < 150; ++k) {
    const T x = static_cast<T>(k % 2 ? uniform(rng) : normal(rng));
    const T g = static_cast<T>(normal(rng));
    for (Op form : {Op::kGelu, Op::kGeluTanh}) {
      auto e = evaluate_gelu_backward(form, g, x);
      ASSERT_TRUE(e.ok()) << e.status().message();
      if (e->f64 == 0) continue;  // flushed: stated
      const HighPrecisionGrad hp(form, g, x);
      hp.expect_nearest(e->f64, x);
      hp.expect_nearest(e->f32, x);
      ++checked;
    }
  }
  std::printf("%d gelu_backward values correctly rounded (float32, float64)\n", checked);
}

TEST(GeluBackward, CorrectlyRoundedFromFloat32) { check_correctly_rounded<float>(81); }
TEST(GeluBackward, CorrectlyRoundedFromFloat64) { check_correctly_rounded<double>(82); }

// PyTorch's backward formulas, literally, in T (aten/src/ATen/native/cpu/Activation.cpp's forms).
template <class T>
T kernel(Op form, T dy, T x) {
  if (form == Op::kGelu) {
    const T kAlpha = static_cast<T>(M_SQRT1_2), kBeta = static_cast<T>(M_2_SQRTPI * M_SQRT1_2 * 0.5);
    const T cdf = T(0.5) * (T(1) + std::erf(x * kAlpha));
    const T pdf = std::exp(T(-0.5) * x * x) * kBeta;
    return dy * (cdf + x * pdf);
  }
  const T kBeta = static_cast<T>(M_SQRT2 * M_2_SQRTPI * 0.5), kKappa = static_cast<T>(0.044715);
  const T x_sq = x * x, x_cube = x_sq * x, inner = kBeta * (x + kKappa * x_cube), t = std::tanh(inner);
  const T left = T(0.5) * x, right = T(1) + t, left_derivative = T(0.5) * right;
  const T tanh_derivative = T(1) - t * t, inner_derivative = kBeta * (T(1) + T(3) * kKappa * x_sq);
  return dy * (left_derivative + left * tanh_derivative * inner_derivative);
}

TEST(GeluBackward, PyTorchsKernelsAreWithinTheAllowance) {
  double ratio[2] = {0, 0}, ratio64[2] = {0, 0};
  for (int k = -1200; k <= 1200; ++k) {
    const float x = static_cast<float>(k) / 100 + 0.00390625f, g = k % 3 ? 0.75f : -1.25f;
    const double xd = static_cast<double>(x) * (1 + 0x1p-30);
    for (int j = 0; j < 2; ++j) {
      const Op form = j == 0 ? Op::kGelu : Op::kGeluTanh;
      const ErrorReport r = assess(*evaluate_gelu_backward(form, g, x), kernel(form, g, x));
      const ErrorReport r64 = assess(*evaluate_gelu_backward(form, static_cast<double>(g), xd),
                                     kernel(form, static_cast<double>(g), xd));
      EXPECT_TRUE(r.matches) << op_name(form) << " x=" << x << ": " << r.bound_ratio;
      EXPECT_TRUE(r64.matches) << op_name(form) << " x=" << xd << ": " << r64.bound_ratio;
      ratio[j] = std::max(ratio[j], r.bound_ratio);
      ratio64[j] = std::max(ratio64[j], r64.bound_ratio);
    }
  }
  std::printf("gelu_backward kernels: max error/bound float32 erf %.3g, tanh %.3g; float64 erf %.3g, tanh %.3g\n",
              ratio[0], ratio[1], ratio64[0], ratio64[1]);
}

TEST(GeluBackward, WrongValuesAreBeyondTheAllowance) {
  for (Op form : {Op::kGelu, Op::kGeluTanh}) {
    for (float x : {1.3f, 0.2f, -0.4f, 3.5f}) {
      auto e = evaluate_gelu_backward(form, 0.5f, x);
      ASSERT_TRUE(e.ok());
      const float v = e->f32, off = v + 1000 * (std::nextafter(v, INFINITY) - v);
      EXPECT_TRUE(assess(*e, v).matches);
      const ErrorReport r = assess(*e, off);
      EXPECT_FALSE(r.matches) << op_name(e->op) << " x=" << x << ": " << r.bound_ratio;
    }
  }
  // The forward's value where its gradient was expected, and the other form's gradient: beyond.
  EXPECT_FALSE(assess(*evaluate_gelu_backward(Op::kGelu, 1.0f, 1.0f), kernel(Op::kGeluTanh, 1.0f, 1.0f)).matches);
  EXPECT_FALSE(assess(*evaluate_gelu_backward(Op::kGelu, 1.0f, 1.0f), 0.8413447f).matches);
}

TEST(GeluBackward, ExactCasesLimitsAndBadInputs) {
  for (Op form : {Op::kGelu, Op::kGeluTanh}) {
    auto half = evaluate_gelu_backward(form, 3.0f, 0.0f);  // gelu'(0) = 1/2
    ASSERT_TRUE(half.ok());
    EXPECT_EQ(half->f32, 1.5f);
    EXPECT_TRUE(half->exact_is_exact);
    EXPECT_EQ(half->op, form == Op::kGelu ? Op::kGeluBackward : Op::kGeluTanhBackward);
    EXPECT_EQ(evaluate_gelu_backward(form, 0.0f, 2.5f)->f64, 0.0);
    EXPECT_EQ(evaluate_gelu_backward(form, 2.0, kInf)->f64, 2.0);   // gelu'(+inf) = 1
    EXPECT_EQ(evaluate_gelu_backward(form, 2.0, -kInf)->f64, 0.0);  // gelu'(−inf) = 0
    EXPECT_EQ(evaluate_gelu_backward(form, kInf, -kInf)->kind, Kind::kNaN);  // inf·0
    EXPECT_EQ(evaluate_gelu_backward(form, -kInf, 1.0)->kind, Kind::kMinusInf);
    EXPECT_EQ(evaluate_gelu_backward(form, 1.0f, NAN)->first_nonfinite, 1);
    auto far = evaluate_gelu_backward(form, 1.0, -1e5);  // e^{−5·10⁹}: flushed, said so
    ASSERT_TRUE(far.ok());
    EXPECT_EQ(far->f64, 0.0);
    EXPECT_FALSE(far->exact_is_exact);
  }
  // gelu'(1) = Φ(1) + φ(1) = 0.841344746068543 + 0.241970724519143 = 1.083315470587686.
  EXPECT_NEAR(evaluate_gelu_backward(Op::kGelu, 1.0, 1.0)->f64, 1.0833154705876864, 2e-16);
  auto bad = evaluate_gelu_backward(Op::kRelu, 1.0f, 1.0f);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "relu is not a GELU (gelu, gelu_tanh)");
  EXPECT_STREQ(op_name(Op::kGeluTanhBackward), "gelu_tanh_backward");
}

}  // namespace
}  // namespace saddlescope::reference
