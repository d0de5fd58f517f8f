#include "saddlescope/probes/op_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>

#include <torch/torch.h>

#include "op_context.h"
#include "saddlescope/base/status.h"

namespace saddlescope::probes {
namespace {

using internal::kEngine;

struct Frame {
  std::string name;
  bool backward = false;  // an autograd node's frame
  bool outermost = false;
  std::string module;     // forward: a parameter's module, or the calling TorchScript module
  std::vector<c10::IValue> inputs;
  std::set<std::string> inner;  // outermost: the ATen ops that ran inside it
  uint64_t inputs_digest = 0;   // kDigests: of the inputs as the op began (an in-place op changes them)
};

thread_local std::vector<Frame> t_stack;
thread_local bool t_busy = false;  // set while the trace copies outputs: its own ops are not traced

bool is_floating(const at::Tensor& t) { return t.defined() && t.is_floating_point(); }


std::vector<at::Tensor> tensors_of(const std::vector<c10::IValue>& values) {
  std::vector<at::Tensor> out;
  for (const auto& v : values) {
    if (v.isTensor()) out.push_back(v.toTensor());
    if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
  }
  return out;
}

// 64-bit multiply-xorshift mixing of one word into a running digest.
uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

// The bytes' digest: four independent lanes of 8-byte words (so that the multiplies overlap: about four
// times the throughput of one chain), the tail zero-padded, then the lanes and the length mixed.
uint64_t bytes_digest(const unsigned char* p, size_t n) {
  uint64_t lane[4] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull, 0x082efa98ec4e6c89ull};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      lane[k] = (lane[k] ^ w) * 0x9fb21c651e98df25ull;
      lane[k] ^= lane[k] >> 29;
    }
  uint64_t h = static_cast<uint64_t>(n);
  for (uint64_t l : lane) h = mix(h, l);
  for (; i < n; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, std::min<size_t>(8, n - i));
    h = mix(h, w);
  }
  return h;
}

}  // namespace

uint64_t tensor_digest(const std::vector<at::Tensor>& tensors) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const at::Tensor& t : tensors) {
    if (!t.defined()) {
      h = mix(h, 0x7a11);
      continue;
    }
    h = mix(h, static_cast<uint64_t>(t.scalar_type()));
    for (int64_t d : t.sizes()) h = mix(h, static_cast<uint64_t>(d));
    const at::Tensor c = t.detach().to(at::kCPU).contiguous();
    h = mix(h, bytes_digest(static_cast<const unsigned char*>(c.data_ptr()),
                            static_cast<size_t>(c.numel()) * c.element_size()));
  }
  return h;
}

struct OpTrace::Impl {
  OpTrace::Mode mode = OpTrace::Mode::kCopies;
  internal::ParameterNames parameters;
  internal::Registration<Impl> registration;
  std::atomic<int64_t> busy_ns{0};  // time spent copying and hashing, on every thread
  std::mutex mutex;
  std::vector<TracedOp> ops;  // guarded by mutex
};

namespace {

// Marks this thread's trace work (copies, digests), whose own ops are not traced, and times it.
class Busy {
 public:
  explicit Busy(OpTrace::Impl* m) : m_(m), t0_(std::chrono::steady_clock::now()) { t_busy = true; }
  ~Busy() {
    t_busy = false;
    m_->busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  OpTrace::Impl* m_;
  std::chrono::steady_clock::time_point t0_;
};

OpTrace::Impl* active() { return internal::Registration<OpTrace::Impl>::active(); }

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (t_busy) return nullptr;
  std::vector<Frame>& stack = t_stack;
  Frame f;
  f.name = fn.name();
  OpTrace::Impl* m = active();
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION || internal::starts_with(f.name, kEngine)) {
    f.backward = true;
    if (internal::starts_with(f.name, kEngine)) f.name = f.name.substr(sizeof(kEngine) - 1);
  } else if (m) {
    f.outermost = stack.empty() || stack.back().backward;
    if (f.outermost) {
      f.inputs = internal::own_values(fn, false);
      if (m->mode == OpTrace::Mode::kDigests && !internal::moves_data(f.name)) {
        Busy busy(m);
        f.inputs_digest = tensor_digest(tensors_of(f.inputs));
      }
      const bool in_backward = !stack.empty();
      if (!in_backward) {
        f.module = internal::parameter_module(m->parameters, f.inputs);
        if (f.module.empty()) f.module = internal::module_path(m->parameters);
      } else {
        f.module = stack.back().name;  // the autograd node
      }
    } else {
      for (auto it = stack.rbegin(); it != stack.rend(); ++it)
        if (it->outermost) {
          it->inner.insert(internal::short_name(f.name));
          break;
        }
    }
  }
  stack.push_back(std::move(f));
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (t_busy) return;
  std::vector<Frame>& stack = t_stack;
  if (stack.empty()) return;
  Frame f = std::move(stack.back());
  stack.pop_back();
  OpTrace::Impl* m = active();
  if (!m || f.backward || !f.outermost || internal::moves_data(f.name)) return;
  Busy busy(m);
  TracedOp op;
  const std::string kernel = internal::short_name(f.name);
  op.name = f.module.empty() ? kernel : f.module + ":" + kernel;
  op.phase = stack.empty() ? "fwd" : "bwd";
  op.inner.assign(f.inner.begin(), f.inner.end());
  const std::vector<c10::IValue> results = internal::own_values(fn, true);
  if (m->mode == OpTrace::Mode::kDigests) {
    // Every tensor result keeps its place (a view of an input too: an in-place op's result is one).
    bool any = false;
    for (const auto& v : results) {
      if (!v.isTensor()) continue;
      const at::Tensor& out = v.toTensor();
      if (!is_floating(out)) {
        op.output_digests.emplace_back();
        op.output_shapes.emplace_back("-");
        continue;
      }
      std::string shape;
      for (int64_t d : out.sizes()) shape += (shape.empty() ? "" : "x") + std::to_string(d);
      op.output_digests.push_back(fmt::format("{:016x}", tensor_digest({out})));
      op.output_shapes.push_back(shape.empty() ? "scalar" : shape);
      if (!any) op.dtype = c10::toString(out.scalar_type());
      any = true;
    }
    if (!any) return;
    op.inputs_digest = f.inputs_digest;
  } else {
    for (const auto& v : results) {
      if (!v.isTensor() || !is_floating(v.toTensor())) continue;
      const at::Tensor& out = v.toTensor();
      bool view = false;  // a copy leaves out views of an input
      for (const auto& in : f.inputs)
        if (in.isTensor() && in.toTensor().defined() && out.is_alias_of(in.toTensor())) view = true;
      if (!view) op.outputs.push_back(out.detach().clone());
    }
    if (op.outputs.empty()) return;
  }
  std::lock_guard<std::mutex> lock(m->mutex);
  m->ops.push_back(std::move(op));
}

}  // namespace

OpTrace::OpTrace(const std::vector<std::pair<std::string, at::Tensor>>& parameters, Mode mode)
    : impl_(std::make_unique<Impl>()) {
  impl_->mode = mode;
  for (const auto& [name, t] : parameters) impl_->parameters[t.unsafeGetTensorImpl()] = name;
}

OpTrace::~OpTrace() { stop(); }

void OpTrace::start() { impl_->registration.start(impl_.get(), on_start, on_end); }

void OpTrace::stop() { impl_->registration.stop(impl_.get()); }

const std::vector<TracedOp>& OpTrace::ops() const { return impl_->ops; }

void OpTrace::clear() { impl_->ops.clear(); }

double OpTrace::seconds() const { return static_cast<double>(impl_->busy_ns.load()) * 1e-9; }

}  // namespace saddlescope::probes
