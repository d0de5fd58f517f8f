// The MPFR oracle: sums and dot products evaluated with the MPFR C API, independently of the
// Superaccumulator. Tests hold the fast path to it bit for bit; it is too slow for sampling in training.
//
// By default the working precision is derived from the inputs' exponent range (top bit of the largest
// product, lowest bit of the smallest, plus log2 n carry bits), so every product and partial sum is exact
// and the float32/float64 results are MPFR's correctly rounded mpfr_get_flt / mpfr_get_d.
#pragma once

#include <cstdint>

#include "saddlescope/base/status.h"
#include "saddlescope/reference/evaluation.h"

namespace saddlescope::reference {

struct OracleOptions {
  // Working precision in bits; 0 chooses enough for an exact result. A fixed value (e.g. 256, as in the
  // benchmark) may round; Evaluation::exact_is_exact then says whether any operation did.
  int64_t precision_bits = 0;
};

// Same contract, errors and non-finite semantics as evaluate_sum / evaluate_dot (evaluation.h).
Result<Evaluation> oracle_sum(const float* a, int64_t n, const OracleOptions& options = {});
Result<Evaluation> oracle_sum(const double* a, int64_t n, const OracleOptions& options = {});
Result<Evaluation> oracle_dot(const float* a, int64_t na, const float* b, int64_t nb,
                              const OracleOptions& options = {});
Result<Evaluation> oracle_dot(const double* a, int64_t na, const double* b, int64_t nb,
                              const OracleOptions& options = {});

}  // namespace saddlescope::reference
