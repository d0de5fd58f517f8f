// Batch-invariance results (`saddlescope invariance --json`, trainer/invariance.h) summarised one row per
// result: the table of docs/results/batch-invariance/*/table.md (`saddlescope invariance-table`) and the
// "Batch invariance" section of a study's report (its invariance/*.json). Torch-free: it reads the JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::reports {

struct InvarianceRow {
  std::string model, device, config;  // from a file named MODEL-DEVICE-CONFIG.json; else the JSON's model
                                      // and device, and the file's stem as config
  bool invariant = false;             // every example bitwise equal in every case
  int64_t cases_equal = 0, cases = 0; // cases: batch sizes × positions
  double max_ulp = 0;                 // the prediction's largest ULP difference (inf: not finite)
  double max_relative = 0;            // ... relative to the output's largest magnitude
  std::optional<double> input_grad_max_relative;  // with --backward
  std::string first_ops;              // the two first ops named most often: "`op` phase how (cases), bound"
  int64_t batch = 0;                  // the largest batch size, whose time is shown
  double ms_min = 0, ms_median = 0, ms_max = 0;  // one evaluation at `batch` (forward, and backward)
  double time_ratio = 1;              // median against the first row of the same model and device
};

// Reads the results in order; time ratios are against the first of each (model, device). Errors name
// the file and what is missing: a file that does not read, is not JSON, or has no cases or times.
Result<std::vector<InvarianceRow>> read_invariance(const std::vector<std::string>& paths);

// The rows as a Markdown table (one line per row, under a header).
std::string invariance_markdown(const std::vector<InvarianceRow>& rows);

// The rows' numbers as JSON (times in ms, the ratios), so that a README quoting them has them in its data.
std::string invariance_json(const std::vector<InvarianceRow>& rows);

}  // namespace saddlescope::reports
