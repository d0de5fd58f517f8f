// The ophash probe: at its steps, a 64-bit digest of every op the training step runs — its inputs as it
// began and its outputs — forward, backward and the optimiser's update, in execution order, into
// ophash.csv (store::kOpHash). Two runs that diverged are compared op by op (analysis/first_op.h): the
// first op whose inputs are equal and whose outputs differ is where the bits first parted.
//
// Built on the op trace's observer (op_trace.h, kDigests): outermost ops only (aten::linear, not the
// addmm inside it), ops that only move data left out, names as the op taps give them. Each traced
// tensor is read back to the host to be hashed: the probe synchronises a CUDA step, and runs the step
// eagerly (no CUDA graph).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "saddlescope/base/status.h"
#include "saddlescope/probes/op_trace.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/store/schema.h"
#include "saddlescope/store/table.h"

namespace saddlescope::probes {

class OpHashes {
 public:
  // The probe of the `ophash` spec among `specs` (none: never due), naming ops by `parameters`, writing
  // `run_dir`/ophash.csv; with `resume_from` >= 0 its rows before that step are kept.
  static Result<std::unique_ptr<OpHashes>> create(const std::vector<ProbeSpec>& specs,
                                                  const std::vector<std::pair<std::string, at::Tensor>>& parameters,
                                                  const std::string& run_dir, int64_t resume_from = -1);
  bool due(int64_t step) const { return spec_ && spec_->due(step); }
  // Records the ops run until end() as the step's `phase` (fwd and bwd are told apart by the trace;
  // "update" names the optimiser's). REQUIRES: due, not recording.
  void begin(const char* phase = nullptr);
  void end();
  // Writes the step's rows and forgets them.
  Status write(int64_t step);
  // Seconds spent hashing and making rows (the traced ops' own time left out): the manifest's tap_s.
  double seconds() const;

 private:
  OpHashes() = default;
  std::optional<ProbeSpec> spec_;
  std::unique_ptr<OpTrace> trace_;
  std::optional<store::TableWriter<store::OpHashRow>> csv_;
  std::vector<store::OpHashRow> rows_;  // this step's so far
  std::string phase_;
  double seconds_ = 0;  // making rows; the trace times its hashing
};

}  // namespace saddlescope::probes
