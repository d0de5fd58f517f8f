#include "saddlescope/probes/op_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "op_context.h"
#include "saddlescope/base/status.h"
#include "saddlescope/gpu/graph.h"
#include "saddlescope/kernels/digest.h"
#include "saddlescope/kernels/fused.h"

namespace saddlescope::probes {
namespace {

using internal::kEngine;

// A digest under way: the words tensor_digest mixes, in order, where a tensor's bytes may still be
// being summed by its device into a slot (kernels/digest.h), read back when the recording stops.
struct Word {
  uint64_t value = 0;  // slot < 0: the word itself; else the bytes' count, finished with the slot's sum
  int device = -1;
  int64_t slot = -1;
};
using Pending = std::vector<Word>;

struct Frame {
  std::string name;
  bool backward = false;  // an autograd node's frame
  int64_t seq = -1;       // an autograd node's frame: its sequence number, that of the forward op that made it
  bool outermost = false;
  std::string module;     // forward: a parameter's module, or the calling TorchScript module
  std::vector<c10::IValue> inputs;
  std::set<std::string> inner;  // outermost: the ATen ops that ran inside it
  Pending inputs_digest;        // kDigests: of the inputs as the op began (an in-place op changes them)
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

// The slots one CUDA device sums digests into: chunks that never move (a graph captured while tracing
// writes to their addresses at every replay), zeroed when a recording starts.
struct DeviceSlots {
  static constexpr int64_t kChunk = 1 << 14;
  std::vector<at::Tensor> chunks;
  int64_t used = 0;
  std::vector<uint64_t> sums;  // every chunk's, read back at stop
};
using Slots = std::map<int, DeviceSlots>;  // by device index

// The digest words of `tensors`. With `slots`, a CUDA tensor's bytes are summed on its device, on its
// current stream, without waiting; otherwise (or without the CUDA kernels) on the host.
Pending pending_digest(const std::vector<at::Tensor>& tensors, Slots* slots) {
  Pending p;
  for (const at::Tensor& t : tensors) {
    if (!t.defined()) {
      p.push_back({0x7a11});
      continue;
    }
    p.push_back({static_cast<uint64_t>(t.scalar_type())});
    for (int64_t d : t.sizes()) p.push_back({static_cast<uint64_t>(d)});
    if (slots && t.is_cuda() && kernels::cuda_built()) {
      at::Tensor c = t.detach().contiguous();
      if (reinterpret_cast<uintptr_t>(c.data_ptr()) % 4 != 0) c = c.clone();  // a view at an odd offset
      const size_t n = static_cast<size_t>(c.numel()) * c.element_size();
      DeviceSlots& d = (*slots)[static_cast<int>(c.get_device())];
      const int64_t slot = d.used++;
      if (slot / DeviceSlots::kChunk == static_cast<int64_t>(d.chunks.size()))
        d.chunks.push_back(at::zeros({DeviceSlots::kChunk}, at::TensorOptions().dtype(at::kLong).device(c.device())));
      auto* sum = reinterpret_cast<uint64_t*>(d.chunks[slot / DeviceSlots::kChunk].data_ptr<int64_t>()) +
                  slot % DeviceSlots::kChunk;
      const c10::DeviceGuard guard(c.device());
      kernels::digest_sum_cuda(c.data_ptr(), n, sum, gpu::current_cuda_stream(c.device()));
      p.push_back({n, static_cast<int>(c.get_device()), slot});
    } else {
      const at::Tensor c = t.detach().to(at::kCPU).contiguous();
      const size_t n = static_cast<size_t>(c.numel()) * c.element_size();
      p.push_back({kernels::digest_finish(kernels::digest_sum(c.data_ptr(), n), n)});
    }
  }
  return p;
}

uint64_t resolve(const Pending& p, const Slots& slots) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const Word& w : p)
    h = mix(h, w.slot < 0 ? w.value : kernels::digest_finish(slots.at(w.device).sums[w.slot], w.value));
  return h;
}

}  // namespace

uint64_t tensor_digest(const std::vector<at::Tensor>& tensors) { return resolve(pending_digest(tensors, nullptr), {}); }

struct OpTrace::Impl {
  OpTrace::Mode mode = OpTrace::Mode::kCopies;
  internal::ParameterNames parameters;
  internal::Registration<Impl> registration;
  std::atomic<int64_t> busy_ns{0};  // time spent copying and hashing, on every thread
  std::mutex mutex;
  std::vector<TracedOp> ops;  // guarded by mutex
  // The module of the forward op that made each autograd node, by the node's sequence number: its
  // backward ops are named by it. Guarded by mutex.
  std::map<int64_t, std::string> node_modules;
  // Tensors named as parameters for this recording (name_derived), forgotten when the next one starts.
  std::vector<const void*> derived;
  // kDigests: each op's digests under way (its inputs', its results'; none for a result left out), and
  // the device slots they are summed in; guarded by mutex
  struct Digests {
    Pending inputs;
    std::vector<Pending> outputs;
  };
  std::vector<Digests> digests;
  Slots slots;
  // The recording since start(): its tag, its first op, and whether it enqueued digests into a graph
  // being captured (set under mutex while recording, read after stop); the last such recording of each
  // tag, for the replays of that graph.
  std::string tag;
  size_t first = 0;
  bool captured = false;
  struct Recording {
    std::vector<TracedOp> ops;
    std::vector<Digests> digests;
  };
  std::map<std::string, Recording> captures;
};

namespace {

// Marks this thread's trace work (copies, digests), whose own ops no observer sees, and times it.
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
  at::DisableRecordFunctionGuard hidden_;
};

OpTrace::Impl* active() { return internal::Registration<OpTrace::Impl>::active(); }

// The digest words of `tensors`, a CUDA tensor's summed on its device into the trace's slots.
Pending pending(OpTrace::Impl* m, const std::vector<at::Tensor>& tensors) {
  std::lock_guard<std::mutex> lock(m->mutex);
  Pending p = pending_digest(tensors, &m->slots);
  if (!m->captured && !m->slots.empty() && gpu::capturing()) m->captured = true;
  return p;
}

// The module of the forward op that made the autograd node the stack is in ("" when none is known).
std::string node_module(OpTrace::Impl* m, const std::vector<Frame>& stack) {
  std::lock_guard<std::mutex> lock(m->mutex);
  for (auto it = stack.rbegin(); it != stack.rend() && it->backward; ++it)
    if (auto found = m->node_modules.find(it->seq); it->seq >= 0 && found != m->node_modules.end()) return found->second;
  return "";
}

// A forward op that only moves data (PredNet's cat of its four gate weights into one) makes tensors
// that the ops reading them are named by, as by a parameter: the module its parameter inputs share.
void name_derived(OpTrace::Impl* m, const Frame& f, const at::RecordFunction& fn) {
  std::string module;
  bool any = false;
  for (const at::Tensor& t : tensors_of(f.inputs)) {
    if (!t.defined()) continue;
    auto it = m->parameters.find(internal::base_of(t).unsafeGetTensorImpl());
    if (it == m->parameters.end()) continue;
    const size_t dot = it->second.rfind('.');
    const std::string own = dot == std::string::npos ? "" : it->second.substr(0, dot);
    if (!any) module = own;
    any = true;
    while (!module.empty() && own != module && own.rfind(module + ".", 0) != 0) {
      const size_t up = module.rfind('.');
      module = up == std::string::npos ? "" : module.substr(0, up);
    }
  }
  if (module.empty()) return;
  std::lock_guard<std::mutex> lock(m->mutex);
  for (const at::Tensor& t : tensors_of(internal::own_values(fn, true)))
    if (t.defined() && m->parameters.emplace(t.unsafeGetTensorImpl(), module + "." + internal::short_name(f.name)).second)
      m->derived.push_back(t.unsafeGetTensorImpl());
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (t_busy) return nullptr;
  std::vector<Frame>& stack = t_stack;
  Frame f;
  f.name = fn.name();
  OpTrace::Impl* m = active();
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION || internal::starts_with(f.name, kEngine)) {
    f.backward = true;
    f.seq = fn.seqNr();
    // The engine's frame around a node also runs ops after the node (a gradient summed to its shape).
    if (f.seq >= 0 && !stack.empty() && stack.back().backward && stack.back().seq < 0) stack.back().seq = f.seq;
    if (internal::starts_with(f.name, kEngine)) f.name = f.name.substr(sizeof(kEngine) - 1);
  } else if (m) {
    f.outermost = stack.empty() || stack.back().backward;
    if (f.outermost) {
      f.inputs = internal::own_values(fn, false);
      if (m->mode == OpTrace::Mode::kDigests && !internal::moves_data(f.name)) {
        Busy busy(m);
        f.inputs_digest = pending(m, tensors_of(f.inputs));
      }
      const bool in_backward = !stack.empty();
      if (!in_backward) {
        f.module = internal::parameter_module(m->parameters, f.inputs);
        if (f.module.empty()) f.module = internal::module_path(m->parameters);
      } else {
        f.module = stack.back().name;  // the autograd node, after the module of the op that made it
        const std::string made_by = node_module(m, stack);
        if (!made_by.empty()) f.module = made_by + ":" + f.module;
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
  if (!m || f.backward || !f.outermost) return;
  if (internal::moves_data(f.name)) {
    if (stack.empty()) name_derived(m, f, fn);
    return;
  }
  Busy busy(m);
  TracedOp op;
  const std::string kernel = internal::short_name(f.name);
  op.name = f.module.empty() ? kernel : f.module + ":" + kernel;
  op.phase = stack.empty() ? "fwd" : "bwd";
  op.inner.assign(f.inner.begin(), f.inner.end());
  const std::vector<c10::IValue> results = internal::own_values(fn, true);
  if (stack.empty() && !f.module.empty()) {  // a forward op: the autograd nodes it made carry its module
    std::lock_guard<std::mutex> lock(m->mutex);
    for (const auto& v : results)
      if (v.isTensor() && v.toTensor().defined() && v.toTensor().grad_fn())
        m->node_modules[static_cast<int64_t>(v.toTensor().grad_fn()->sequence_nr())] = f.module;
  }
  OpTrace::Impl::Digests digests;
  if (m->mode == OpTrace::Mode::kDigests) {
    // Every tensor result keeps its place (a view of an input too: an in-place op's result is one).
    bool any = false;
    for (const auto& v : results) {
      if (!v.isTensor()) continue;
      const at::Tensor& out = v.toTensor();
      if (!is_floating(out)) {
        digests.outputs.emplace_back();
        op.output_shapes.emplace_back("-");
        continue;
      }
      digests.outputs.push_back(pending(m, {out}));
      op.output_shapes.push_back(internal::dims_text(out));
      if (!any) op.dtype = c10::toString(out.scalar_type());
      any = true;
    }
    if (!any) return;
    digests.inputs = std::move(f.inputs_digest);
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
  if (m->mode == OpTrace::Mode::kDigests) m->digests.push_back(std::move(digests));
}

}  // namespace

OpTrace::OpTrace(const std::vector<std::pair<std::string, at::Tensor>>& parameters, Mode mode)
    : impl_(std::make_unique<Impl>()) {
  impl_->mode = mode;
  for (const auto& [name, t] : parameters) impl_->parameters[t.unsafeGetTensorImpl()] = name;
}

OpTrace::~OpTrace() { stop(); }

void OpTrace::start(const std::string& tag) {
  Impl& m = *impl_;
  {
    const at::DisableRecordFunctionGuard hidden;  // no observer (op taps) sees the zeroing
    for (auto& [device, d] : m.slots) {
      for (at::Tensor& c : d.chunks) c.zero_();  // on the current stream, before the digests summed in
      d.used = 0;
    }
  }
  m.tag = tag;
  m.first = m.ops.size();
  m.node_modules.clear();
  for (const void* t : m.derived) m.parameters.erase(t);
  m.derived.clear();
  m.captured = false;
  m.registration.start(impl_.get(), on_start, on_end);
}

void OpTrace::stop() {
  Impl& m = *impl_;
  if (!m.registration.started()) return;
  m.registration.stop(impl_.get());
  if (m.mode != Mode::kDigests) return;
  // A replayed graph runs the digest kernels its capture enqueued and no op is seen: its ops are the
  // capture's, their digests what the replay summed into the same slots.
  if (m.ops.size() == m.first) {
    if (auto it = m.captures.find(m.tag); it != m.captures.end()) {
      m.ops.insert(m.ops.end(), it->second.ops.begin(), it->second.ops.end());
      m.digests.insert(m.digests.end(), it->second.digests.begin(), it->second.digests.end());
    }
  } else if (m.captured) {
    m.captures[m.tag] = {{m.ops.begin() + m.first, m.ops.end()}, {m.digests.begin() + m.first, m.digests.end()}};
  }
  const at::DisableRecordFunctionGuard hidden;
  for (auto& [device, d] : m.slots) {
    torch::cuda::synchronize(device);  // the backward's digests may be on the autograd thread's stream
    d.sums.resize(d.chunks.size() * DeviceSlots::kChunk);
    for (size_t c = 0; c < d.chunks.size(); ++c) {
      const at::Tensor host = d.chunks[c].to(at::kCPU);
      std::memcpy(d.sums.data() + c * DeviceSlots::kChunk, host.data_ptr<int64_t>(), DeviceSlots::kChunk * 8);
    }
  }
  for (size_t i = m.first; i < m.ops.size(); ++i) {
    TracedOp& op = m.ops[i];
    const Impl::Digests& d = m.digests[i];
    op.inputs_digest = resolve(d.inputs, m.slots);
    op.output_digests.clear();
    for (const Pending& p : d.outputs)
      op.output_digests.push_back(p.empty() ? "" : fmt::format("{:016x}", resolve(p, m.slots)));
  }
}

const std::vector<TracedOp>& OpTrace::ops() const { return impl_->ops; }

void OpTrace::clear() {
  impl_->ops.clear();
  impl_->digests.clear();
}

double OpTrace::seconds() const { return static_cast<double>(impl_->busy_ns.load()) * 1e-9; }

}  // namespace saddlescope::probes
