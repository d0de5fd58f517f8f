// Internal: between the module's exact values (Dyadic) and GMP/MPFR numbers, and how an MPFR value
// whose rounding is proven becomes an Evaluation's exact value and its roundings (the oracle's,
// elementwise.cpp's, gelu.cpp's, normalization.cpp's and softmax_backward.cpp's way back).
#pragma once

#include <gmp.h>
#include <mpfr.h>

#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/reference/dyadic.h"
#include "saddlescope/reference/evaluation.h"

namespace saddlescope::reference::internal {

// The precision of `exact` for irrational values (evaluation.h).
inline constexpr mpfr_prec_t kExactBits = 128;

// z · 2^exponent as a Dyadic.
inline Dyadic dyadic_of(const mpz_t z, long exponent) {
  std::vector<uint32_t> digits((mpz_sizeinbase(z, 2) + 31) / 32 + 1, 0);
  size_t count = 0;
  mpz_export(digits.data(), &count, -1, sizeof(uint32_t), 0, 0, z);
  digits.resize(count);
  return make_dyadic(mpz_sgn(z) < 0, std::move(digits), static_cast<int>(exponent));
}

// REQUIRES: x finite.
inline Dyadic dyadic_of(const mpfr_t x) {
  mpz_t z;
  mpz_init(z);
  const mpfr_exp_t e = mpfr_get_z_2exp(z, x);
  Dyadic d = dyadic_of(z, e);
  mpz_clear(z);
  return d;
}

// z = x's signed magnitude, so that x = z · 2^x.exponent. REQUIRES: z initialised.
inline void set_z(mpz_t z, const Dyadic& x) {
  mpz_import(z, x.magnitude.size(), -1, sizeof(uint32_t), 0, 0, x.magnitude.data());
  if (x.negative) mpz_neg(z, z);
}

// e.exact = y rounded to nearest at kExactBits, e.f32 and e.f64 = y rounded to nearest: correct
// roundings of the true value when y's 129-bit rounding is proven (Ziv's loop, mpfr_can_round) or y is
// the value rounded to odd at >= 130 bits. REQUIRES: y finite.
inline void set_from_mpfr(Evaluation& e, const mpfr_t y) {
  mpfr_t r;
  mpfr_init2(r, kExactBits);
  mpfr_set(r, y, MPFR_RNDN);
  e.exact = dyadic_of(r);
  mpfr_clear(r);
  e.f32 = mpfr_get_flt(y, MPFR_RNDN);
  e.f64 = mpfr_get_d(y, MPFR_RNDN);
}

// Ziv's strategy: `approximate(y)` sets y at y's precision and returns err with |y − value| <=
// 2^(EXP(y) − err); the precision doubles from kExactBits + 32 until mpfr_can_round proves the 129-bit
// rounding (hence the 25- and 54-bit ones), then set_from_mpfr. REQUIRES: the value irrational (a
// rational one on a breakpoint would never round: checked at 2^20 bits).
template <class Approximate>
void round_by_ziv(Evaluation& e, Approximate approximate) {
  mpfr_t y;
  for (mpfr_prec_t p = kExactBits + 32;; p *= 2) {
    SADDLESCOPE_CHECK(p <= (mpfr_prec_t{1} << 20));  // Ziv's loop ends: the value is irrational here
    mpfr_init2(y, p);
    if (mpfr_can_round(y, approximate(y), MPFR_RNDN, MPFR_RNDZ, kExactBits + 1)) break;
    mpfr_clear(y);
  }
  set_from_mpfr(e, y);
  mpfr_clear(y);
}

}  // namespace saddlescope::reference::internal
