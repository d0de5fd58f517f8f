#include "saddlescope/probes/op_trace.h"

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
};

thread_local std::vector<Frame> t_stack;
thread_local bool t_busy = false;  // set while the trace copies outputs: its own ops are not traced

bool is_floating(const at::Tensor& t) { return t.defined() && t.is_floating_point(); }

}  // namespace

struct OpTrace::Impl {
  internal::ParameterNames parameters;
  internal::Registration<Impl> registration;
  std::mutex mutex;
  std::vector<TracedOp> ops;  // guarded by mutex
};

namespace {

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
      const bool in_backward = !stack.empty();
      if (!in_backward) {
        f.module = internal::parameter_module(m->parameters, f.inputs);
        if (f.module.empty()) f.module = internal::module_path();
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
  t_busy = true;
  struct Done {
    ~Done() { t_busy = false; }
  } done;
  TracedOp op;
  const std::string kernel = internal::short_name(f.name);
  op.name = f.module.empty() ? kernel : f.module + ":" + kernel;
  op.phase = stack.empty() ? "fwd" : "bwd";
  op.inner.assign(f.inner.begin(), f.inner.end());
  for (const auto& v : internal::own_values(fn, true)) {
    if (!v.isTensor() || !is_floating(v.toTensor())) continue;
    const at::Tensor& out = v.toTensor();
    bool view = false;
    for (const auto& in : f.inputs)
      if (in.isTensor() && in.toTensor().defined() && out.is_alias_of(in.toTensor())) view = true;
    if (!view) op.outputs.push_back(out.detach().clone());
  }
  if (op.outputs.empty()) return;
  std::lock_guard<std::mutex> lock(m->mutex);
  m->ops.push_back(std::move(op));
}

}  // namespace

OpTrace::OpTrace(const std::vector<std::pair<std::string, at::Tensor>>& parameters)
    : impl_(std::make_unique<Impl>()) {
  for (const auto& [name, t] : parameters) impl_->parameters[t.unsafeGetTensorImpl()] = name;
}

OpTrace::~OpTrace() { stop(); }

void OpTrace::start() { impl_->registration.start(impl_.get(), on_start, on_end); }

void OpTrace::stop() { impl_->registration.stop(impl_.get()); }

const std::vector<TracedOp>& OpTrace::ops() const { return impl_->ops; }

}  // namespace saddlescope::probes
