// The fast path against the MPFR oracle (bit for bit) and against GMP rationals (exact values and ULP
// errors), on random and on ill-conditioned dot products and sums.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "dot_generator.h"
#include "rational.h"
#include "saddlescope/reference/evaluation.h"
#include "saddlescope/reference/oracle.h"

namespace saddlescope::reference {
namespace {

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

void expect_identical(const Evaluation& fast, const Evaluation& oracle, const char* what) {
  EXPECT_EQ(fast.kind, oracle.kind) << what;
  EXPECT_EQ(fast.first_nonfinite, oracle.first_nonfinite) << what;
  EXPECT_TRUE(oracle.exact_is_exact) << what;
  EXPECT_TRUE(fast.exact == oracle.exact) << what << ": " << fast.exact_decimal() << " vs "
                                          << oracle.exact_decimal();
  if (fast.kind == Kind::kNaN) return;  // a NaN's sign and payload carry no meaning
  EXPECT_TRUE(same_bits(fast.f32, oracle.f32)) << what << ": " << fast.f32 << " vs " << oracle.f32;
  EXPECT_TRUE(same_bits(fast.f64, oracle.f64)) << what << ": " << fast.f64 << " vs " << oracle.f64;
  if (fast.kind == Kind::kFinite) {
    EXPECT_TRUE(same_bits(fast.abs_sum, oracle.abs_sum)) << what;
  }
}

// The exact value and the ULP error of an observed value, recomputed with GMP rationals.
template <class T>
void expect_matches_rationals(const std::vector<T>& x, const std::vector<T>& y, const Evaluation& e,
                              T observed) {
  testing::Rational exact, parsed;
  testing::exact_dot(x.data(), y.data(), static_cast<int64_t>(x.size()), exact);
  ASSERT_TRUE(testing::parse_decimal(e.exact_decimal(), parsed)) << e.exact_decimal();
  EXPECT_TRUE(mpq_equal(exact.get(), parsed.get())) << e.exact_decimal();
  if (!std::isfinite(observed)) {  // the naive sum overflowed: reported, not measured
    EXPECT_EQ(assess(e, observed).outcome, Outcome::kNonFiniteObserved);
    return;
  }
  // ulp_error = (observed - exact) / 2^(max(floor(log2|exact|), emin) - p + 1), one rounding.
  const Format f = sizeof(T) == 4 ? Format::kFloat32 : Format::kFloat64;
  const int p = precision(f), emin = min_normal_exponent(f);
  int top = emin;
  if (mpq_sgn(exact.get()) != 0) {
    testing::Rational mag;
    mpq_abs(mag.get(), exact.get());
    top = static_cast<int>(mpz_sizeinbase(mpq_numref(mag.get()), 2)) -
          static_cast<int>(mpz_sizeinbase(mpq_denref(mag.get()), 2));  // floor(log2) or one more
    testing::Rational pow;
    mpq_set_ui(pow.get(), 1, 1);
    if (top >= 0) mpq_mul_2exp(pow.get(), pow.get(), static_cast<mp_bitcnt_t>(top));
    else mpq_div_2exp(pow.get(), pow.get(), static_cast<mp_bitcnt_t>(-top));
    if (mpq_cmp(mag.get(), pow.get()) < 0) --top;
    top = std::max(top, emin);
  }
  testing::Rational err(static_cast<double>(observed));
  mpq_sub(err.get(), err.get(), exact.get());
  const int ulp = top - p + 1;
  if (ulp >= 0) mpq_div_2exp(err.get(), err.get(), static_cast<mp_bitcnt_t>(ulp));
  else mpq_mul_2exp(err.get(), err.get(), static_cast<mp_bitcnt_t>(-ulp));
  const ErrorReport r = assess(e, observed);
  EXPECT_TRUE(same_bits(r.ulp_error, testing::to_double(err)))
      << r.ulp_error << " vs " << testing::to_double(err);
}

template <class T>
T naive(const std::vector<T>& x, const std::vector<T>& y) {
  T s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

template <class T>
void check_random(int spread, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int64_t n : {1, 2, 5, 64, 1000}) {
    for (int rep = 0; rep < 12; ++rep) {
      const auto in = testing::gen_random_dot<T>(n, spread, rep % 2 ? 5 : 0, rng);
      auto fast = evaluate_dot(in.x.data(), n, in.y.data(), n);
      auto oracle = oracle_dot(in.x.data(), n, in.y.data(), n);
      ASSERT_TRUE(fast.ok() && oracle.ok());
      expect_identical(*fast, *oracle, "dot");
      expect_matches_rationals(in.x, in.y, *fast, naive(in.x, in.y));
      auto fast_sum = evaluate_sum(in.x.data(), n);
      auto oracle_sum_ = oracle_sum(in.x.data(), n);
      ASSERT_TRUE(fast_sum.ok() && oracle_sum_.ok());
      expect_identical(*fast_sum, *oracle_sum_, "sum");
    }
  }
}

TEST(OracleAgreement, RandomFloat32) {
  check_random<float>(0, 1);
  check_random<float>(60, 2);
  check_random<float>(149, 3);  // products from 2^-298 to 2^256: subnormals, float32 overflow
}

TEST(OracleAgreement, RandomFloat64) {
  check_random<double>(0, 4);
  check_random<double>(400, 5);
  check_random<double>(1074, 6);  // the whole binary64 range, subnormal products included
}

TEST(OracleAgreement, RoundingEdgesBelowAndAboveTheRange) {
  const double tiny = std::numeric_limits<double>::denorm_min();
  const std::vector<std::vector<double>> xs = {
      {tiny}, {tiny, tiny}, {1e308, 1e308}, {tiny, -tiny, 1e-300}, {-tiny}};
  const std::vector<std::vector<double>> ys = {
      {0.5}, {0.5, 0.25}, {10, 10}, {0.75, 0.25, 1e-300}, {0.75}};
  for (size_t k = 0; k < xs.size(); ++k) {
    const int64_t n = static_cast<int64_t>(xs[k].size());
    auto fast = evaluate_dot(xs[k].data(), n, ys[k].data(), n);
    auto oracle = oracle_dot(xs[k].data(), n, ys[k].data(), n);
    ASSERT_TRUE(fast.ok() && oracle.ok());
    expect_identical(*fast, *oracle, "edge");
  }
  const float nan = NAN, inf = INFINITY;
  const std::vector<float> a = {1, inf, 2, -inf}, b = {1, 1, nan, 1};
  for (int64_t n = 1; n <= 4; ++n) {
    auto fast = evaluate_dot(a.data(), n, b.data(), n);
    auto oracle = oracle_dot(a.data(), n, b.data(), n);
    ASSERT_TRUE(fast.ok() && oracle.ok());
    expect_identical(*fast, *oracle, "non-finite");
  }
}

// Zeros (as after a ReLU: they must neither stretch nor break the fast path's live range), signed zeros,
// subnormals next to large terms, and NaN/Inf hidden among zeros (0 · inf is NaN), in dots and sums.
template <class T>
void check_zeros_and_specials(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1, 1);
  const T tiny = std::numeric_limits<T>::denorm_min(), inf = std::numeric_limits<T>::infinity();
  for (int rep = 0; rep < 200; ++rep) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 70);
    std::vector<T> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t kind = rng() % 8;
      x[i] = kind < 3 ? T(0) : kind == 3 ? -T(0) : kind == 4 ? tiny * T(1 + rng() % 7) : static_cast<T>(unit(rng));
      y[i] = rng() % 5 == 0 ? T(0) : static_cast<T>(std::ldexp(unit(rng), static_cast<int>(rng() % 40) - 20));
    }
    if (rep % 10 == 9) x[rng() % n] = rep % 20 == 9 ? inf : std::numeric_limits<T>::quiet_NaN();
    auto fast = evaluate_dot(x.data(), n, y.data(), n);
    auto oracle = oracle_dot(x.data(), n, y.data(), n);
    ASSERT_TRUE(fast.ok() && oracle.ok());
    expect_identical(*fast, *oracle, "dot with zeros");
    auto fast_sum = evaluate_sum(x.data(), n);
    auto oracle_sum_ = oracle_sum(x.data(), n);
    ASSERT_TRUE(fast_sum.ok() && oracle_sum_.ok());
    expect_identical(*fast_sum, *oracle_sum_, "sum with zeros");
  }
  const std::vector<T> zeros(9, T(0));
  std::vector<T> with_inf = zeros;
  with_inf[4] = inf;
  auto only_zeros = evaluate_dot(zeros.data(), 9, zeros.data(), 9);
  ASSERT_TRUE(only_zeros.ok());
  EXPECT_TRUE(only_zeros->exact.is_zero());
  EXPECT_EQ(only_zeros->abs_sum, 0.0);
  auto zero_times_inf = evaluate_dot(zeros.data(), 9, with_inf.data(), 9);
  ASSERT_TRUE(zero_times_inf.ok());
  EXPECT_EQ(zero_times_inf->kind, Kind::kNaN) << "0 · inf is NaN, even where every product looks zero";
  EXPECT_EQ(zero_times_inf->first_nonfinite, 4);
}

TEST(OracleAgreement, ZerosSubnormalsAndNonFiniteAmongZeros) {
  check_zeros_and_specials<float>(9);
  check_zeros_and_specials<double>(10);
}

template <class T>
void check_ill_conditioned(const std::vector<int64_t>& sizes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  double min_log = 1e9, max_log = -1e9;
  for (double cond : {1e3, 1e8, 1e16, 1e24, 1e32, 1e40}) {
    for (int64_t n : sizes) {
      const auto in = testing::gen_ill_conditioned_dot<T>(n, cond, rng);
      auto fast = evaluate_dot(in.x.data(), n, in.y.data(), n);
      auto oracle = oracle_dot(in.x.data(), n, in.y.data(), n);
      ASSERT_TRUE(fast.ok() && oracle.ok());
      expect_identical(*fast, *oracle, "ill-conditioned");
      expect_matches_rationals(in.x, in.y, *fast, naive(in.x, in.y));
      const double achieved = std::log10(testing::condition_number(*fast) / cond);
      min_log = std::min(min_log, achieved);
      max_log = std::max(max_log, achieved);
    }
  }
  std::printf("%s: achieved / requested condition number between 1e%.1f and 1e%.1f\n",
              sizeof(T) == 4 ? "float32" : "float64", min_log, max_log);
  // The generator must really produce the condition numbers asked for, or the test above proves little.
  EXPECT_GT(min_log, -2);
  EXPECT_LT(max_log, 4);
}

// float32 needs more terms: each cancelling step of the generator removes at most about 24 bits.
TEST(OracleAgreement, IllConditionedFloat32) { check_ill_conditioned<float>({20, 50, 200}, 7); }
TEST(OracleAgreement, IllConditionedFloat64) { check_ill_conditioned<double>({6, 50, 200}, 8); }

TEST(OracleAgreement, FixedPrecisionOracleSaysWhenItRounded) {
  const double x[3] = {1e300, 1e-300, -1e300}, y[3] = {1, 1, 1};
  auto fixed = oracle_dot(x, 3, y, 3, OracleOptions{256});
  ASSERT_TRUE(fixed.ok());
  EXPECT_FALSE(fixed->exact_is_exact);
  EXPECT_EQ(fixed->f64, 0.0);  // 256 bits lose 1e-300 next to 1e300
  auto fast = evaluate_dot(x, 3, y, 3);
  ASSERT_TRUE(fast.ok());
  EXPECT_EQ(fast->f64, 1e-300);
  EXPECT_FALSE(oracle_dot(x, 3, y, 2).ok());
}

}  // namespace
}  // namespace saddlescope::reference
