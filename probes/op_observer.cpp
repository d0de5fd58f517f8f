#include "op_observer.h"

#include <algorithm>
#include <set>

#include <ATen/record_function.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include "saddlescope/reference/elementwise.h"
#include "saddlescope/reference/gelu.h"
#include "saddlescope/reference/normalization.h"
#include "saddlescope/reference/ops.h"
#include "saddlescope/reference/softmax_backward.h"

#include "op_observer_impl.h"

namespace saddlescope::probes::internal {
namespace {

// Ops whose arithmetic is evaluated (op_observer.h lists what each means).
const std::set<std::string>& evaluable() {
  static const std::set<std::string> ops = {
      "aten::mm",   "aten::addmm", "aten::bmm",     "aten::mul",  "aten::add",     "aten::sub",
      "aten::convolution", "aten::convolution_backward", "aten::relu", "aten::sigmoid", "aten::tanh",
      "aten::exp",  "aten::sum",   "aten::mse_loss", "aten::softmax", "aten::_softmax", "aten::log_softmax",
      "aten::_log_softmax", "aten::layer_norm", "aten::native_layer_norm", "aten::batch_norm",
      "aten::native_batch_norm", "aten::_softmax_backward_data", "aten::_log_softmax_backward_data", "aten::gelu",
      "aten::cross_entropy_loss", "aten::nll_loss_backward", "aten::gelu_backward", "aten::native_layer_norm_backward",
      "aten::native_batch_norm_backward"};
  return ops;
}

thread_local std::vector<Frame> t_stack;
// Set while the callbacks themselves run ops (the samples' gathers and copies): those are not the step's.
thread_local bool t_busy = false;

}  // namespace

namespace {

std::vector<c10::IValue> results(const at::RecordFunction& fn) { return own_values(fn, true); }

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (t_busy) return nullptr;
  std::vector<Frame>& stack = t_stack;
  Frame f;
  f.name = fn.name();
  f.seq = fn.seqNr();
  OpObserver::Impl* m = Registration<OpObserver::Impl>::active();
  if (!m) {
    stack.push_back(std::move(f));
    return nullptr;
  }
  // Below an evaluated op nothing is tapped or counted, but a forward op that makes an autograd node is
  // still remembered (cross_entropy_loss's log_softmax and nll_loss name their backwards' rows).
  const bool inside_tapped = std::any_of(stack.begin(), stack.end(), [](const Frame& x) { return x.tapped; });
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    f.backward = true;
    const OpObserver::Impl::Forward* fwd = m->find_forward(f.seq);
    f.context = fwd ? fwd->name : f.name;
    if (!stack.empty() && stack.back().backward) stack.back().context = f.context, stack.back().seq = f.seq;
  } else if (starts_with(f.name, kEngine)) {
    f.backward = true;
    f.context = f.name.substr(sizeof(kEngine) - 1);
  } else {
    f.outermost = !inside_tapped && (stack.empty() || stack.back().backward);
    f.tapped = !inside_tapped && evaluable().count(f.name) > 0 && (f.outermost || !is_row_op(f.name));
    const bool in_backward = std::any_of(stack.begin(), stack.end(), [](const Frame& x) { return x.backward; });
    if (f.tapped || f.outermost || (!in_backward && f.seq >= 0)) {
      f.inputs = own_values(fn, false);
    }
    if (!in_backward) {
      f.module = parameter_module(m->parameters, f.inputs);
      if (f.module.empty()) f.module = module_path(m->parameters);
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
  OpObserver::Impl* m = Registration<OpObserver::Impl>::active();
  if (!m || f.backward || f.inputs.empty()) return;
  const Frame* node = nullptr;  // the innermost autograd node this op runs in
  for (auto it = stack.rbegin(); it != stack.rend(); ++it)
    if (it->backward) {
      node = &*it;
      break;
    }
  const bool backward = node != nullptr;
  const std::string kernel = short_name(f.name);
  t_busy = true;
  struct Done {
    ~Done() { t_busy = false; }
  } done;
  const std::string name = f.module.empty() ? kernel : f.module + ":" + kernel;  // forward
  try {
    const std::vector<c10::IValue> outputs = results(fn);
    if (f.tapped) {
      const OpObserver::Impl::Forward* fwd = node ? m->find_forward(node->seq) : nullptr;
      m->tap(f, outputs, backward ? node->context : name, backward, fwd);
      for (auto& parent : stack) parent.covered = true;
    } else if (f.outermost && !f.covered && !moves_data(f.name)) {
      // Counted when it computes floating values that are not a view of an input.
      at::Tensor out;
      for (const auto& v : outputs)
        if (is_floating(tensor_of(v))) out = tensor_of(v);
      bool view = false;
      for (const auto& v : f.inputs)
        if (out.defined() && v.isTensor() && v.toTensor().defined() && out.is_alias_of(v.toTensor())) view = true;
      if (out.defined() && !view)
        m->count_unevaluated(backward ? node->context : name, backward ? "bwd" : "fwd", kernel,
                             c10::toString(out.scalar_type()));
    }
    // The op whose autograd node carries this sequence number (ops before it peek the same number).
    bool made_node = false;
    for (const auto& v : outputs) {
      const at::Tensor t = tensor_of(v);
      made_node |= t.defined() && t.grad_fn() && t.grad_fn()->sequence_nr() == static_cast<uint64_t>(f.seq);
    }
    if (!backward && f.seq >= 0 && made_node) m->remember(f.seq, name, f.inputs, f.tapped);
  } catch (const c10::Error& e) {
    std::lock_guard<std::mutex> lock(m->mutex);
    if (m->error.empty()) m->error = fmt::format("op {}: {}", f.name, e.what_without_backtrace());
  }
}

template <class T>
Result<reference::Evaluation> evaluate_sample(const OpObserver::Impl::Sample& s) {
  using Kind = OpObserver::Impl::Sample::Kind;
  const T* a = s.a.defined() ? s.a.data_ptr<T>() : nullptr;
  const T* b = s.b.defined() ? s.b.data_ptr<T>() : nullptr;
  switch (s.kind) {
    case Kind::kDot: return reference::evaluate_dot(a, s.a.numel(), b, s.b.numel());
    case Kind::kSum: return reference::evaluate_sum(a, s.a.numel());
    case Kind::kElementwise:
      return reference::is_gelu(s.fn) ? reference::evaluate_gelu(s.fn, *a) : reference::evaluate_elementwise(s.fn, *a);
    case Kind::kMse: return reference::evaluate_mse_loss(a, s.a.numel(), b, s.b.numel());
    case Kind::kCrossEntropy:
      return reference::evaluate_cross_entropy(a, s.targets.numel(), s.classes, s.targets.data_ptr<int64_t>(), s.mean);
    case Kind::kNllGrad: return reference::evaluate_nll_loss_grad(*a, s.batch);
    case Kind::kGeluBwd: return reference::evaluate_gelu_backward(s.fn, *a, *b);
    case Kind::kConv:
      return reference::evaluate_conv2d_element(a, s.a.numel(), b, s.b.numel(),
                                                s.bias.defined() ? s.bias.data_ptr<T>() : nullptr, s.g, s.oy, s.ox);
    case Kind::kConvWgrad:
      return reference::evaluate_conv2d_weight_grad(a, s.a.numel(), b, s.b.numel(), s.batch, s.g, s.ky, s.kx);
    case Kind::kRow:
      return s.fn == reference::Op::kSoftmax ? reference::evaluate_softmax(a, s.a.numel(), s.i)
                                             : reference::evaluate_log_softmax(a, s.a.numel(), s.i);
    case Kind::kSoftmaxBwd:
      return s.fn == reference::Op::kSoftmaxBackward ? reference::evaluate_softmax_backward(b, a, s.a.numel(), s.i)
                                                     : reference::evaluate_log_softmax_backward(b, a, s.a.numel(), s.i);
    case Kind::kNorm:
      return reference::evaluate_normalization(s.fn, a, s.a.numel(), s.i, b,
                                               s.bias.defined() ? s.bias.data_ptr<T>() : nullptr, s.eps);
    case Kind::kConvDgrad: {
      // grad_input[y][x] = Σ over output channels o and taps (ky, kx) that read input (y, x) of
      // grad_output[o][oy][ox] · weight[o][ky][kx], with oy·stride − pad + ky·dilation = y.
      const reference::Conv2dGeometry& g = s.g;
      const int64_t oc = s.a.size(0), oh = s.a.size(1), ow = s.a.size(2);
      std::vector<T> go, wt;
      for (int64_t o = 0; o < oc; ++o)
        for (int64_t ky = 0; ky < g.kernel_h; ++ky)
          for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
            const int64_t ty = s.oy + g.pad_h - ky * g.dilation_h, tx = s.ox + g.pad_w - kx * g.dilation_w;
            if (ty < 0 || tx < 0 || ty % g.stride_h != 0 || tx % g.stride_w != 0) continue;
            const int64_t y = ty / g.stride_h, x = tx / g.stride_w;
            if (y >= oh || x >= ow) continue;
            go.push_back(a[(o * oh + y) * ow + x]);
            wt.push_back(b[(o * g.kernel_h + ky) * g.kernel_w + kx]);
          }
      return reference::evaluate_dot(go.data(), static_cast<int64_t>(go.size()), wt.data(),
                                     static_cast<int64_t>(wt.size()));
    }
  }
  return Status::Error("unknown sample kind");
}

}  // namespace

OpObserver::OpObserver(uint64_t seed, int64_t k, int64_t step, ParameterNames parameters)
    : impl_(std::make_unique<Impl>()) {
  impl_->seed = seed;
  impl_->k = k;
  impl_->step = step;
  impl_->parameters = std::move(parameters);
}

OpObserver::~OpObserver() { stop(); }

void OpObserver::start() { impl_->registration.start(impl_.get(), on_start, on_end); }

void OpObserver::stop() { impl_->registration.stop(impl_.get()); }

Status OpObserver::evaluate(std::vector<ObservedRow>* rows, std::vector<UnevaluatedOp>* unevaluated) {
  Impl& m = *impl_;
  if (!m.error.empty()) return Status::Error(m.error);
  for (const Impl::Sample& s : m.samples) {
    const bool f64 = s.observed.scalar_type() == at::kDouble;
    auto e = f64 ? evaluate_sample<double>(s) : evaluate_sample<float>(s);
    if (!e) return Status::Error(fmt::format("op {} ({}) at step {}: {}", s.op, s.kernel, m.step, e.status().message()));
    TapRow r = f64 ? tap_row(s.phase, s.index, s.call, *e, s.observed.item<double>())
                   : tap_row(s.phase, s.index, s.call, *e, s.observed.item<float>());
    rows->push_back({s.op, s.kernel, std::move(r)});
  }
  *unevaluated = m.unevaluated;
  return Status::Ok();
}

}  // namespace saddlescope::probes::internal
