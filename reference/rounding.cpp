#include "saddlescope/reference/rounding.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace saddlescope::reference {

const char* format_name(Format f) { return f == Format::kFloat32 ? "float32" : "float64"; }

int precision(Format f) { return f == Format::kFloat32 ? 24 : 53; }

int min_normal_exponent(Format f) { return f == Format::kFloat32 ? -126 : -1022; }

int max_exponent(Format f) { return f == Format::kFloat32 ? 127 : 1023; }

double unit_roundoff(Format f) { return std::ldexp(1.0, -precision(f)); }

double gamma_n(int64_t n, Format f) {
  const double nu = static_cast<double>(n) * unit_roundoff(f);
  if (nu >= 1) return std::numeric_limits<double>::infinity();
  return nu / (1 - nu);
}

int ulp_exponent(int top_exponent, Format f) {
  return std::max(top_exponent, min_normal_exponent(f)) - precision(f) + 1;
}

}  // namespace saddlescope::reference
