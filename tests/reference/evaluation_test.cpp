// The fast exact path on its own: input errors, non-finite inputs, ULP errors, and the a-priori bound.
#include "saddlescope/reference/evaluation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "dot_generator.h"

namespace saddlescope::reference {
namespace {

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr float kInff = std::numeric_limits<float>::infinity();

// What a float32 kernel computing left to right does (the build uses -std=c++17: no FMA contraction).
float naive_dot(const std::vector<float>& x, const std::vector<float>& y) {
  float s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

TEST(Evaluation, BadSpansAreErrorsNamingTheProblem) {
  const float a[3] = {1, 2, 3}, b[4] = {1, 2, 3, 4};
  auto r = evaluate_dot(a, 3, b, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "dot: lengths differ: a has 3 elements, b has 4");
  EXPECT_FALSE(evaluate_sum(a, -1).ok());
  EXPECT_EQ(evaluate_sum(static_cast<const double*>(nullptr), 2).status().message(),
            "sum: input is null but has length 2");
}

TEST(Evaluation, EmptyInputIsTheExactZero) {
  auto r = evaluate_dot(static_cast<const float*>(nullptr), 0, static_cast<const float*>(nullptr), 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->n, 0);
  EXPECT_EQ(r->kind, Kind::kFinite);
  EXPECT_EQ(r->exact_decimal(), "0");
  EXPECT_EQ(r->bound(Format::kFloat32), 0.0);
  const ErrorReport e = assess(*r, 0.0f);
  EXPECT_TRUE(e.matches);
  EXPECT_EQ(e.ulp_error, 0.0);
}

TEST(Evaluation, ExactWhereFloatArithmeticIsNot) {
  const double a[3] = {1e300, 1.0, -1e300};
  auto r = evaluate_sum(a, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->f64, 1.0);  // naive summation gives 0
  EXPECT_EQ(r->exact_decimal(), "1");
  const float x[2] = {0.1f, 3.0f}, y[2] = {0.1f, -1.0f};
  auto d = evaluate_dot(x, 2, y, 2);
  ASSERT_TRUE(d.ok());
  // 0.1f² - 3 exactly: the product needs 48 bits, which float32 arithmetic would round away.
  EXPECT_EQ(d->exact_decimal(), "-2.989999999701976773902600825749686919152736663818359375");
}

TEST(Evaluation, NonFiniteInputsAreReportedAsSuch) {
  struct Case {
    std::vector<float> a, b;
    Kind kind;
    int64_t first;
  };
  const std::vector<Case> cases = {
      {{1, kNaNf, 2}, {1, 1, 1}, Kind::kNaN, 1},
      {{1, kInff, 2}, {1, 0, 1}, Kind::kNaN, 1},            // inf · 0
      {{kInff, 1, kInff}, {1, 1, -1}, Kind::kNaN, 0},        // inf - inf
      {{1, 2, kInff}, {1, 1, -2}, Kind::kMinusInf, 2},
      {{1, -kInff, 3}, {1, -1, kInff}, Kind::kPlusInf, 1},
  };
  for (const Case& c : cases) {
    auto r = evaluate_dot(c.a.data(), 3, c.b.data(), 3);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->kind, c.kind) << kind_name(r->kind);
    EXPECT_EQ(r->first_nonfinite, c.first);
    const ErrorReport e = assess(*r, naive_dot(c.a, c.b));
    EXPECT_EQ(e.outcome, Outcome::kNonFiniteInput);
    EXPECT_TRUE(e.matches) << "IEEE arithmetic gives the same non-finite value";
    EXPECT_TRUE(std::isnan(e.ulp_error) && std::isnan(e.bound_ratio));  // no huge fake errors
    EXPECT_FALSE(assess(*r, 1.0f).matches);
  }
}

TEST(Evaluation, NonFiniteObservedIsFlaggedUnlessItIsOverflow) {
  const float a[2] = {1, 2};
  auto r = evaluate_sum(a, 2);
  ASSERT_TRUE(r.ok());
  const ErrorReport nan = assess(*r, kNaNf);
  EXPECT_EQ(nan.outcome, Outcome::kNonFiniteObserved);
  EXPECT_FALSE(nan.matches);
  EXPECT_TRUE(std::isnan(nan.ulp_error));
  const float big[2] = {3e38f, 3e38f};  // exact 6e38 is finite but beyond float32
  auto o = evaluate_sum(big, 2);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Kind::kFinite);
  EXPECT_EQ(o->f32, kInff);
  EXPECT_EQ(o->f64, 2.0 * static_cast<double>(3e38f));
  EXPECT_TRUE(assess(*o, kInff).matches);
  EXPECT_FALSE(assess(*o, -kInff).matches);
}

TEST(Evaluation, UlpAndRelativeErrorsAreSignedAndInTheObservedFormat) {
  const float one = 1.0f;
  auto r = evaluate_sum(&one, 1);
  ASSERT_TRUE(r.ok());
  const ErrorReport up = assess(*r, std::nextafter(1.0f, 2.0f));
  EXPECT_EQ(up.ulp_error, 1.0);
  EXPECT_EQ(up.rel_error, 0x1p-23);
  EXPECT_EQ(assess(*r, std::nextafter(1.0f, 0.0f)).ulp_error, -0.5);  // ulp(1) is 2^-23 above 1
  EXPECT_EQ(assess(*r, std::nextafter(1.0, 2.0)).ulp_error, 1.0);  // float64 observed: float64 ULPs
}

TEST(Evaluation, NaiveFloat32DotStaysWithinGammaN) {
  std::mt19937_64 rng(5);
  double max_ratio = 0;
  int cases = 0;
  for (int64_t n : {1, 2, 3, 10, 100, 1000, 10000}) {
    for (int rep = 0; rep < 20; ++rep) {
      const auto in = testing::gen_random_dot<float>(n, rep % 2 ? 20 : 0, rep % 3 ? 0 : 7, rng);
      auto r = evaluate_dot(in.x.data(), n, in.y.data(), n);
      ASSERT_TRUE(r.ok());
      const ErrorReport e = assess(*r, naive_dot(in.x, in.y));
      ASSERT_EQ(e.outcome, Outcome::kMeasured);
      EXPECT_TRUE(e.matches) << "n=" << n << " rep=" << rep << " ratio=" << e.bound_ratio;
      max_ratio = std::max(max_ratio, e.bound_ratio);
      ++cases;
    }
  }
  std::printf("naive float32 dot: %d random cases, max |error| / (gamma_n sum|a_i b_i|) = %.3g\n", cases,
              max_ratio);
}

TEST(Evaluation, WrongObservedValueBeyondTheBoundIsFlagged) {
  std::mt19937_64 rng(11);
  const auto in = testing::gen_random_dot<float>(256, 0, 0, rng);
  auto r = evaluate_dot(in.x.data(), 256, in.y.data(), 256);
  ASSERT_TRUE(r.ok());
  const double bound = r->bound(Format::kFloat32);
  const float wrong = static_cast<float>(r->f64 + 3 * bound);
  const ErrorReport e = assess(*r, wrong);
  EXPECT_EQ(e.outcome, Outcome::kMeasured);
  EXPECT_FALSE(e.matches);
  EXPECT_GT(e.bound_ratio, 2.5);
  // A stale operand (one element of y overwritten, like the aliased target buffer of DESIGN.md).
  auto y = in.y;
  y[17] += 0.5f;
  const ErrorReport stale = assess(*r, naive_dot(in.x, y));
  EXPECT_FALSE(stale.matches) << "ratio " << stale.bound_ratio;
  std::printf("wrong observed: bound ratio %.3g (3x bound), %.3g (stale operand)\n", e.bound_ratio,
              stale.bound_ratio);
}

}  // namespace
}  // namespace saddlescope::reference
