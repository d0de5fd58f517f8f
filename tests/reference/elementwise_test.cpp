// sigmoid, tanh, exp: the float32/float64 results are the correct roundings of the value computed by
// MPFR at 2000 bits (checked against both neighbours), `exact` is its 128-bit rounding; ReLU is exact.
#include "saddlescope/reference/elementwise.h"

#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "rational.h"

namespace saddlescope::reference {
namespace {

// op(x) at 2000 bits: far more than any rounding here needs (the hard cases of binary64 need ~120).
class HighPrecision {
 public:
  HighPrecision(Op op, double x) {
    mpfr_init2(v_, 2000);
    mpfr_set_d(v_, x, MPFR_RNDN);
    if (op == Op::kExp) {
      mpfr_exp(v_, v_, MPFR_RNDN);
    } else if (op == Op::kTanh) {
      mpfr_tanh(v_, v_, MPFR_RNDN);
    } else {
      mpfr_neg(v_, v_, MPFR_RNDN);
      mpfr_exp(v_, v_, MPFR_RNDN);
      mpfr_add_ui(v_, v_, 1, MPFR_RNDN);
      mpfr_ui_div(v_, 1, v_, MPFR_RNDN);
    }
  }
  ~HighPrecision() { mpfr_clear(v_); }
  // |v - a| compared with |v - b|: negative when a is nearer.
  int nearer(double a, double b) const {
    mpfr_t da, db;
    mpfr_inits2(2100, da, db, static_cast<mpfr_ptr>(nullptr));
    mpfr_set_d(da, a, MPFR_RNDN);
    mpfr_set_d(db, b, MPFR_RNDN);
    mpfr_sub(da, v_, da, MPFR_RNDN);
    mpfr_sub(db, v_, db, MPFR_RNDN);
    const int c = mpfr_cmpabs(da, db);
    mpfr_clears(da, db, static_cast<mpfr_ptr>(nullptr));
    return c;
  }
  // The sign of v - a.
  int compare(double a) const { return mpfr_cmp_d(v_, a); }
  // v rounded to 128 bits as a decimal of every digit, through GMP rationals.
  bool equals_128(const std::string& decimal) const {
    mpfr_t r;
    mpfr_init2(r, 128);
    mpfr_set(r, v_, MPFR_RNDN);
    testing::Rational q, parsed;
    mpfr_get_q(q.get(), r);
    mpfr_clear(r);
    return testing::parse_decimal(decimal, parsed) && mpq_equal(q.get(), parsed.get());
  }

 private:
  mpfr_t v_;
};

// `rounded` is the nearest T to op(x): strictly nearer than both neighbours (no ties are possible).
template <class T>
void expect_correctly_rounded(const HighPrecision& hp, T rounded, const char* what) {
  if (std::isinf(rounded)) {  // overflow: v is at least max + half an ULP, the rounding threshold
    const T max = std::numeric_limits<T>::max();
    EXPECT_GT(hp.compare(static_cast<double>(max)), 0) << what;
    if (sizeof(T) == 4) {
      EXPECT_GE(hp.compare(static_cast<double>(max) + 0x1p103), 0) << what;
    }
    return;
  }
  for (T neighbour : {std::nextafter(rounded, T(-INFINITY)), std::nextafter(rounded, T(INFINITY))}) {
    if (std::isinf(neighbour)) continue;
    EXPECT_LT(hp.nearer(rounded, neighbour), 0) << what << ": " << rounded << " vs " << neighbour;
  }
}

template <class T>
std::vector<T> inputs(std::mt19937_64& rng) {
  std::vector<T> v = {T(1), T(-1), T(0.5), T(1e-3), T(-20), T(20), T(88), T(-87.5), T(-103), T(709),
                      T(-745), std::numeric_limits<T>::denorm_min(), T(-1e-30), T(89.9), T(-89.9)};
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-30, 9);
  for (int i = 0; i < 150; ++i) v.push_back(static_cast<T>(std::ldexp(unit(rng), exponent(rng))));
  return v;
}

template <class T>
void check_against_high_precision(uint64_t seed) {
  std::mt19937_64 rng(seed);
  int checked = 0;
  for (Op op : {Op::kSigmoid, Op::kTanh, Op::kExp}) {
    for (T x : inputs<T>(rng)) {
      auto e = evaluate_elementwise(op, x);
      ASSERT_TRUE(e.ok());
      ASSERT_EQ(e->kind, Kind::kFinite) << op_name(op) << "(" << x << ")";
      const HighPrecision hp(op, static_cast<double>(x));
      expect_correctly_rounded(hp, e->f64, op_name(op));
      expect_correctly_rounded(hp, e->f32, op_name(op));
      EXPECT_FALSE(e->exact_is_exact);
      EXPECT_TRUE(hp.equals_128(e->exact_decimal())) << op_name(op) << "(" << x << ")";
      ++checked;
    }
  }
  std::printf("%s: %d sigmoid/tanh/exp values correctly rounded (float32, float64, 128 bits)\n",
              sizeof(T) == 4 ? "float32" : "float64", checked);
}

TEST(Elementwise, CorrectlyRoundedFromFloat32) { check_against_high_precision<float>(31); }
TEST(Elementwise, CorrectlyRoundedFromFloat64) { check_against_high_precision<double>(32); }

TEST(Elementwise, LibmIsWithinTheLibraryAllowance) {
  double worst[3] = {0, 0, 0};
  const Op ops[3] = {Op::kSigmoid, Op::kTanh, Op::kExp};
  for (float x = -80; x <= 80; x += 0.37f) {
    const float observed[3] = {1.0f / (1.0f + std::exp(-x)), std::tanh(x), std::exp(x)};
    for (int k = 0; k < 3; ++k) {
      const ErrorReport r = assess(*evaluate_elementwise(ops[k], x), observed[k]);
      if (r.outcome != Outcome::kMeasured) continue;  // expf overflows beyond 88.7
      EXPECT_TRUE(r.matches) << op_name(ops[k]) << "(" << x << "): " << r.ulp_error << " ULP";
      worst[k] = std::max(worst[k], std::fabs(r.ulp_error));
    }
  }
  std::printf("libm float32 max |ULP error|: sigmoid %.3g, tanh %.3g, exp %.3g (allowed %g)\n", worst[0],
              worst[1], worst[2], kLibraryUlps);
  // Naive sigmoid underflows to 0 where the value is a float32 subnormal: flagged, correctly.
  const float x = -100;
  const ErrorReport r = assess(*evaluate_elementwise(Op::kSigmoid, x), 1.0f / (1.0f + std::exp(-x)));
  EXPECT_FALSE(r.matches) << r.ulp_error;
}

TEST(Elementwise, BoundIsInUlpsOfTheObservedFormat) {
  auto e = evaluate_elementwise(Op::kExp, 1.0f);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->bound(Format::kFloat32), 4 * 0x1p-22);  // e is in [2, 4): ulp 2^-22
  float v = e->f32;
  for (int i = 0; i < 3; ++i) v = std::nextafter(v, 10.0f);
  EXPECT_TRUE(assess(*e, v).matches);  // 3 ULP above: rounding plus < 4 ULP
  for (int i = 0; i < 2; ++i) v = std::nextafter(v, 10.0f);
  const ErrorReport wrong = assess(*e, v);
  EXPECT_FALSE(wrong.matches);
  EXPECT_GT(wrong.bound_ratio, 1);
  EXPECT_NEAR(wrong.ulp_error, 5, 0.5);
}

TEST(Elementwise, SpecialValuesAndLimits) {
  EXPECT_EQ(evaluate_elementwise(Op::kExp, 0.0f)->exact_decimal(), "1");
  EXPECT_EQ(evaluate_elementwise(Op::kSigmoid, 0.0)->exact_decimal(), "0.5");
  EXPECT_TRUE(std::signbit(evaluate_elementwise(Op::kTanh, -0.0)->f64));
  EXPECT_EQ(evaluate_elementwise(Op::kExp, NAN)->kind, Kind::kNaN);
  EXPECT_EQ(evaluate_elementwise(Op::kExp, INFINITY)->kind, Kind::kPlusInf);
  EXPECT_EQ(evaluate_elementwise(Op::kExp, 2000.0)->kind, Kind::kPlusInf);  // beyond 2^2000
  auto big = evaluate_elementwise(Op::kExp, 1000.0);  // finite, overflows binary64
  EXPECT_EQ(big->kind, Kind::kFinite);
  EXPECT_EQ(big->f64, INFINITY);
  EXPECT_TRUE(assess(*big, static_cast<double>(INFINITY)).matches);
  EXPECT_FALSE(assess(*big, std::numeric_limits<double>::max()).matches);  // finite where it overflows
  auto tiny = evaluate_elementwise(Op::kSigmoid, -1e30);  // flushed: far below any subnormal
  EXPECT_EQ(tiny->f64, 0.0);
  EXPECT_TRUE(assess(*tiny, 0.0).matches);
  auto minus_inf = evaluate_elementwise(Op::kTanh, -INFINITY);
  EXPECT_EQ(minus_inf->f32, -1.0f);
  EXPECT_TRUE(minus_inf->exact_is_exact);
  EXPECT_EQ(minus_inf->first_nonfinite, 0);
  EXPECT_EQ(evaluate_elementwise(Op::kSigmoid, 95.0f)->f32, 1.0f);
  EXPECT_EQ(evaluate_elementwise(Op::kSigmoid, -INFINITY)->f64, 0.0);
  EXPECT_EQ(evaluate_elementwise(Op::kDot, 1.0f).status().message(),
            "dot is not an elementwise op (sigmoid, tanh, relu, exp)");
}

TEST(Elementwise, ReluIsExact) {
  auto pos = evaluate_elementwise(Op::kRelu, 0.1);
  EXPECT_TRUE(pos->exact_is_exact);
  EXPECT_EQ(pos->f64, 0.1);
  EXPECT_EQ(pos->f32, 0.1f);
  EXPECT_EQ(pos->bound(Format::kFloat64), 0.0);
  EXPECT_TRUE(assess(*pos, 0.1f).matches);  // float32 observed of a float64 input: one rounding allowed
  EXPECT_FALSE(assess(*pos, std::nextafter(0.1, 1.0)).matches);
  EXPECT_EQ(evaluate_elementwise(Op::kRelu, -3.0f)->exact_decimal(), "0");
  EXPECT_EQ(evaluate_elementwise(Op::kRelu, -INFINITY)->f32, 0.0f);
  EXPECT_EQ(evaluate_elementwise(Op::kRelu, INFINITY)->kind, Kind::kPlusInf);
}

}  // namespace
}  // namespace saddlescope::reference
