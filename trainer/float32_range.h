// Range checks for floating-point config values, shared by the config key table and the grammars it
// uses (perturbation_spec.cpp). Every floating-point key ends up as a float32 value (the learning rate
// and Adam state, scaled weights, generated data, noise), where a value beyond float32's range would
// become ±inf and a nonzero one below its smallest would become 0.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

namespace saddlescope::trainer {

inline constexpr double kFloat32Max = std::numeric_limits<float>::max();
inline constexpr double kFloat32Min = std::numeric_limits<float>::denorm_min();

// "" or why the finite `v` is not a value float32 holds: "must be at most ... , got 1e+39".
inline std::string in_float32(double v) {
  if (std::fabs(v) > kFloat32Max) return fmt::format("must be at most {} (float32's largest value), got {}", kFloat32Max, v);
  if (v != 0 && std::fabs(v) < kFloat32Min)
    return fmt::format("must be 0 or at least {} (float32's smallest positive value), got {}", kFloat32Min, v);
  return "";
}

// "" or why `v` is not a finite value > 0 that float32 holds.
inline std::string positive_float32(double v) {
  if (!(v > 0 && std::isfinite(v))) return fmt::format("must be > 0 and finite, got {}", v);
  if (v < kFloat32Min) return fmt::format("must be at least {} (float32's smallest positive value), got {}", kFloat32Min, v);
  return in_float32(v);
}

}  // namespace saddlescope::trainer
