// The correct-rounding check of the MPFR-oracle tests: a value computed here independently at high
// precision, and a float that must be its rounding to nearest.
#pragma once

#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <string>

namespace saddlescope::reference::testing {

// `rounded` is strictly nearer to `value` than both its neighbours in T (so ties never pass).
template <class T>
void expect_nearest(mpfr_srcptr value, T rounded, const std::string& context = "") {
  mpfr_t mine, theirs;
  mpfr_inits2(mpfr_get_prec(value), mine, theirs, static_cast<mpfr_ptr>(nullptr));
  for (T other : {std::nextafter(rounded, T(-INFINITY)), std::nextafter(rounded, T(INFINITY))}) {
    mpfr_set_d(mine, static_cast<double>(rounded), MPFR_RNDN);
    mpfr_sub(mine, value, mine, MPFR_RNDN);
    mpfr_set_d(theirs, static_cast<double>(other), MPFR_RNDN);
    mpfr_sub(theirs, value, theirs, MPFR_RNDN);
    EXPECT_LT(mpfr_cmpabs(mine, theirs), 0) << context << rounded << " vs " << other;
  }
  mpfr_clears(mine, theirs, static_cast<mpfr_ptr>(nullptr));
}

}  // namespace saddlescope::reference::testing
