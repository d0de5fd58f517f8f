// Per-op summaries of a run's op taps (ops.csv, store/schema.h): how far the kernels' results lie from
// the exact values, in ULPs, and how many lie beyond the a-priori rounding bound. Computed from the rows
// when asked for (`saddlescope ops`, the reports), never stored beside them. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/store/json_object.h"
#include "saddlescope/store/schema.h"

namespace saddlescope::analysis {

// What an ops.csv row's flag says (written by the op taps from reference::assess's report):
//   within        measured, |error| <= bound: rounding explains it
//   beyond        measured, |error| > bound: rounding does not explain it (TF32, a code-path difference)
//   nonfinite_input           the exact result is NaN/±inf and the observed value is the IEEE one
//   nonfinite_input_mismatch  the exact result is NaN/±inf and the observed value is not that
//   overflow                  exact finite, observed ±inf, and correct rounding overflows too
//   nonfinite_observed        exact finite, observed NaN/±inf that correct rounding does not give
//   not_evaluated             generic taps (probes/op_taps.h): an op the reference cannot evaluate yet ran
//                             `terms` times; no element was measured
bool is_measured(const std::string& flag);  // within or beyond

struct OpSummary {
  std::string op, phase, kernel, dtype;
  int64_t samples = 0;      // rows
  int64_t measured = 0;     // rows flagged within or beyond
  int64_t beyond = 0;       // rows flagged beyond
  // Beyond rows whose every term is exactly zero (bound 0) yet whose result is not: no sum of the
  // products, in any order or precision, gives that — the kernel computes something else (a transform
  // algorithm's residue, for example), not rounding.
  int64_t zero_terms = 0;
  int64_t nonfinite = 0;    // rows with a non-finite exact or observed value (the four other flags)
  int64_t not_evaluated = 0;  // calls of the op that ran unevaluated (not_evaluated rows' terms); not samples
  double median_abs_ulp = 0, max_abs_ulp = 0;  // over measured rows; NaN when there are none
  double fraction_beyond = 0;                  // beyond / measured; NaN when measured == 0
  double max_bound_ratio = 0;                  // over measured rows; NaN when there are none
  // As the report's JSON holds it (store/json_object.h).
  static auto json_keys() {
    using T = OpSummary;
    using store::key;
    return std::make_tuple(key("op", &T::op), key("phase", &T::phase), key("kernel", &T::kernel),
                           key("dtype", &T::dtype), key("samples", &T::samples), key("measured", &T::measured),
                           key("beyond", &T::beyond), key("zero_terms", &T::zero_terms), key("nonfinite", &T::nonfinite),
                           key("not_evaluated", &T::not_evaluated), key("median_abs_ulp", &T::median_abs_ulp),
                           key("max_abs_ulp", &T::max_abs_ulp), key("fraction_beyond", &T::fraction_beyond),
                           key("max_bound_ratio", &T::max_bound_ratio));
  }
};

// One summary per (op, phase, kernel, dtype), in the order they first appear in `rows` (a generic tap's
// op runs several kernels in its backward: mm for its weight, sum for its bias).
std::vector<OpSummary> summarize_ops(const std::vector<store::OpRow>& rows);

// A Markdown table: op, phase, dtype, samples, median and max |ULP error|, beyond the bound
// (count and fraction), the largest error/bound ratio, non-finite rows; with the kernel and the calls
// not evaluated where any op ran unevaluated (generic taps).
std::string ops_markdown(const std::vector<OpSummary>& summaries);

// Several runs side by side, one column per run (labels[i] heads runs[i]): per (op, phase, dtype), in
// the order they first appear, "median / max |ULP error| (percentage beyond the bound)", "—" where a
// run has no such rows. REQUIRES: labels.size() == runs.size().
std::string ops_comparison_markdown(const std::vector<std::string>& labels,
                                    const std::vector<std::vector<OpSummary>>& runs);

}  // namespace saddlescope::analysis
