#include "saddlescope/probes/op_taps.h"

#include <chrono>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "saddlescope/base/text.h"
#include "saddlescope/store/schema.h"
#include "op_observer.h"
#include "tap_capture.h"

namespace saddlescope::probes {
namespace {

using Clock = std::chrono::steady_clock;

// An ops.csv row's flag (analysis/op_summary.h says what each means).
const char* flag_of(const reference::ErrorReport& r) {
  switch (r.outcome) {
    case reference::Outcome::kMeasured: return r.matches ? "within" : "beyond";
    case reference::Outcome::kNonFiniteInput: return r.matches ? "nonfinite_input" : "nonfinite_input_mismatch";
    case reference::Outcome::kNonFiniteObserved: return r.matches ? "overflow" : "nonfinite_observed";
  }
  return "?";
}

// Whether op `name` is what an only= pattern names: the name itself, or a prefix ending in '*'.
bool matches(const std::string& pattern, const std::string& name) {
  if (!pattern.empty() && pattern.back() == '*') return name.rfind(pattern.substr(0, pattern.size() - 1), 0) == 0;
  return name == pattern;
}

// The ops that `spec`'s only= selects (every op when empty): names, or prefixes ending in '*'.
Result<std::vector<TapOp>> select(const ProbeSpec& spec, const std::vector<TapOp>& ops) {
  const std::string& only = spec.values.at("only");
  if (only.empty()) return ops;
  std::vector<std::string> patterns = split(only, '+');
  for (const auto& p : patterns) {
    const bool prefix = !p.empty() && p.back() == '*';
    bool found = false;
    for (const auto& op : ops) found |= matches(p, op.name);
    if (!found) {
      std::string known;
      for (const auto& op : ops) known += (known.empty() ? "" : ", ") + op.name;
      return Status::Error(fmt::format("probe '{}': no op {} '{}' in this model (its ops: {})", spec.text,
                                       prefix ? "matches" : "is named", p, known));
    }
  }
  std::vector<TapOp> chosen;
  for (const auto& op : ops)
    for (const auto& p : patterns)
      if (matches(p, op.name)) {
        chosen.push_back(op);
        break;
      }
  return chosen;
}

reference::Op elementwise_op(const std::string& kernel) {
  if (kernel == "sigmoid") return reference::Op::kSigmoid;
  if (kernel == "tanh") return reference::Op::kTanh;
  SADDLESCOPE_CHECK(kernel == "relu");
  return reference::Op::kRelu;
}

}  // namespace

Status check_op_taps(const ProbeSpec& spec, const std::vector<TapOp>& ops) {
  if (spec.name != "ops") return Status::Ok();
  auto chosen = select(spec, ops);
  if (!chosen) return chosen.status();
  const int64_t k = spec.get_int("k");
  if (spec.get_bool("clamp")) return Status::Ok();  // ops with fewer than k elements are sampled whole
  for (const auto& op : *chosen) {
    if (op.outputs > 1 && k > op.outputs)
      return Status::Error(fmt::format("probe '{}': k = {} exceeds the {} output elements of {} (at this batch size)",
                                       spec.text, k, op.outputs, op.name));
    if (spec.get_bool("wgrad") && op.weights > 0 && k > op.weights)
      return Status::Error(fmt::format("probe '{}': k = {} exceeds the {} weight elements of {} (leave it out "
                                       "with only=, or wgrad=false)", spec.text, k, op.weights, op.name));
  }
  return Status::Ok();
}

struct OpTaps::Impl {
  std::optional<ProbeSpec> spec;
  std::vector<TapOp> ops;  // the selected ops, in the model's order
  std::map<std::string, size_t> index;
  std::string run_dir;
  std::optional<store::TableWriter<store::OpRow>> csv;
  int64_t step = -1;
  std::vector<std::shared_ptr<internal::Capture>> captures;  // per op, this step (null until called)
  std::vector<int64_t> calls;                                // per op, calls this step
  std::string error;                                         // the first error of this step's tap calls
  bool cuda = false;                                         // some copy came from a CUDA device
  bool generic = false;                                      // every ATen op, through the observer
  std::unique_ptr<internal::OpObserver> observer;            // generic: this step's
  internal::ParameterNames parameters;                       // generic: the ops' names

  // only= of the spec: `name` selected (every op when empty).
  bool selected(const std::string& name) const {
    const std::string& only = spec->values.at("only");
    if (only.empty()) return true;
    for (const auto& p : split(only, '+'))
      if (!p.empty() && matches(p, name)) return true;
    return false;
  }
  // One ops.csv row of a measured sample.
  void append(int64_t step, const std::string& op, const std::string& kernel, const internal::TapRow& r) {
    csv->append({step, op, r.phase, r.index, r.observed, r.exact, r.report.ulp_error, r.report.bound,
                  r.report.bound_ratio, r.call, kernel, std::string(reference::format_name(r.report.format)), r.terms,
                  std::string(flag_of(r.report))});
  }
  // The rows of a generic tap step.
  Status record_generic(int64_t step);

  // The selected op `name` (null: not tapped), after checking its tensors' dtypes.
  const TapOp* find(const std::string& name, std::initializer_list<const at::Tensor*> tensors) {
    auto it = index.find(name);
    if (it == index.end() || !error.empty()) return nullptr;
    for (const at::Tensor* t : tensors) {
      if (!t->defined()) continue;
      cuda |= t->is_cuda();
      if ((t->scalar_type() != at::kFloat && t->scalar_type() != at::kDouble) ||
          t->scalar_type() != (*tensors.begin())->scalar_type()) {
        fail(name, fmt::format("dtype {} is not supported (float32 or float64, the same for every operand)",
                               std::string(c10::toString(t->scalar_type()))));
        return nullptr;
      }
    }
    return &ops[it->second];
  }
  void fail(const std::string& name, const std::string& what) {
    if (error.empty()) error = "op tap " + name + ": " + what;
  }
  // Samples of `n` elements for op `op` in `phase`: k of them, or all of a one-element op.
  std::vector<int64_t> samples(const TapOp& op, const char* phase, int64_t n) const {
    return internal::sample_indices(internal::op_seed(static_cast<uint64_t>(spec->get_int("seed")), step, op.name, phase),
                                    std::min(spec->get_int("k"), n), n);
  }
  // This step's capture of `op`, made by make() at its first call.
  template <class C, class Make>
  std::shared_ptr<C> capture(const TapOp& op, Make make) {
    auto& c = captures[index[op.name]];
    if (!c) c = make();
    return std::static_pointer_cast<C>(c);
  }
  std::shared_ptr<internal::ConvCapture> conv_capture(const TapOp& op, bool linear, const at::Tensor& weight) const {
    const bool wgrad = spec->get_bool("wgrad") && op.weights > 0;
    return std::make_shared<internal::ConvCapture>(linear, samples(op, "fwd", op.outputs), op.outputs / op.calls,
                                                   wgrad ? samples(op, "wgrad", weight.numel()) : std::vector<int64_t>{});
  }
  int64_t next_call(const TapOp& op) { return calls[index[op.name]]++; }
  // One tap call: body(op) for the selected op `name`, timed into *seconds; its error, or a dtype
  // error, becomes this step's error. Views and copies only: nothing joins the autograd graph.
  template <class Body>
  void tap(const std::string& name, std::initializer_list<const at::Tensor*> tensors, double* seconds, Body body) {
    torch::NoGradGuard no_grad;
    Clock::time_point t0 = Clock::now();
    if (const TapOp* op = find(name, tensors)) {
      Status s = body(*op);
      if (!s.ok()) fail(name, s.message());
    }
    *seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }
};

OpTaps::OpTaps() : impl_(std::make_unique<Impl>()) {}
OpTaps::~OpTaps() = default;

Result<std::shared_ptr<OpTaps>> OpTaps::create(const std::vector<ProbeSpec>& specs, const std::vector<TapOp>& ops,
                                               const std::string& run_dir, int64_t resume_from, bool generic) {
  std::shared_ptr<OpTaps> taps(new OpTaps());
  for (const auto& spec : specs) {
    if (spec.name != "ops") continue;
    Impl& m = *taps->impl_;
    m.generic = generic;
    if (!generic) SADDLESCOPE_RETURN_IF_ERROR(check_op_taps(spec, ops));
    m.spec = spec;
    if (!generic) m.ops = *select(spec, ops);
    for (size_t i = 0; i < m.ops.size(); ++i) {
      SADDLESCOPE_CHECK(m.ops[i].calls >= 1 && m.ops[i].outputs % m.ops[i].calls == 0);
      m.index[m.ops[i].name] = i;
    }
    m.run_dir = run_dir;
    auto csv = store::TableWriter<store::OpRow>::open(run_dir, store::kOps, resume_from);
    if (!csv) return csv.status();
    m.csv.emplace(std::move(*csv));
  }
  return taps;
}

bool OpTaps::due(int64_t step) const { return impl_->spec && impl_->spec->due(step); }

void OpTaps::arm(int64_t step) {
  SADDLESCOPE_CHECK(due(step) && !armed_);
  Impl& m = *impl_;
  m.step = step;
  m.captures.assign(m.ops.size(), nullptr);
  m.calls.assign(m.ops.size(), 0);
  m.error.clear();
  armed_ = true;
  if (m.generic) {
    m.observer = std::make_unique<internal::OpObserver>(static_cast<uint64_t>(m.spec->get_int("seed")),
                                                        m.spec->get_int("k"), step, m.parameters);
    m.observer->start();
  }
}

void OpTaps::name_parameters(const std::vector<std::pair<std::string, at::Tensor>>& named) {
  for (const auto& [name, t] : named) impl_->parameters[t.unsafeGetTensorImpl()] = name;
}

Status OpTaps::Impl::record_generic(int64_t step) {
  observer->stop();
  if (torch::cuda::is_available()) torch::cuda::synchronize();  // every copy of this step has landed
  std::vector<internal::ObservedRow> rows;
  std::vector<internal::UnevaluatedOp> unevaluated;
  Status s = observer->evaluate(&rows, &unevaluated);
  observer.reset();
  if (!s.ok()) return Status::Error("op taps: " + s.message());
  const bool backward = spec->get_bool("wgrad");
  for (const auto& o : rows) {
    const internal::TapRow& r = o.row;
    if (!selected(o.op) || (!backward && r.phase != "fwd")) continue;
    append(step, o.op, o.kernel, r);
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& u : unevaluated) {
    if (!selected(u.op) || (!backward && u.phase != "fwd")) continue;
    const std::string dtype = u.dtype == "Float" ? "float32" : u.dtype == "Double" ? "float64" : u.dtype;
    csv->append({step, u.op, u.phase, "", nan, nan, nan, nan, nan, -1, u.kernel, dtype, u.calls, "not_evaluated"});
  }
  return csv->flush();
}

void OpTaps::linear(const std::string& name, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                    const at::Tensor& y) {
  Impl& m = *impl_;
  m.tap(name, {&x, &weight, &bias, &y}, &seconds_, [&](const TapOp& op) -> Status {
    if (x.dim() != 2 || weight.dim() != 2 || y.dim() != 2)
      return Status::Error("a linear op takes (N, in) inputs, (out, in) weights and (N, out) outputs");
    auto c = m.capture<internal::ConvCapture>(op, [&] { return m.conv_capture(op, true, weight); });
    const int64_t n = x.size(0), in = x.size(1), out = weight.size(0);
    return c->on_call(m.next_call(op), x.reshape({n, in, 1, 1}), weight.reshape({out, in, 1, 1}), bias, {},
                      y.reshape({y.size(0), y.size(1), 1, 1}), y, weight);
  });
}

void OpTaps::conv2d(const std::string& name, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                    const ConvOptions& options, const at::Tensor& y, const at::Tensor& y_graph) {
  Impl& m = *impl_;
  m.tap(name, {&x, &weight, &bias, &y}, &seconds_, [&](const TapOp& op) -> Status {
    if (x.dim() != 4 || weight.dim() != 4 || y.dim() != 4)
      return Status::Error("a conv2d op takes (N, C, H, W) inputs, (O, C, kh, kw) weights and (N, O, OH, OW) outputs");
    if (y_graph.defined() && y_graph.sizes() != y.sizes())
      return Status::Error("a conv2d op's y_graph must have y's shape");
    auto c = m.capture<internal::ConvCapture>(op, [&] { return m.conv_capture(op, false, weight); });
    return c->on_call(m.next_call(op), x, weight, bias, options, y, y_graph.defined() ? y_graph : y, weight);
  });
}

void OpTaps::elementwise(const std::string& name, const at::Tensor& x, const at::Tensor& y) {
  Impl& m = *impl_;
  m.tap(name, {&x, &y}, &seconds_, [&](const TapOp& op) {
    auto c = m.capture<internal::ElementwiseCapture>(op, [&] {
      return std::make_shared<internal::ElementwiseCapture>(elementwise_op(op.kernel), m.samples(op, "fwd", op.outputs),
                                                            op.outputs / op.calls);
    });
    return c->on_call(m.next_call(op), x, y);
  });
}

void OpTaps::mse_loss(const std::string& name, const at::Tensor& prediction, const at::Tensor& target,
                      const at::Tensor& loss) {
  Impl& m = *impl_;
  m.tap(name, {&prediction, &target, &loss}, &seconds_, [&](const TapOp& op) {
    auto c = m.capture<internal::MseCapture>(op, [&] {
      const bool dgrad = m.spec->get_bool("wgrad") && prediction.requires_grad();
      return std::make_shared<internal::MseCapture>(dgrad ? m.samples(op, "dgrad", prediction.numel())
                                                          : std::vector<int64_t>{});
    });
    return c->on_call(m.next_call(op), prediction, target, loss);
  });
}

Status OpTaps::record(int64_t step) {
  Impl& m = *impl_;
  SADDLESCOPE_CHECK(armed_ && step == m.step);
  armed_ = false;
  Clock::time_point t0 = Clock::now();
  if (m.generic) {
    Status s = m.record_generic(step);
    seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
    return s;
  }
  std::vector<std::shared_ptr<internal::Capture>> captures = std::move(m.captures);
  m.captures.clear();
  if (!m.error.empty()) return Status::Error(m.error);
  for (size_t i = 0; i < m.ops.size(); ++i)
    if (m.calls[i] != m.ops[i].calls)
      return Status::Error(fmt::format("op tap {}: called {} times in the forward of step {}, the model listed {}",
                                       m.ops[i].name, m.calls[i], step, m.ops[i].calls));
  if (m.cuda) torch::cuda::synchronize();  // every copy of this step has landed
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const TapOp& op = m.ops[i];
    std::vector<internal::TapRow> rows;
    Status s = captures[i]->evaluate(&rows);
    if (!s.ok()) return Status::Error(fmt::format("op tap {} at step {}: {}", op.name, step, s.message()));
    for (const auto& r : rows) m.append(step, op.name, op.kernel, r);
  }
  Status flushed = m.csv->flush();
  seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
  return flushed;
}

}  // namespace saddlescope::probes
