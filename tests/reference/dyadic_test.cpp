// Dyadic values: canonical form, exact decimals, correct rounding at the edges, ULPs and gamma_n.
#include "saddlescope/reference/dyadic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "saddlescope/reference/rounding.h"

namespace saddlescope::reference {
namespace {

Dyadic pow2(int e, bool negative = false) { return make_dyadic(negative, {1}, e); }

TEST(Dyadic, CanonicalFormMakesEqualValuesEqual) {
  EXPECT_EQ(make_dyadic(false, {4}, 0), pow2(2));
  EXPECT_EQ(make_dyadic(false, {0, 0, 1}, -64), pow2(0));
  EXPECT_EQ(make_dyadic(true, {0, 0}, 7), Dyadic{});
  EXPECT_EQ(to_dyadic(-0.0), Dyadic{});
  EXPECT_EQ(to_dyadic(0.75f), make_dyadic(false, {3}, -2));
}

TEST(Dyadic, DecimalHasEveryDigit) {
  EXPECT_EQ(to_decimal(to_dyadic(0.1f)), "0.100000001490116119384765625");
  EXPECT_EQ(to_decimal(to_dyadic(-12.375)), "-12.375");
  EXPECT_EQ(to_decimal(to_dyadic(0.0)), "0");
  EXPECT_EQ(to_decimal(to_dyadic(0x1p70)), "1180591620717411303424");
  const std::string tiny = to_decimal(to_dyadic(std::numeric_limits<double>::denorm_min()));
  EXPECT_EQ(tiny.substr(0, 8), "0.000000");
  EXPECT_EQ(tiny.size(), 2u + 1074u);  // "0." then 1074 fraction digits, the last one a 5
  EXPECT_EQ(tiny.back(), '5');
}

TEST(Dyadic, RoundsToNearestEvenWithGradualUnderflow) {
  // 1 + 2^-53 is a tie between 1 and 1 + 2^-52: even is 1. 1 + 3·2^-54 rounds up.
  EXPECT_EQ(round_to_double(make_dyadic(false, {1, 1 << 21}, -53)), 1.0);
  EXPECT_EQ(round_to_double(make_dyadic(false, {3, 1 << 22}, -54)), 1.0 + 0x1p-52);
  // Half the smallest subnormal ties to 0 (even); a bit more rounds up; negative keeps its sign.
  EXPECT_EQ(round_to_double(pow2(-1075)), 0.0);
  EXPECT_EQ(round_to_double(make_dyadic(false, {3}, -1076)), 0x1p-1074);
  EXPECT_TRUE(std::signbit(round_to_double(pow2(-1100, true))));
  EXPECT_EQ(round_to_float(pow2(-150)), 0.0f);
  EXPECT_EQ(round_to_float(make_dyadic(false, {3}, -151)), 0x1p-149f);
  // Overflow: 2^128 - 2^103 is the float32 tie above FLT_MAX and goes to inf; just below it does not.
  EXPECT_EQ(round_to_float(make_dyadic(false, {(1u << 25) - 1}, 103)), INFINITY);
  EXPECT_EQ(round_to_float(make_dyadic(false, {(1u << 26) - 3}, 102)),
            std::numeric_limits<float>::max());
  EXPECT_EQ(round_to_double(pow2(1024, true)), -INFINITY);
}

TEST(Rounding, GammaNAndUlps) {
  EXPECT_EQ(unit_roundoff(Format::kFloat32), 0x1p-24);
  EXPECT_EQ(gamma_n(0, Format::kFloat64), 0.0);
  EXPECT_DOUBLE_EQ(gamma_n(1000, Format::kFloat32), 1000 * 0x1p-24 / (1 - 1000 * 0x1p-24));
  EXPECT_EQ(gamma_n(int64_t{1} << 24, Format::kFloat32), INFINITY);  // n u = 1: no bound
  EXPECT_EQ(ulp_exponent(0, Format::kFloat32), -23);
  EXPECT_EQ(ulp_exponent(-200, Format::kFloat32), -149);  // subnormal ULP
  EXPECT_EQ(ulp_exponent(0, Format::kFloat64), -52);
}

}  // namespace
}  // namespace saddlescope::reference
