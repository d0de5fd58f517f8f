// ops.csv, the rows the op taps write (op_taps.h), and their per-op summary. Torch-free, so that the
// `saddlescope ops` command and any reader of a run can summarise a run without LibTorch.
//
//   ops.csv          one row per sampled element: kOpsColumns
//   ops_summary.csv  one row per (op, phase): kOpsSummaryColumns, written when the run's taps finish
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/reference/evaluation.h"

namespace saddlescope::probes {

// step, op, phase (fwd | wgrad), index, observed, exact (the exact value rounded to nearest binary64),
// ulp_error (signed, in ULPs of the exact value in `dtype`), bound (the a-priori bound, absolute),
// bound_ratio (|error| / bound), call (which call of the op, e.g. PredNet's frame; -1 for wgrad, which
// sums every call), kernel (linear | conv2d | sigmoid | tanh | relu | mse_loss), dtype (float32 |
// float64: the format of the data, which the ULPs and the bound are in), terms (products and additions
// summed; 1 for an activation), flag (flag_of below).
extern const std::vector<std::string> kOpsColumns;
extern const std::vector<std::string> kOpsSummaryColumns;

// What a row says, from reference::assess's report:
//   within        measured, |error| <= bound: rounding explains it
//   beyond        measured, |error| > bound: rounding does not explain it (TF32, a code-path difference)
//   nonfinite_input           the exact result is NaN/±inf and the observed value is the IEEE one
//   nonfinite_input_mismatch  the exact result is NaN/±inf and the observed value is not that
//   overflow                  exact finite, observed ±inf, and correct rounding overflows too
//   nonfinite_observed        exact finite, observed NaN/±inf that correct rounding does not give
const char* flag_of(const reference::ErrorReport& r);

// The fields of an ops.csv row that the summary needs.
struct OpRow {
  int64_t step = 0;
  std::string op, phase, kernel, dtype, flag;
  double ulp_error = 0, bound_ratio = 0;  // NaN unless flag is within/beyond
};

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
  double median_abs_ulp = 0, max_abs_ulp = 0;  // over measured rows; NaN when there are none
  double fraction_beyond = 0;                  // beyond / measured; NaN when measured == 0
  double max_bound_ratio = 0;                  // over measured rows; NaN when there are none
};

// One summary per (op, phase, dtype), in the order the pairs first appear in `rows`.
std::vector<OpSummary> summarize_ops(const std::vector<OpRow>& rows);

// Reads <run_dir>/ops.csv. Errors name the file and line (a missing column, a malformed number).
Result<std::vector<OpRow>> read_ops_csv(const std::string& path);

// Writes the summaries as a CSV file (kOpsSummaryColumns), atomically.
Status write_ops_summary(const std::string& path, const std::vector<OpSummary>& summaries);

// A Markdown table: op, phase, dtype, samples, median and max |ULP error|, beyond the bound
// (count and fraction), the largest error/bound ratio, non-finite rows.
std::string ops_markdown(const std::vector<OpSummary>& summaries);

// Several runs side by side, one column per run (labels[i] heads runs[i]): per (op, phase, dtype), in
// the order they first appear, "median / max |ULP error| (percentage beyond the bound)", "—" where a
// run has no such rows. REQUIRES: labels.size() == runs.size().
std::string ops_comparison_markdown(const std::vector<std::string>& labels,
                                    const std::vector<std::vector<OpSummary>>& runs);

}  // namespace saddlescope::probes
