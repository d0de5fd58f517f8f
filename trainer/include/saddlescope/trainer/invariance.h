// Batch invariance (saddlescope invariance; docs/batch-invariance.md): does a model give an example the
// same bits whatever else is in its batch, and which op decides?
//
// Each of the first `examples` evaluation rows is predicted alone (batch 1) and, for every batch size B
// and position, in a batch of B rows: the other rows are the evaluation rows that follow the examples,
// the example at row 0 (first), B/2 (middle) or B−1 (last). Its prediction in the batch is compared
// with its prediction alone, bit for bit, in ULPs of the model's dtype and relatively.
//
// For the example that differs most, both evaluations are traced op by op
// (probes/op_trace.h) and compared in order: the first op whose output for the example differs is
// named, with the way it differs — "values" (same shapes, other bits), "shape" (its outputs are not the
// same computation sliced: the batch changed the op's shape beyond its batch dimension) or "op
// sequence" (another op ran). An op's part for the example is the slice of the dimension that grew B
// times; an output without one (a batch statistic) is compared whole. With k > 0 the op taps
// (op_taps.h, generic) then sample k outputs of that op's module (an op with no module: of the op, or
// of the ops inside it, e.g. linear's mm) in both evaluations against the exact reference: "within" the rounding bound when every sample is (the batch changed only the order of
// rounding), "beyond" when one is not (another arithmetic: TF32, a lower-precision algorithm), "not
// evaluated" when the reference does not evaluate that op.
//
// With backward, the prediction is also differentiated with a fixed upstream gradient per example
// (seeded by the example's row), so each example's gradients with respect to the activations are its
// own; the traced backward ops are compared the same way. Weight gradients sum over the batch and are
// not compared.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct RunConfig;

struct InvarianceOptions {
  int64_t examples = 8;
  std::vector<int64_t> batch_sizes = {2, 8, 32, 128};
  std::vector<std::string> positions = {"first", "middle", "last"};
  bool backward = false;
  int64_t k = 16;        // op-tap samples of the first differing op's module; 0: no bound check
  int64_t repeats = 10;  // timed evaluations per batch size (after one untimed)
};

// Checks the options: one-line errors naming the flag (--examples, --batch-sizes, --positions, --k,
// --repeats).
Status check_invariance_options(const InvarianceOptions& o);

struct InvarianceCase {
  int64_t batch = 0;
  std::string position;
  int64_t row = 0;                      // the example's row in the batch
  int64_t examples = 0, equal = 0;      // examples compared; those bitwise equal (prediction, input gradient)
  // The prediction's largest difference over the examples: in ULPs of an element, and relative, the
  // largest |alone − batched| over the largest |alone| of the example (a normwise measure: an element
  // near 0 can differ by many ULPs and nothing relative to the output).
  double max_ulp = 0, max_relative = 0;
  double grad_max_ulp = 0, grad_max_relative = 0;  // the same for the input's gradient (backward)
  // The first differing op of the example with the largest relative difference; empty when all are equal.
  int64_t example = -1;
  std::string first_op, phase, how;     // how: values | shape | op sequence
  std::string detail;                   // shapes, or the other op's name
  int64_t op_index = -1, ops = 0;       // its position in the alone trace; ops traced alone
  double op_max_ulp = 0;
  std::string bound;                    // within | beyond | not evaluated | "" (k = 0, or no difference)
  double bound_ratio = 0;               // the largest |observed − exact| / bound sampled, both evaluations
  int64_t samples = 0;                  // op-tap samples of the op's module, both evaluations
};

struct InvarianceTiming {
  int64_t batch = 0;
  double min_s = 0, median_s = 0, max_s = 0;  // one evaluation of the batch: forward (and backward)
};

struct InvarianceResult {
  std::string model, device, dtype;
  nlohmann::json execution;  // the settings as LibTorch reported them
  InvarianceOptions options;
  std::vector<InvarianceCase> cases;
  std::vector<InvarianceTiming> timings;
  bool invariant = true;  // every example equal in every case
};

// Runs the check for the model, data, initial weights (seed, init, init_from) and execution settings
// of `cfg`. Progress goes to `progress` (a bar on a terminal; nullptr: none). Errors: the config's (as train's),
// too few evaluation rows for the largest batch (naming --batch-sizes), a prediction whose rows are not
// the batch's.
Result<InvarianceResult> check_invariance(const RunConfig& cfg, const InvarianceOptions& o, std::FILE* progress);

nlohmann::json to_json(const InvarianceResult& r);

}  // namespace saddlescope::trainer
