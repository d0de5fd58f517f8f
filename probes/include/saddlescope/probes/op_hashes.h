// The ophash probe: at its steps, a 64-bit digest of every op the training step runs — its inputs as it
// began and its outputs — forward, backward and the optimiser's update, in execution order, into
// ophash.csv (store::kOpHash). Two runs that diverged are compared op by op (analysis/first_op.h): the
// first op whose inputs are equal and whose outputs differ is where the bits first parted.
//
// Built on the op trace's observer (op_trace.h, kDigests): outermost ops only (aten::linear, not the
// addmm inside it), ops that only move data left out, names as the op taps give them. A CUDA tensor is
// hashed on its device (kernels/digest.h) and the digests read back once per phase. Armed on every step
// (every = 1) the step's CUDA graphs are captured with the digest kernels in them and replayed
// (replayable()); otherwise a hashed step runs eagerly, as a graph captured unarmed has no digests.
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
  // Whether a due step may replay a CUDA graph rather than run eagerly: armed on every step from the
  // first (so the graphs are captured while tracing) and digests computed on the device.
  bool replayable() const;
  // Records the step's batch as its first row (phase "input", op "batch", no inputs): the data enter
  // the step outside any op, and a difference there is the data pipeline's. REQUIRES: due, not
  // recording, before the step's begin().
  void input(const at::Tensor& batch);
  // Records the ops run until end() as the step's `phase` (fwd and bwd are told apart by the trace;
  // "update" names the optimiser's): each phase may be one CUDA graph, replayed. REQUIRES: due, not
  // recording.
  void begin(const char* phase = nullptr);
  void end();
  // Writes the step's rows and forgets them. A step whose phases recorded no op is an error (a graph
  // captured unarmed, replayed).
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
