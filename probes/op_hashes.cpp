#include "saddlescope/probes/op_hashes.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "op_context.h"
#include "saddlescope/kernels/fused.h"

namespace saddlescope::probes {
namespace {

// One result: itself; several: joined by '+' ("4x40x16x16+32x40x3x3+32").
std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? "+" : "") + parts[i];
  return s;
}

}  // namespace

Result<std::unique_ptr<OpHashes>> OpHashes::create(const std::vector<ProbeSpec>& specs,
                                                   const std::vector<std::pair<std::string, at::Tensor>>& parameters,
                                                   const std::string& run_dir, int64_t resume_from) {
  std::unique_ptr<OpHashes> h(new OpHashes);
  for (const auto& s : specs)
    if (s.name == "ophash") h->spec_ = s;
  if (!h->spec_) return h;
  auto csv = store::TableWriter<store::OpHashRow>::open(run_dir, store::kOpHash, resume_from);
  if (!csv) return csv.status();
  h->csv_.emplace(std::move(*csv));
  h->trace_ = std::make_unique<OpTrace>(parameters, OpTrace::Mode::kDigests);
  return h;
}

bool OpHashes::replayable() const { return spec_ && spec_->every == 1 && kernels::cuda_built(); }

void OpHashes::input(const at::Tensor& batch) {
  const auto t0 = std::chrono::steady_clock::now();
  store::OpHashRow r;
  r.index = static_cast<int64_t>(rows_.size());
  r.phase = "input";
  r.op = "batch";
  r.shape = internal::dims_text(batch);
  r.dtype = c10::toString(batch.scalar_type());
  r.outputs = fmt::format("{:016x}", tensor_digest({batch}));
  rows_.push_back(std::move(r));
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void OpHashes::begin(const char* phase) {
  phase_ = phase ? phase : "";
  trace_->start(phase_);
}

void OpHashes::end() {
  trace_->stop();
  const auto t0 = std::chrono::steady_clock::now();
  for (const TracedOp& op : trace_->ops()) {
    store::OpHashRow r;
    r.index = static_cast<int64_t>(rows_.size());
    r.phase = phase_.empty() ? op.phase : phase_;
    r.op = op.name;
    r.shape = join(op.output_shapes);
    r.dtype = op.dtype;
    r.inputs = fmt::format("{:016x}", op.inputs_digest);
    r.outputs = join(op.output_digests);
    rows_.push_back(std::move(r));
  }
  trace_->clear();
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double OpHashes::seconds() const { return seconds_ + (trace_ ? trace_->seconds() : 0.0); }

Status OpHashes::write(int64_t step) {
  if (std::all_of(rows_.begin(), rows_.end(), [](const store::OpHashRow& r) { return r.phase == "input"; }))
    return Status::Error(fmt::format("ophash: step {} recorded no op (a CUDA graph captured without the probe armed, "
                                     "replayed?)", step));
  for (auto& r : rows_) {
    r.step = step;
    csv_->append(r);
  }
  rows_.clear();
  return csv_->flush();
}

}  // namespace saddlescope::probes
