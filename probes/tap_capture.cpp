#include "tap_capture.h"

#include <algorithm>
#include <functional>
#include <random>
#include <set>

#include <fmt/format.h>
#include <torch/torch.h>

#include "saddlescope/reference/elementwise.h"

namespace saddlescope::probes::internal {
namespace {

std::string shape(const at::Tensor& t) {
  std::string s;
  for (int64_t d : t.sizes()) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "(" + s + ")";
}

at::Tensor device_indices(const std::vector<int64_t>& v, const at::Device& device) {
  return torch::tensor(v, torch::kInt64).to(device);
}

std::string join(std::initializer_list<int64_t> v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ":") + std::to_string(x);
  return s;
}

template <class T>
const T* ptr(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

template <class T>
TapRow row(const char* phase, std::string index, int64_t call, const reference::Evaluation& e, T observed) {
  return tap_row(phase, std::move(index), call, e, observed);
}

// Position of v in the ascending vector `sorted`. REQUIRES: present.
int64_t position(const std::vector<int64_t>& sorted, int64_t v) {
  return std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin();
}

}  // namespace

template <class T>
TapRow tap_row(std::string phase, std::string index, int64_t call, const reference::Evaluation& e, T observed) {
  TapRow r;
  r.phase = std::move(phase);
  r.index = std::move(index);
  r.call = call;
  r.observed = observed;
  r.exact = e.f64;
  r.terms = e.n;
  r.report = reference::assess(e, observed);
  return r;
}
template TapRow tap_row(std::string, std::string, int64_t, const reference::Evaluation&, float);
template TapRow tap_row(std::string, std::string, int64_t, const reference::Evaluation&, double);

std::string coordinates(int64_t flat, const std::vector<int64_t>& shape) {
  std::string index;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index = std::to_string(flat % shape[d]) + (index.empty() ? "" : ":") + index;
    flat /= shape[d];
  }
  return index;
}

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t op_seed(uint64_t seed, int64_t step, const std::string& name, const char* phase) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of name and phase
  for (const std::string& s : {name, std::string(phase)})
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return splitmix64(splitmix64(seed) ^ splitmix64(static_cast<uint64_t>(step)) ^ h);
}

at::Tensor to_host(const at::Tensor& t) {
  at::Tensor src = t.detach();
  if (src.is_cuda()) {
    at::Tensor host = at::empty(src.sizes(), src.options().device(at::kCPU).pinned_memory(true));
    host.copy_(src, /*non_blocking=*/true);
    return host;
  }
  return src.clone(at::MemoryFormat::Contiguous);
}

std::vector<int64_t> sample_indices(uint64_t seed, int64_t k, int64_t n) {
  SADDLESCOPE_CHECK(k >= 0 && k <= n);
  std::mt19937_64 rng(seed);
  // An unbiased draw in [0, bound): std::uniform_int_distribution's output is implementation-defined.
  auto below = [&rng](uint64_t bound) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do r = rng(); while (r >= limit);
    return static_cast<int64_t>(r % bound);
  };
  std::set<int64_t> chosen;  // Floyd's algorithm: k draws, no rejection
  for (int64_t j = n - k; j < n; ++j) {
    const int64_t t = below(static_cast<uint64_t>(j) + 1);
    if (!chosen.insert(t).second) chosen.insert(j);
  }
  return {chosen.begin(), chosen.end()};
}

Patch conv_patch(const reference::Conv2dGeometry& g, int64_t oy, int64_t ox) {
  // Per axis: keep the padding, start at a multiple of the stride at or before the first in-bounds tap,
  // end after the last in-bounds tap. Taps before the start or past the end are exactly the padding.
  struct Axis {
    int64_t start, length, out;
  };
  auto axis = [](int64_t size, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, int64_t o) {
    const int64_t first = o * stride - pad, last = first + (kernel - 1) * dilation;
    const int64_t start = stride * (std::max<int64_t>(first, 0) / stride);
    const int64_t end = std::max(std::min(size, last + 1), start + 1);
    return Axis{start, end - start, o - start / stride};
  };
  const Axis y = axis(g.height, g.kernel_h, g.stride_h, g.pad_h, g.dilation_h, oy);
  const Axis x = axis(g.width, g.kernel_w, g.stride_w, g.pad_w, g.dilation_w, ox);
  Patch p;
  p.y0 = y.start;
  p.x0 = x.start;
  p.geometry = g;
  p.geometry.height = y.length;
  p.geometry.width = x.length;
  p.oy = y.out;
  p.ox = x.out;
  return p;
}

ConvCapture::ConvCapture(bool linear, std::vector<int64_t> fwd_samples, int64_t per_call,
                         std::vector<int64_t> weight_samples)
    : linear_(linear), fwd_samples_(std::move(fwd_samples)), per_call_(per_call),
      weight_samples_(std::move(weight_samples)) {}

Status ConvCapture::on_call(int64_t call, const at::Tensor& x_in, const at::Tensor& weight, const at::Tensor& bias,
                            const ConvOptions& o, const at::Tensor& y_in, const at::Tensor& y_graph,
                            const at::Tensor& parameter) {
  const at::Tensor x = x_in.detach(), y = y_in.detach(), w = weight.detach();
  reference::Conv2dGeometry g{x.size(1), x.size(2), x.size(3), w.size(2), w.size(3), o.stride, o.stride,
                              o.padding, o.padding, o.dilation, o.dilation};
  if (!started_) {
    started_ = true;
    g_ = g;
    batch_ = x.size(0);
    out_channels_ = w.size(0);
    for (int64_t s : weight_samples_) {
      const int64_t per_out = g.channels * g.kernel_h * g.kernel_w;
      in_channels_.push_back(s % per_out / (g.kernel_h * g.kernel_w));
      out_channels_needed_.push_back(s / per_out);
    }
    for (auto* v : {&in_channels_, &out_channels_needed_}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
  }
  const int64_t oh = g_.out_height(), ow = g_.out_width();
  if (x.size(0) != batch_ || x.size(1) != g_.channels || x.size(2) != g_.height || x.size(3) != g_.width ||
      w.size(0) != out_channels_ || y.sizes() != at::IntArrayRef({batch_, out_channels_, oh, ow}) ||
      y.numel() != per_call_)
    return Status::Error(fmt::format("shapes differ from the op's first call or its listed {} outputs per call "
                                     "(input {}, output {})", per_call_, shape(x), shape(y)));
  // Forward samples of this call.
  auto lo = std::lower_bound(fwd_samples_.begin(), fwd_samples_.end(), call * per_call_);
  auto hi = std::lower_bound(fwd_samples_.begin(), fwd_samples_.end(), (call + 1) * per_call_);
  for (auto it = lo; it != hi; ++it) {
    const int64_t flat = *it - call * per_call_;
    Fwd f{call, flat / (out_channels_ * oh * ow), flat / (oh * ow) % out_channels_, flat / ow % oh, flat % ow, {}, {}, {}, {}, {}};
    f.patch = conv_patch(g_, f.oy, f.ox);
    f.input = to_host(x[f.b].narrow(1, f.patch.y0, f.patch.geometry.height).narrow(2, f.patch.x0, f.patch.geometry.width));
    f.filter = to_host(w[f.o]);
    if (bias.defined()) f.bias = to_host(bias.detach()[f.o]);
    f.observed = to_host(y[f.b][f.o][f.oy][f.ox]);
    fwd_.push_back(std::move(f));
  }
  // Weight-gradient planes: this call's input channels now, its output gradient channels from a hook.
  if (weight_samples_.empty() || !y_graph.requires_grad()) return Status::Ok();
  if (!weight_.defined()) weight_ = parameter;
  if (static_cast<int64_t>(in_planes_.size()) <= call) {
    in_planes_.resize(static_cast<size_t>(call) + 1);
    std::lock_guard<std::mutex> lock(mutex_);
    grad_planes_.resize(static_cast<size_t>(call) + 1);
  }
  in_planes_[static_cast<size_t>(call)] = to_host(x.index_select(1, device_indices(in_channels_, x.device())));
  at::Tensor channels = device_indices(out_channels_needed_, y.device());
  std::vector<int64_t> shape = y.sizes().vec();
  std::weak_ptr<ConvCapture> self = std::static_pointer_cast<ConvCapture>(shared_from_this());
  y_graph.register_hook([self, call, channels, shape](const at::Tensor& grad) {
    auto capture = self.lock();
    if (!capture) return;
    at::Tensor planes = to_host(grad.detach().reshape(shape).index_select(1, channels));
    std::lock_guard<std::mutex> lock(capture->mutex_);
    capture->grad_planes_[static_cast<size_t>(call)] = planes;
  });
  return Status::Ok();
}

Status ConvCapture::evaluate(std::vector<TapRow>* rows) {
  for (const Fwd& f : fwd_) {
    std::string index = linear_ ? join({f.b, f.o}) : join({f.b, f.o, f.oy, f.ox});
    const Patch& p = f.patch;
    if (f.input.scalar_type() == at::kDouble) {
      auto e = reference::evaluate_conv2d_element(ptr<double>(f.input), f.input.numel(), ptr<double>(f.filter),
                                                  f.filter.numel(), ptr<double>(f.bias), p.geometry, p.oy, p.ox);
      if (!e) return e.status();
      rows->push_back(row("fwd", index, f.call, *e, f.observed.item<double>()));
    } else {
      auto e = reference::evaluate_conv2d_element(ptr<float>(f.input), f.input.numel(), ptr<float>(f.filter),
                                                  f.filter.numel(), ptr<float>(f.bias), p.geometry, p.oy, p.ox);
      if (!e) return e.status();
      rows->push_back(row("fwd", index, f.call, *e, f.observed.item<float>()));
    }
  }
  return evaluate_wgrad(rows);
}

Status ConvCapture::evaluate_wgrad(std::vector<TapRow>* rows) {
  std::vector<size_t> calls;  // the calls whose output gradient arrived (the others contribute 0)
  for (size_t c = 0; c < grad_planes_.size(); ++c)
    if (grad_planes_[c].defined()) calls.push_back(c);
  if (!weight_.defined() || calls.empty()) return Status::Ok();
  if (!weight_.grad().defined()) return Status::Error("its output had a gradient but its weight has none");
  at::Tensor observed = weight_.grad().detach().reshape(-1).index_select(
      0, device_indices(weight_samples_, weight_.device())).cpu();
  // The planes of each needed channel over the calls, concatenated along the batch: (calls·N, H, W).
  auto planes = [&](const std::vector<at::Tensor>& per_call, int64_t channel) {
    std::vector<at::Tensor> parts;
    for (size_t c : calls) parts.push_back(per_call[c].select(1, channel));
    return at::cat(parts, 0).contiguous();
  };
  const int64_t kk = g_.kernel_h * g_.kernel_w, per_out = g_.channels * kk;
  const int64_t batch = static_cast<int64_t>(calls.size()) * batch_;
  for (size_t i = 0; i < weight_samples_.size(); ++i) {
    const int64_t s = weight_samples_[i], o = s / per_out, c = s % per_out / kk, ky = s % kk / g_.kernel_w,
                  kx = s % g_.kernel_w;
    at::Tensor in = planes(in_planes_, position(in_channels_, c));
    at::Tensor gr = planes(grad_planes_, position(out_channels_needed_, o));
    std::string index = linear_ ? join({o, c}) : join({o, c, ky, kx});
    if (in.scalar_type() == at::kDouble) {
      auto e = reference::evaluate_conv2d_weight_grad(ptr<double>(in), in.numel(), ptr<double>(gr), gr.numel(), batch,
                                                      g_, ky, kx);
      if (!e) return e.status();
      rows->push_back(row("wgrad", index, -1, *e, observed[static_cast<int64_t>(i)].item<double>()));
    } else {
      auto e = reference::evaluate_conv2d_weight_grad(ptr<float>(in), in.numel(), ptr<float>(gr), gr.numel(), batch,
                                                      g_, ky, kx);
      if (!e) return e.status();
      rows->push_back(row("wgrad", index, -1, *e, observed[static_cast<int64_t>(i)].item<float>()));
    }
  }
  return Status::Ok();
}

ElementwiseCapture::ElementwiseCapture(reference::Op op, std::vector<int64_t> samples, int64_t per_call)
    : op_(op), samples_(std::move(samples)), per_call_(per_call) {}

Status ElementwiseCapture::on_call(int64_t call, const at::Tensor& x, const at::Tensor& y) {
  if (x.sizes() != y.sizes() || y.numel() != per_call_ || x.scalar_type() != y.scalar_type())
    return Status::Error(fmt::format("input {} and output {} must have one shape, dtype and the {} listed elements",
                                     shape(x), shape(y), per_call_));
  shape_ = y.sizes().vec();
  Call c{call, {}, {}, {}};
  auto lo = std::lower_bound(samples_.begin(), samples_.end(), call * per_call_);
  auto hi = std::lower_bound(samples_.begin(), samples_.end(), (call + 1) * per_call_);
  for (auto it = lo; it != hi; ++it) c.flat.push_back(*it - call * per_call_);
  if (c.flat.empty()) return Status::Ok();
  at::Tensor idx = device_indices(c.flat, y.device());
  c.x = to_host(x.detach().reshape(-1).index_select(0, idx));
  c.y = to_host(y.detach().reshape(-1).index_select(0, idx));
  calls_.push_back(std::move(c));
  return Status::Ok();
}

Status ElementwiseCapture::evaluate(std::vector<TapRow>* rows) {
  for (const Call& c : calls_) {
    for (size_t i = 0; i < c.flat.size(); ++i) {
      const std::string index = coordinates(c.flat[i], shape_);
      const auto j = static_cast<int64_t>(i);
      if (c.x.scalar_type() == at::kDouble) {
        auto e = reference::evaluate_elementwise(op_, c.x[j].item<double>());
        if (!e) return e.status();
        rows->push_back(row("fwd", index, c.call, *e, c.y[j].item<double>()));
      } else {
        auto e = reference::evaluate_elementwise(op_, c.x[j].item<float>());
        if (!e) return e.status();
        rows->push_back(row("fwd", index, c.call, *e, c.y[j].item<float>()));
      }
    }
  }
  return Status::Ok();
}

namespace {

// Copies the loss node's gradient for `prediction` (its first input) at the sampled elements.
class MseGradHook : public torch::autograd::FunctionPostHook {
 public:
  using Sink = std::function<void(const at::Tensor& upstream, const at::Tensor& grad)>;
  explicit MseGradHook(Sink sink) : sink_(std::move(sink)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& grad_inputs,
                                            const torch::autograd::variable_list& grad_outputs) override {
    if (!grad_inputs.empty() && grad_inputs[0].defined() && !grad_outputs.empty() && grad_outputs[0].defined())
      sink_(grad_outputs[0], grad_inputs[0]);
    return grad_inputs;
  }

 private:
  Sink sink_;
};

}  // namespace

Status MseCapture::on_call(int64_t call, const at::Tensor& prediction, const at::Tensor& target, const at::Tensor& loss) {
  if (prediction.sizes() != target.sizes() || loss.numel() != 1 || prediction.scalar_type() != target.scalar_type() ||
      loss.scalar_type() != prediction.scalar_type())
    return Status::Error(fmt::format("prediction {} and target {} must have one shape and dtype, the loss one element",
                                     shape(prediction), shape(target)));
  calls_.push_back({call, to_host(prediction), to_host(target), to_host(loss), prediction.sizes().vec()});
  const auto& node = loss.grad_fn();
  if (grad_samples_.empty() || !node || node->name().find("MseLossBackward") == std::string::npos) return Status::Ok();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (static_cast<int64_t>(grads_.size()) <= call) grads_.resize(static_cast<size_t>(call) + 1);
  }
  at::Tensor index = device_indices(grad_samples_, prediction.device());
  std::weak_ptr<MseCapture> self = std::static_pointer_cast<MseCapture>(shared_from_this());
  node->add_post_hook(std::make_unique<MseGradHook>([self, call, index](const at::Tensor& up, const at::Tensor& g) {
    auto capture = self.lock();
    if (!capture) return;
    Grad grad{to_host(up.reshape({})), to_host(g.detach().reshape({-1}).index_select(0, index))};
    std::lock_guard<std::mutex> lock(capture->mutex_);
    capture->grads_[static_cast<size_t>(call)] = std::move(grad);
  }));
  return Status::Ok();
}

namespace {

template <class T>
Status mse_rows(const at::Tensor& prediction, const at::Tensor& target, const at::Tensor& loss, int64_t call,
                const std::vector<int64_t>& shape, const std::vector<int64_t>& samples, const at::Tensor* upstream,
                const at::Tensor* grad, std::vector<TapRow>* rows) {
  const int64_t n = prediction.numel();
  auto e = reference::evaluate_mse_loss(ptr<T>(prediction), n, ptr<T>(target), n);
  if (!e) return e.status();
  rows->push_back(row("fwd", "0", call, *e, loss.item<T>()));
  if (!grad) return Status::Ok();
  const T g = upstream->item<T>();
  for (size_t i = 0; i < samples.size(); ++i) {
    const int64_t j = samples[i];
    auto d = reference::evaluate_mse_loss_grad(ptr<T>(prediction)[j], ptr<T>(target)[j], g, n);
    if (!d) return d.status();
    rows->push_back(row("dgrad", coordinates(j, shape), call, *d, grad->data_ptr<T>()[i]));
  }
  return Status::Ok();
}

}  // namespace

Status MseCapture::evaluate(std::vector<TapRow>* rows) {
  for (const Call& c : calls_) {
    const Grad* g = c.call < static_cast<int64_t>(grads_.size()) && grads_[c.call].samples.defined() ? &grads_[c.call]
                                                                                                       : nullptr;
    const at::Tensor* up = g ? &g->upstream : nullptr;
    const at::Tensor* samples = g ? &g->samples : nullptr;
    Status s = c.prediction.scalar_type() == at::kDouble
                   ? mse_rows<double>(c.prediction, c.target, c.loss, c.call, c.shape, grad_samples_, up, samples, rows)
                   : mse_rows<float>(c.prediction, c.target, c.loss, c.call, c.shape, grad_samples_, up, samples, rows);
    SADDLESCOPE_RETURN_IF_ERROR(s);
  }
  return Status::Ok();
}

}  // namespace saddlescope::probes::internal
