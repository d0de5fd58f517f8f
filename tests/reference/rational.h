// Independent exact arithmetic for the tests: GMP rationals, sharing no code with the module.
#pragma once

#include <gmp.h>
#include <mpfr.h>

#include <cstdint>
#include <string>

namespace saddlescope::reference::testing {

// An owning mpq_t.
class Rational {
 public:
  Rational() { mpq_init(q_); }
  explicit Rational(double x) : Rational() { mpq_set_d(q_, x); }  // exact for finite x
  Rational(const Rational&) = delete;
  Rational& operator=(const Rational&) = delete;
  ~Rational() { mpq_clear(q_); }
  mpq_ptr get() { return q_; }
  mpq_srcptr get() const { return q_; }

 private:
  mpq_t q_;
};

// sum x_i y_i (y == nullptr: sum x_i), exactly.
template <class T>
void exact_dot(const T* x, const T* y, int64_t n, Rational& out) {
  mpq_set_ui(out.get(), 0, 1);
  Rational a, b;
  for (int64_t i = 0; i < n; ++i) {
    mpq_set_d(a.get(), static_cast<double>(x[i]));
    if (y) {
      mpq_set_d(b.get(), static_cast<double>(y[i]));
      mpq_mul(a.get(), a.get(), b.get());
    }
    mpq_add(out.get(), out.get(), a.get());
  }
}

// Parses a plain decimal ("-12.375", "0", "7") into `out`. Returns false when it is not one.
inline bool parse_decimal(const std::string& s, Rational& out) {
  std::string digits;
  size_t fraction = 0;
  bool point = false;
  size_t i = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) i = 1;
  for (; i < s.size(); ++i) {
    if (s[i] == '.' && !point) {
      point = true;
    } else if (s[i] >= '0' && s[i] <= '9') {
      digits += s[i];
      if (point) ++fraction;
    } else {
      return false;
    }
  }
  if (digits.empty()) return false;
  std::string text = (negative ? "-" : "") + digits + "/1" + std::string(fraction, '0');
  if (mpq_set_str(out.get(), text.c_str(), 10) != 0) return false;
  mpq_canonicalize(out.get());
  return true;
}

// q rounded to nearest with `bits` significant bits (one rounding, through MPFR), returned exactly as a
// double. REQUIRES: bits <= 53, and no underflow or overflow in the format meant.
inline double round_rational(const Rational& q, int bits) {
  mpfr_t f;
  mpfr_init2(f, bits);
  mpfr_set_q(f, q.get(), MPFR_RNDN);
  const double d = mpfr_get_d(f, MPFR_RNDN);
  mpfr_clear(f);
  return d;
}

// q rounded to nearest binary64 / binary32 (REQUIRES: no underflow).
inline double to_double(const Rational& q) { return round_rational(q, 53); }
inline float to_float(const Rational& q) { return static_cast<float>(round_rational(q, 24)); }

}  // namespace saddlescope::reference::testing
