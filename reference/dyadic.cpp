#include "saddlescope/reference/dyadic.h"

#include <gmp.h>

#include <cmath>
#include <cstring>

#include "saddlescope/base/status.h"

namespace saddlescope::reference {
namespace {

int bit_length(const std::vector<uint32_t>& m) {
  return 32 * static_cast<int>(m.size() - 1) + (32 - __builtin_clz(m.back()));
}

// Bits [from, from + count) of m as an integer; bits past the top read as 0. REQUIRES: count <= 64.
uint64_t bits(const std::vector<uint32_t>& m, int from, int count) {
  if (count <= 0) return 0;
  unsigned __int128 window = 0;
  const int k = from >> 5;
  for (int j = 2; j >= 0; --j) {
    const size_t i = static_cast<size_t>(k + j);
    window = (window << 32) | (i < m.size() ? m[i] : 0u);
  }
  window >>= (from & 31);
  return count == 64 ? static_cast<uint64_t>(window)
                     : static_cast<uint64_t>(window) & ((uint64_t{1} << count) - 1);
}

// Rounds x to `p` significant bits with subnormals below 2^emin, nearest-even, unbounded above (the
// caller's ldexp/float conversion overflows to inf where IEEE 754 would). The result is q · 2^k exactly.
double round_to(const Dyadic& x, int p, int emin) {
  if (x.is_zero()) return 0.0;
  const int length = bit_length(x.magnitude);
  const int top = x.exponent + length - 1;
  const int keep = top >= emin ? p : p - (emin - top);  // significant bits kept; <= 0 deep underflow
  const int cut = length - keep;                        // bits of the magnitude below `cut` are dropped
  double r;
  if (cut <= 0) {
    r = std::ldexp(static_cast<double>(bits(x.magnitude, 0, length)), x.exponent);
  } else {
    uint64_t q = keep > 0 ? bits(x.magnitude, cut, keep) : 0;
    const bool half = cut - 1 < length && bits(x.magnitude, cut - 1, 1) != 0;
    const bool sticky = cut > 1;  // the magnitude is odd, so some bit below the rounding bit is set
    if (half && (sticky || (q & 1))) ++q;
    r = std::ldexp(static_cast<double>(q), x.exponent + cut);
  }
  return x.negative ? -r : r;
}

}  // namespace

Dyadic make_dyadic(bool negative, std::vector<uint32_t> digits, int exponent) {
  size_t low = 0;
  while (low < digits.size() && digits[low] == 0) ++low;
  if (low == digits.size()) return Dyadic{};
  digits.erase(digits.begin(), digits.begin() + static_cast<std::ptrdiff_t>(low));
  exponent += 32 * static_cast<int>(low);
  const int shift = __builtin_ctz(digits[0]);
  if (shift > 0) {
    for (size_t i = 0; i < digits.size(); ++i) {
      const uint32_t next = i + 1 < digits.size() ? digits[i + 1] : 0u;
      digits[i] = (digits[i] >> shift) | (next << (32 - shift));
    }
    exponent += shift;
  }
  while (digits.back() == 0) digits.pop_back();
  return Dyadic{negative, std::move(digits), exponent};
}

Dyadic to_dyadic(double x) {
  SADDLESCOPE_CHECK(std::isfinite(x));
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  const int biased = static_cast<int>((b >> 52) & 0x7ff);
  uint64_t m = b & ((uint64_t{1} << 52) - 1);
  if (biased != 0) m |= uint64_t{1} << 52;
  return make_dyadic((b >> 63) != 0, {static_cast<uint32_t>(m), static_cast<uint32_t>(m >> 32)},
                     biased == 0 ? -1074 : biased - 1075);
}

Dyadic to_dyadic(float x) { return to_dyadic(static_cast<double>(x)); }

int top_exponent(const Dyadic& x) {
  SADDLESCOPE_CHECK(!x.is_zero());
  return x.exponent + bit_length(x.magnitude) - 1;
}

double round_to_double(const Dyadic& x) { return round_to(x, 53, -1022); }

// Rounded once, to 24 bits with binary32's subnormal range; the conversion to float is then exact (or
// overflows to inf exactly when round-to-nearest in binary32 would).
float round_to_float(const Dyadic& x) {
  const double r = round_to(x, 24, -126);
  if (std::fabs(r) >= 0x1p128) return r > 0 ? HUGE_VALF : -HUGE_VALF;  // the cast would be undefined
  return static_cast<float>(r);
}

std::string to_decimal(const Dyadic& x) {
  if (x.is_zero()) return "0";
  mpz_t z;
  mpz_init(z);
  mpz_import(z, x.magnitude.size(), -1, sizeof(uint32_t), 0, 0, x.magnitude.data());
  int fraction_digits = 0;
  if (x.exponent >= 0) {
    mpz_mul_2exp(z, z, static_cast<mp_bitcnt_t>(x.exponent));
  } else {  // m · 2^-k = m · 5^k / 10^k
    mpz_t five;
    mpz_init(five);
    mpz_ui_pow_ui(five, 5, static_cast<unsigned long>(-x.exponent));
    mpz_mul(z, z, five);
    mpz_clear(five);
    fraction_digits = -x.exponent;
  }
  std::string digits(mpz_sizeinbase(z, 10) + 2, '\0');
  mpz_get_str(digits.data(), 10, z);
  digits.resize(std::strlen(digits.c_str()));
  mpz_clear(z);
  if (fraction_digits > 0) {
    if (static_cast<int>(digits.size()) <= fraction_digits) {
      digits.insert(0, static_cast<size_t>(fraction_digits) - digits.size() + 1, '0');
    }
    digits.insert(digits.size() - static_cast<size_t>(fraction_digits), ".");
  }
  return x.negative ? "-" + digits : digits;
}

}  // namespace saddlescope::reference
