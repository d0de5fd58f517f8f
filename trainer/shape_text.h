// Internal to trainer/: a tensor's shape as messages write it.
#pragma once

#include <string>

namespace saddlescope::trainer {

// "(6, 12)"; "()" for a scalar. `dims`: any sequence of integers (a std::vector, an at::IntArrayRef).
template <class Dims>
std::string shape_text(const Dims& dims) {
  std::string s;
  for (auto d : dims) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "(" + s + ")";
}

}  // namespace saddlescope::trainer
