// Dyadic rationals held exactly: the exact value of any sum or dot product of binary floats.
//
// A Dyadic is ±magnitude · 2^exponent with an integer magnitude. The form is canonical (magnitude odd,
// zero is +0 with no digits), so two Dyadics are equal exactly when their members are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace saddlescope::reference {

struct Dyadic {
  bool negative = false;
  std::vector<uint32_t> magnitude;  // little-endian base-2^32 digits; empty for zero, odd otherwise
  int exponent = 0;                 // weight of the lowest magnitude bit is 2^exponent; 0 for zero

  bool is_zero() const { return magnitude.empty(); }
  bool operator==(const Dyadic& o) const {
    return negative == o.negative && exponent == o.exponent && magnitude == o.magnitude;
  }
  bool operator!=(const Dyadic& o) const { return !(*this == o); }
};

// The canonical Dyadic equal to ±digits · 2^exponent (digits little-endian base 2^32, any zeros).
Dyadic make_dyadic(bool negative, std::vector<uint32_t> digits, int exponent);

// Exact conversions. REQUIRES: x finite. Both zeros give +0: a Dyadic has no signed zero.
Dyadic to_dyadic(double x);
Dyadic to_dyadic(float x);

// floor(log2|x|). REQUIRES: !x.is_zero().
int top_exponent(const Dyadic& x);

// x rounded to nearest, ties to even, in binary64 / binary32, with gradual underflow (a tiny negative
// value rounds to -0) and overflow to ±inf: the result IEEE 754 arithmetic would give with one rounding.
double round_to_double(const Dyadic& x);
float round_to_float(const Dyadic& x);
// The same for ±digits · 2^exponent given as `count` little-endian base-2^32 digits in any form (zero
// digits anywhere): rounding without building a Dyadic.
double round_to_double(bool negative, const uint32_t* digits, size_t count, int exponent);

// A Dyadic that stands in for the rational x / m when rounding: it has the same floor(log2|.|), and
// rounding it to nearest in any format of at most 64 significant bits (subnormals included), after any
// exact scaling by a power of two, gives what rounding x / m would. It is x / m truncated to at least 70
// significant bits plus a sticky bit (set when the division was inexact). REQUIRES: m >= 1.
Dyadic divide_for_rounding(const Dyadic& x, int64_t m);

// Every digit of x in plain decimal: "-12.5", "0.100000001490116119384765625", "0". Finite because a
// dyadic rational's expansion terminates; no exponent notation and no trailing zeros after the point.
std::string to_decimal(const Dyadic& x);

}  // namespace saddlescope::reference
