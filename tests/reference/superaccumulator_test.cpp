// The accumulator's live-digit range: values at both ends of the range, negative totals, copies and
// accumulator-to-accumulator additions, each checked against GMP rationals.
#include "saddlescope/reference/superaccumulator.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "rational.h"

namespace saddlescope::reference {
namespace {

using testing::Rational;

bool equals(const Dyadic& d, const Rational& q) {
  Rational parsed;
  return testing::parse_decimal(to_decimal(d), parsed) && mpq_equal(parsed.get(), q.get());
}

TEST(Superaccumulator, EmptyIsZeroAndStaysZeroThroughCopies) {
  Superaccumulator a;
  EXPECT_TRUE(a.value().is_zero());
  Superaccumulator b = a;
  b.add(a, /*negate=*/true);
  EXPECT_TRUE(b.value().is_zero());
}

TEST(Superaccumulator, ExtremesOfTheRangeAndNegativeTotals) {
  const double tiny = std::numeric_limits<double>::denorm_min(), huge = std::numeric_limits<double>::max();
  Superaccumulator a;
  a.add_product(tiny, tiny);    // 2^-2148, the lowest bit of the range
  a.add_product(huge, huge);    // near 2^2048
  a.add_product(-huge, huge);   // cancels it exactly: the live range stays wide, the value tiny
  a.add_product(-tiny, 0.75);   // a negative total
  Rational q, t(tiny), h(huge), m;
  mpq_mul(q.get(), t.get(), t.get());
  mpq_set_d(m.get(), -0.75);
  mpq_mul(m.get(), m.get(), t.get());
  mpq_add(q.get(), q.get(), m.get());
  EXPECT_TRUE(equals(a.value(), q)) << to_decimal(a.value()).substr(0, 40);
  EXPECT_TRUE(a.value().negative);
  // A copy holds the same value; adding it negated to the original gives zero.
  Superaccumulator b = a;
  EXPECT_EQ(b.value(), a.value());
  b.add(a, /*negate=*/true);
  EXPECT_TRUE(b.value().is_zero());
}

TEST(Superaccumulator, CarriesAtTheTopOfTheRangeMoveUp) {
  // Products near 2^2048 land on the highest digits, where the live range cannot grow by its margin:
  // adding accumulators then normalises digits holding far more than 2^32.
  const double huge = std::numeric_limits<double>::max();
  Superaccumulator a, b;
  for (int i = 0; i < 5000; ++i) a.add_product(huge, huge);
  b.add(a);
  b.add(a);
  b.add(a, /*negate=*/true);
  Rational q(huge), count(5000.0);
  mpq_mul(q.get(), q.get(), q.get());
  mpq_mul(q.get(), q.get(), count.get());
  EXPECT_TRUE(equals(b.value(), q));
}

TEST(Superaccumulator, RandomTermsAddedOneByOneAndThroughAnotherAccumulator) {
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-1000, 1000);
  for (int rep = 0; rep < 20; ++rep) {
    Superaccumulator a, b;
    Rational q;
    for (int i = 0; i < 50; ++i) {
      const double x = std::ldexp(unit(rng), exponent(rng)), y = std::ldexp(unit(rng), exponent(rng) / 4);
      (i % 2 ? a : b).add_product(x, y);
      Rational rx(x), ry(y);
      mpq_mul(rx.get(), rx.get(), ry.get());
      mpq_add(q.get(), q.get(), rx.get());
    }
    a.add(b);
    EXPECT_TRUE(equals(a.value(), q)) << "rep " << rep;
    a.add(to_dyadic(-1.0), /*negate=*/true);  // + 1
    Rational one(1.0);
    mpq_add(q.get(), q.get(), one.get());
    EXPECT_TRUE(equals(a.value(), q)) << "rep " << rep;
  }
}

}  // namespace
}  // namespace saddlescope::reference
