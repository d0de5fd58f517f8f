// The two IEEE 754 binary formats the toolkit measures, and the a-priori rounding bound of DESIGN.md.
//
// Terms (Higham, "Accuracy and Stability of Numerical Algorithms", ch. 2-3): u is the unit roundoff
// (half the gap between 1 and the next number), gamma_n = n u / (1 - n u) bounds the relative error
// accumulated over n roundings, and an ULP is the gap between adjacent numbers at a given magnitude.
#pragma once

#include <cstdint>

namespace saddlescope::reference {

enum class Format { kFloat32, kFloat64 };

// "float32" / "float64".
const char* format_name(Format f);

// Significand bits including the hidden bit: 24 / 53.
int precision(Format f);

// Exponent of the smallest normal number: -126 / -1022.
int min_normal_exponent(Format f);

// Exponent of the largest finite number: 127 / 1023.
int max_exponent(Format f);

// u = 2^-24 / 2^-53.
double unit_roundoff(Format f);

// gamma_n = n u / (1 - n u), rounded to nearest in double (relative error below 2^-51, negligible for a
// bound). +inf when n u >= 1, where the bound says nothing. REQUIRES: n >= 0.
double gamma_n(int64_t n, Format f);

// log2 of the ULP at a value whose binary exponent is `top_exponent` (floor(log2|x|)), in format f:
// max(top_exponent, emin) - p + 1. Below the normal range the ULP is that of the subnormals.
int ulp_exponent(int top_exponent, Format f);

}  // namespace saddlescope::reference
