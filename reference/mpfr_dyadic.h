// Internal: the exact value of a finite MPFR number as a Dyadic (the oracle's and elementwise.cpp's way
// from MPFR back to the module's exact values).
#pragma once

#include <gmp.h>
#include <mpfr.h>

#include <vector>

#include "saddlescope/reference/dyadic.h"

namespace saddlescope::reference::internal {

// REQUIRES: x finite.
inline Dyadic dyadic_of(const mpfr_t x) {
  mpz_t z;
  mpz_init(z);
  const mpfr_exp_t e = mpfr_get_z_2exp(z, x);
  std::vector<uint32_t> digits((mpz_sizeinbase(z, 2) + 31) / 32 + 1, 0);
  size_t count = 0;
  mpz_export(digits.data(), &count, -1, sizeof(uint32_t), 0, 0, z);
  digits.resize(count);
  const bool negative = mpz_sgn(z) < 0;
  mpz_clear(z);
  return make_dyadic(negative, std::move(digits), static_cast<int>(e));
}

}  // namespace saddlescope::reference::internal
