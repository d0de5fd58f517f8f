#include "saddlescope/reference/dyadic.h"

#include <gmp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "saddlescope/base/status.h"

namespace saddlescope::reference {
namespace {

// A magnitude as little-endian base-2^32 digits; the top digit is non-zero.
struct Digits {
  const uint32_t* d;
  size_t size;
};

int bit_length(Digits m) { return 32 * static_cast<int>(m.size - 1) + (32 - __builtin_clz(m.d[m.size - 1])); }
int bit_length(const std::vector<uint32_t>& m) { return bit_length(Digits{m.data(), m.size()}); }

// Bits [from, from + count) of m as an integer; bits past the top read as 0. REQUIRES: count <= 64.
uint64_t bits(Digits m, int from, int count) {
  if (count <= 0) return 0;
  unsigned __int128 window = 0;
  const int k = from >> 5;
  for (int j = 2; j >= 0; --j) {
    const size_t i = static_cast<size_t>(k + j);
    window = (window << 32) | (i < m.size ? m.d[i] : 0u);
  }
  window >>= (from & 31);
  return count == 64 ? static_cast<uint64_t>(window)
                     : static_cast<uint64_t>(window) & ((uint64_t{1} << count) - 1);
}
uint64_t bits(const std::vector<uint32_t>& m, int from, int count) { return bits(Digits{m.data(), m.size()}, from, count); }

// Whether any of bits [0, count) of m is set.
bool any_below(Digits m, int count) {
  const size_t whole = static_cast<size_t>(count >> 5);
  for (size_t i = 0; i < whole && i < m.size; ++i)
    if (m.d[i] != 0) return true;
  return (count & 31) != 0 && whole < m.size && (m.d[whole] & ((uint32_t{1} << (count & 31)) - 1)) != 0;
}

// q · 2^e, exactly when representable (q < 2^64 an integer of at most 53 significant bits), ±inf past
// the range: ldexp's result, without its library call when 2^e is a normal binary64.
double scale(uint64_t q, int e) {
  const double v = static_cast<double>(q);
  if (e < -1022 || e > 1023) return std::ldexp(v, e);
  const uint64_t pow2_bits = static_cast<uint64_t>(e + 1023) << 52;
  double pow2;
  std::memcpy(&pow2, &pow2_bits, sizeof pow2);
  return v * pow2;  // exact, or overflow to inf, as ldexp
}

// Rounds ±m · 2^exponent to `p` significant bits with subnormals below 2^emin, nearest-even, unbounded
// above (the caller's ldexp/float conversion overflows to inf where IEEE 754 would). The result is
// q · 2^k exactly. m need not be canonical (low zero bits are allowed).
double round_to(bool negative, Digits m, int exponent, int p, int emin) {
  while (m.size > 0 && m.d[m.size - 1] == 0) --m.size;
  if (m.size == 0) return 0.0;
  const int length = bit_length(m);
  const int top = exponent + length - 1;
  const int keep = top >= emin ? p : p - (emin - top);  // significant bits kept; <= 0 deep underflow
  const int cut = length - keep;                        // bits of the magnitude below `cut` are dropped
  double r;
  if (cut <= 0) {
    r = scale(bits(m, 0, length), exponent);
  } else if (keep < 0) {
    r = 0;  // below half the smallest step: rounds to zero
  } else {
    // The top 64 bits (the leading 1 first), and whether any bit below them is set.
    const uint64_t head = length >= 64 ? bits(m, length - 64, 64) : bits(m, 0, length) << (64 - length);
    const bool below = length > 64 && any_below(m, length - 64);
    uint64_t q = keep > 0 ? head >> (64 - keep) : 0;                    // keep <= 53 < 64
    const uint64_t rest = keep > 0 ? head << keep : head;               // the dropped bits of head, at the top
    const bool half = (rest >> 63) != 0, sticky = (rest << 1) != 0 || below;
    if (half && ((q & 1) || sticky)) ++q;
    r = scale(q, exponent + cut);
  }
  return negative ? -r : r;
}

double round_to(const Dyadic& x, int p, int emin) {
  return round_to(x.negative, Digits{x.magnitude.data(), x.magnitude.size()}, x.exponent, p, emin);
}

}  // namespace

Dyadic make_dyadic(bool negative, std::vector<uint32_t> digits, int exponent) {
  size_t low = 0, high = digits.size();
  while (low < high && digits[low] == 0) ++low;
  if (low == high) return Dyadic{};
  while (digits[high - 1] == 0) --high;
  // One pass: drop the low zero digits and shift out the low zero bits together (on every exact
  // evaluation's path, so no erase and second pass).
  const int shift = __builtin_ctz(digits[low]);
  const size_t count = high - low;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t cur = digits[low + i], next = i + 1 < count ? digits[low + i + 1] : 0u;
    digits[i] = shift == 0 ? cur : (cur >> shift) | (next << (32 - shift));
  }
  digits.resize(count);
  if (digits.back() == 0) digits.pop_back();
  return Dyadic{negative, std::move(digits), exponent + 32 * static_cast<int>(low) + shift};
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

double round_to_double(bool negative, const uint32_t* digits, size_t count, int exponent) {
  return round_to(negative, Digits{digits, count}, exponent, 53, -1022);
}

// Rounded once, to 24 bits with binary32's subnormal range; the conversion to float is then exact (or
// overflows to inf exactly when round-to-nearest in binary32 would).
float round_to_float(const Dyadic& x) {
  const double r = round_to(x, 24, -126);
  if (std::fabs(r) >= 0x1p128) return r > 0 ? HUGE_VALF : -HUGE_VALF;  // the cast would be undefined
  return static_cast<float>(r);
}

Dyadic divide_for_rounding(const Dyadic& x, int64_t m) {
  SADDLESCOPE_CHECK(m >= 1);
  if (m == 1 || x.is_zero()) return x;
  mpz_t z, q, r;
  mpz_inits(z, q, r, nullptr);
  mpz_import(z, x.magnitude.size(), -1, sizeof(uint32_t), 0, 0, x.magnitude.data());
  const int m_bits = 64 - __builtin_clzll(static_cast<uint64_t>(m));
  const int shift = std::max(0, 71 + m_bits - bit_length(x.magnitude));  // quotient >= 2^70
  mpz_mul_2exp(z, z, static_cast<mp_bitcnt_t>(shift + 1));  // the +1 leaves the lowest bit for sticky
  mpz_tdiv_qr_ui(q, r, z, static_cast<unsigned long>(m));
  if (mpz_sgn(r) != 0) mpz_setbit(q, 0);  // sticky: the bits below the quotient's lowest are not all 0
  std::vector<uint32_t> digits((mpz_sizeinbase(q, 2) + 31) / 32, 0);
  size_t count = 0;
  mpz_export(digits.data(), &count, -1, sizeof(uint32_t), 0, 0, q);
  digits.resize(count);
  mpz_clears(z, q, r, nullptr);
  return make_dyadic(x.negative, std::move(digits), x.exponent - shift - 1);
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
