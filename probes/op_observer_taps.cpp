// How OpObserver samples each kind of op it evaluates: products and sums, elementwise ops, the loss,
// convolutions and their two gradients, softmax, log_softmax and normalisation and their backwards.
#include "op_observer_impl.h"

#include <algorithm>

#include <fmt/format.h>
#include <torch/torch.h>

#include "saddlescope/reference/elementwise.h"
#include "saddlescope/reference/gelu.h"
#include "saddlescope/reference/normalization.h"
#include "saddlescope/reference/softmax_backward.h"

namespace saddlescope::probes::internal {
namespace {

// Samples of `out`'s elements: for each flat index, `gather` copies what it reads and sets the kind.
template <class Gather>
void sample_output(OpObserver::Impl& m, const std::string& op, const std::string& kernel, const std::string& phase,
                   const at::Tensor& out, Gather gather) {
  if (!out.defined() || out.numel() == 0) return;
  const int64_t call = m.next_call(op, phase, kernel);
  const at::Tensor flat = out.detach().reshape(-1);
  for (int64_t s : m.sample(op, phase, call, out.numel())) {
    OpObserver::Impl::Sample x;
    x.op = op;
    x.kernel = kernel;
    x.phase = phase;
    x.call = call;
    x.index = out.dim() == 0 ? "0" : coordinates(s, out.sizes().vec());
    x.observed = to_host(flat[s]);
    gather(s, x);
    m.add(std::move(x));
  }
}

// Scalars of an op's arguments as 0-dim tensors in `like`'s dtype and device; undefined when not one.
at::Tensor operand(const c10::IValue& v, const at::Tensor& like) {
  if (v.isTensor()) return v.toTensor();
  if (v.isScalar()) return at::scalar_tensor(v.toScalar(), like.options());
  return {};
}

// An int[] argument: an IntList, or (an op called from C++ with an IntArrayRef, as the fused PredNet's
// convolutions are) a generic list of ints. Empty when neither.
std::vector<int64_t> int_list(const c10::IValue& v) {
  if (v.isIntList()) return v.toIntVector();
  std::vector<int64_t> out;
  if (v.isList())
    for (const c10::IValue& x : v.toListRef()) {
      if (!x.isInt()) return {};
      out.push_back(x.toInt());
    }
  return out;
}

bool is_one(const c10::IValue& v) { return v.isScalar() && v.toScalar().toDouble() == 1.0; }

}  // namespace

void OpObserver::Impl::tap(const Frame& f, const std::vector<c10::IValue>& outputs, const std::string& op,
                           bool backward, const Forward* fwd) {
  using Kind = Sample::Kind;
  torch::NoGradGuard no_grad;
  const std::string kernel = short_name(f.name);
  const std::vector<c10::IValue>& in = f.inputs;
  at::Tensor out = outputs.empty() ? at::Tensor() : tensor_of(outputs[0]);
  auto phase = [&](const at::Tensor& t) { return backward ? phase_of(fwd, t) : std::string("fwd"); };
  // An op of an evaluated kind whose arguments the reference does not take (another dtype, β ≠ 1, ...).
  auto skip = [&] {
    count_unevaluated(op, backward ? "bwd" : "fwd", kernel, out.defined() ? c10::toString(out.scalar_type()) : "?");
  };
  // Every tensor operand floating and of the output's dtype (but the losses' class targets).
  const bool targets = f.name == "aten::cross_entropy_loss" || f.name == "aten::nll_loss_backward";
  for (size_t k = 0; k < in.size(); ++k) {
    const c10::IValue& v = in[k];
    if (v.isTensor() && v.toTensor().defined() && (!is_floating(v.toTensor()) || !out.defined() ||
                                                   v.toTensor().scalar_type() != out.scalar_type())) {
      if (f.name == "aten::convolution_backward") continue;
      if (targets && k == (f.name == "aten::cross_entropy_loss" ? 1u : 2u) &&
          v.toTensor().scalar_type() == at::kLong)
        continue;
      return skip();
    }
  }
  if (f.name != "aten::convolution_backward" && !is_floating(out)) return skip();

  if (f.name == "aten::mm" || f.name == "aten::addmm" || f.name == "aten::bmm") {
    const bool add = f.name == "aten::addmm";
    if (add && !(is_one(in[3]) && is_one(in[4]))) return skip();
    const at::Tensor a = tensor_of(in[add ? 1 : 0]).detach(), b = tensor_of(in[add ? 2 : 1]).detach();
    const at::Tensor bias = add ? tensor_of(in[0]).detach().expand(out.sizes()).reshape(-1) : at::Tensor();
    const bool batched = f.name == "aten::bmm";
    const int64_t rows = out.size(batched ? 1 : 0), cols = out.size(batched ? 2 : 1);
    sample_output(*this, op, kernel, phase(out), out, [&](int64_t s, Sample& x) {
      const int64_t j = s % cols, i = s / cols % rows, n = s / (rows * cols);
      at::Tensor row = batched ? a[n][i] : a[i], col = batched ? b[n].select(1, j) : b.select(1, j);
      if (add) {
        row = at::cat({row, bias[s].reshape({1})});
        col = at::cat({col, at::ones({1}, col.options())});
      }
      x.kind = Kind::kDot;
      x.a = to_host(row);
      x.b = to_host(col);
    });
  } else if (f.name == "aten::mul" || f.name == "aten::add" || f.name == "aten::sub") {
    if (f.name != "aten::mul" && in.size() > 2 && !is_one(in[2])) return skip();
    const at::Tensor a = operand(in[0], out), b = operand(in[1], out);
    if (!a.defined() || !b.defined()) return skip();
    const at::Tensor ea = a.detach().expand(out.sizes()).reshape(-1), eb = b.detach().expand(out.sizes()).reshape(-1);
    sample_output(*this, op, kernel, phase(out), out, [&](int64_t s, Sample& x) {
      if (f.name == "aten::mul") {
        x.kind = Kind::kDot;
        x.a = to_host(ea[s].reshape({1}));
        x.b = to_host(eb[s].reshape({1}));
      } else {
        x.kind = Kind::kSum;
        x.a = to_host(at::stack({ea[s], f.name == "aten::sub" ? -eb[s] : eb[s]}));
      }
    });
  } else if (f.name == "aten::relu" || f.name == "aten::sigmoid" || f.name == "aten::tanh" || f.name == "aten::exp") {
    const at::Tensor x_in = tensor_of(in[0]).detach().reshape(-1);
    const reference::Op fn = f.name == "aten::relu" ? reference::Op::kRelu
                             : f.name == "aten::sigmoid" ? reference::Op::kSigmoid
                             : f.name == "aten::tanh" ? reference::Op::kTanh : reference::Op::kExp;
    sample_output(*this, op, kernel, phase(out), out, [&](int64_t s, Sample& x) {
      x.kind = Kind::kElementwise;
      x.fn = fn;
      x.a = to_host(x_in[s]);
    });
  } else if (f.name == "aten::gelu") {
    // gelu(self, str approximate = 'none' | 'tanh').
    const std::string approximate = in.size() > 1 && in[1].isString() ? in[1].toStringRef() : "none";
    if (approximate != "none" && approximate != "tanh") return skip();
    const at::Tensor x_in = tensor_of(in[0]).detach().reshape(-1);
    sample_output(*this, op, kernel, phase(out), out, [&](int64_t s, Sample& x) {
      x.kind = Kind::kElementwise;
      x.fn = approximate == "tanh" ? reference::Op::kGeluTanh : reference::Op::kGelu;
      x.a = to_host(x_in[s]);
    });
  } else if (f.name == "aten::gelu_backward") {
    // gelu_backward(grad_output, self, str approximate): g·gelu'(x) elementwise.
    const std::string approximate = in.size() > 2 && in[2].isString() ? in[2].toStringRef() : "none";
    const at::Tensor g = tensor_of(in[0]).detach(), x_in = tensor_of(in[1]).detach();
    if ((approximate != "none" && approximate != "tanh") || !g.defined() || !x_in.defined() ||
        g.sizes() != out.sizes() || x_in.sizes() != out.sizes())
      return skip();
    const at::Tensor gs = g.reshape(-1), xs = x_in.reshape(-1);
    sample_output(*this, op, kernel, phase(out), out, [&](int64_t s, Sample& x) {
      x.kind = Kind::kGeluBwd;
      x.fn = approximate == "tanh" ? reference::Op::kGeluTanh : reference::Op::kGelu;
      x.a = to_host(gs[s]);
      x.b = to_host(xs[s]);
    });
  } else if (f.name == "aten::sum") {
    const at::Tensor self = tensor_of(in[0]).detach();
    std::vector<int64_t> dims;
    if (in.size() > 1 && in[1].isIntList()) dims = in[1].toIntVector();
    if (in.size() > 1 && !in[1].isIntList() && !in[1].isNone()) return skip();
    if (in.size() > 3 && !in[3].isNone()) return skip();
    std::vector<int64_t> kept, reduced;
    for (int64_t d = 0; d < self.dim(); ++d) {
      const bool r = dims.empty() || std::any_of(dims.begin(), dims.end(), [&](int64_t x) {
                       return (x < 0 ? x + self.dim() : x) == d;
                     });
      (r ? reduced : kept).push_back(d);
    }
    std::vector<int64_t> order = kept;
    order.insert(order.end(), reduced.begin(), reduced.end());
    const at::Tensor terms = self.permute(order).reshape({out.numel(), -1});
    sample_output(*this, op, kernel, phase(out), out, [&](int64_t s, Sample& x) {
      x.kind = Kind::kSum;
      x.a = to_host(terms[s]);
    });
  } else if (f.name == "aten::mse_loss") {
    if (!(in.size() > 2 && in[2].isInt() && in[2].toInt() == 1)) return skip();
    const at::Tensor p = tensor_of(in[0]).detach();
    const at::Tensor t = tensor_of(in[1]).detach().expand(p.sizes());
    sample_output(*this, op, kernel, phase(out), out, [&](int64_t, Sample& x) {
      x.kind = Kind::kMse;
      x.a = to_host(p.reshape(-1));
      x.b = to_host(t.reshape(-1));
    });
  } else if (f.name == "aten::native_layer_norm_backward" || f.name == "aten::native_batch_norm_backward") {
    // (grad_input, grad_weight, grad_bias): the bias gradient is a plain sum of grad_output, over the
    // rows (layer norm: grad_output as (rows, D)) or over N and the spatial positions of a channel (batch
    // norm); the input and weight gradients are not evaluated yet, and are listed.
    const bool layer = f.name == "aten::native_layer_norm_backward";
    const at::Tensor g = tensor_of(in[0]).detach();
    const at::Tensor grad_bias = outputs.size() > 2 ? tensor_of(outputs[2]) : at::Tensor();
    const std::string dtype = c10::toString(g.scalar_type());
    for (size_t k = 0; k < 2 && k < outputs.size(); ++k)
      if (tensor_of(outputs[k]).defined()) count_unevaluated(op, k == 0 ? "dgrad" : "wgrad", kernel, dtype);
    if (!grad_bias.defined() || g.dim() < 2) return;
    const int64_t channels = grad_bias.numel();
    const at::Tensor terms = layer ? g.reshape({-1, channels}).t() : g.transpose(0, 1).reshape({channels, -1});
    sample_output(*this, op, kernel + ".grad_bias", "wgrad", grad_bias, [&](int64_t s, Sample& x) {
      x.kind = Kind::kSum;
      x.a = to_host(terms[s]);
    });
  } else if (f.name == "aten::cross_entropy_loss" || f.name == "aten::nll_loss_backward") {
    tap_class_loss(f, out, op, backward);
  } else if (f.name == "aten::_softmax_backward_data" || f.name == "aten::_log_softmax_backward_data") {
    // _softmax_backward_data / _log_softmax_backward_data(grad_output, output, int dim, ScalarType
    // input_dtype): the rows of the forward's output y (a) and of the gradient g (b) through the element.
    const at::Tensor g = tensor_of(in[0]).detach(), y = tensor_of(in[1]).detach();
    if (!backward || in.size() < 3 || !in[2].isInt() || !g.defined() || !y.defined() || g.sizes() != out.sizes() ||
        y.sizes() != out.sizes())
      return skip();
    const std::vector<int64_t> shape = out.dim() == 0 ? std::vector<int64_t>{1} : out.sizes().vec();
    const int64_t rank = static_cast<int64_t>(shape.size());
    const int64_t dim = in[2].toInt() < 0 ? in[2].toInt() + rank : in[2].toInt();
    if (dim < 0 || dim >= rank) return skip();
    int64_t inner = 1;
    for (int64_t d = dim + 1; d < rank; ++d) inner *= shape[d];
    const int64_t size = shape[dim];
    const at::Tensor y_rows = y.reshape({-1, size, inner}), g_rows = g.reshape({-1, size, inner});
    sample_output(*this, op, kernel, phase(out), out, [&](int64_t s, Sample& x) {
      x.kind = Kind::kSoftmaxBwd;
      x.fn = f.name == "aten::_softmax_backward_data" ? reference::Op::kSoftmaxBackward
                                                      : reference::Op::kLogSoftmaxBackward;
      x.a = to_host(y_rows[s / (size * inner)].select(1, s % inner));
      x.b = to_host(g_rows[s / (size * inner)].select(1, s % inner));
      x.i = s / inner % size;
    });
  } else if (is_row_op(f.name)) {
    if (backward || !tap_row_op(f, out, op, kernel)) return skip();
  } else if (f.name == "aten::convolution" || f.name == "aten::convolution_backward") {
    const bool bwd = f.name == "aten::convolution_backward";
    // convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
    // convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    // output_padding, groups, output_mask) -> (grad_input, grad_weight, grad_bias).
    const size_t o = bwd ? 1 : 0;
    const at::Tensor grad_out = bwd ? tensor_of(in[0]).detach() : at::Tensor();
    const at::Tensor x_in = tensor_of(in[o]).detach(), w = tensor_of(in[o + 1]).detach();
    const at::Tensor bias = bwd ? at::Tensor() : tensor_of(in[2]);
    // A one-element list holds for both axes (as convolution itself expands it: conv2d passes its own).
    auto both_axes = [](std::vector<int64_t> v) {
      if (v.size() == 1) v.push_back(v[0]);
      return v;
    };
    const std::vector<int64_t> stride = both_axes(int_list(in[o + 3])), pad = both_axes(int_list(in[o + 4])),
                               dilation = both_axes(int_list(in[o + 5]));
    const int64_t groups = in[o + 8].toInt();
    if (x_in.dim() != 4 || in[o + 6].toBool() || stride.size() != 2 || pad.size() != 2 || dilation.size() != 2 ||
        !is_floating(x_in) || x_in.scalar_type() != w.scalar_type())
      return skip();
    const int64_t cg = w.size(1), og = w.size(0) / groups;
    reference::Conv2dGeometry g{cg, x_in.size(2), x_in.size(3), w.size(2), w.size(3), stride[0], stride[1],
                                pad[0], pad[1], dilation[0], dilation[1]};
    if (!bwd) {
      const int64_t oc = out.size(1), oh = out.size(2), ow = out.size(3);
      sample_output(*this, op, kernel, "fwd", out, [&](int64_t s, Sample& x) {
        const int64_t n = s / (oc * oh * ow), oo = s / (oh * ow) % oc, oy = s / ow % oh, ox = s % ow;
        const Patch p = conv_patch(g, oy, ox);
        x.kind = Kind::kConv;
        x.a = to_host(x_in[n].narrow(0, oo / og * cg, cg).narrow(1, p.y0, p.geometry.height).narrow(2, p.x0, p.geometry.width));
        x.b = to_host(w[oo]);
        if (bias.defined()) x.bias = to_host(bias.detach()[oo]);
        x.g = p.geometry;
        x.oy = p.oy;
        x.ox = p.ox;
      });
      return;
    }
    const at::Tensor grad_input = tensor_of(outputs[0]), grad_weight = tensor_of(outputs[1]),
                     grad_bias = outputs.size() > 2 ? tensor_of(outputs[2]) : at::Tensor();
    if (grad_input.defined()) {
      const int64_t c = grad_input.size(1), h = grad_input.size(2), wd = grad_input.size(3);
      sample_output(*this, op, kernel, "dgrad", grad_input, [&](int64_t s, Sample& x) {
        const int64_t n = s / (c * h * wd), cc = s / (h * wd) % c, y = s / wd % h, xx = s % wd;
        const int64_t group = cc / cg;
        x.kind = Kind::kConvDgrad;
        x.a = to_host(grad_out[n].narrow(0, group * og, og));     // (og, OH, OW)
        x.b = to_host(w.narrow(0, group * og, og).select(1, cc % cg));  // (og, kh, kw)
        x.g = g;
        x.oy = y;
        x.ox = xx;
      });
    }
    if (grad_weight.defined()) {
      const int64_t per_out = cg * g.kernel_h * g.kernel_w;
      sample_output(*this, op, kernel, "wgrad", grad_weight, [&](int64_t s, Sample& x) {
        const int64_t oo = s / per_out, c_l = s % per_out / (g.kernel_h * g.kernel_w);
        x.kind = Kind::kConvWgrad;
        x.a = to_host(x_in.select(1, oo / og * cg + c_l));  // (N, H, W)
        x.b = to_host(grad_out.select(1, oo));              // (N, OH, OW)
        x.g = g;
        x.ky = s % (g.kernel_h * g.kernel_w) / g.kernel_w;
        x.kx = s % g.kernel_w;
        x.batch = x_in.size(0);
      });
    }
    if (grad_bias.defined()) {
      sample_output(*this, op, kernel + ".grad_bias", "wgrad", grad_bias, [&](int64_t s, Sample& x) {
        x.kind = Kind::kSum;
        x.a = to_host(grad_out.select(1, s).reshape(-1));
      });
    }
  }
}

// cross_entropy_loss(self, target, weight, reduction, ignore_index, label_smoothing) over (N, C) logits
// (or one row of C with a 0-d target), and nll_loss_backward(grad_output, self, target, weight,
// reduction, ignore_index, total_weight), its input gradient: −g/N at each row's target (N the rows the
// mean counts, 1 for a sum; g the arriving gradient, per row for reduction 'none'), sampled among the
// target elements of the rows whose target is not ignore_index (the others are 0, and not sampled).
// Class weights and label smoothing are not evaluated.
void OpObserver::Impl::tap_class_loss(const Frame& f, const at::Tensor& out, const std::string& op, bool backward) {
  using Kind = Sample::Kind;
  const std::vector<c10::IValue>& in = f.inputs;
  const bool forward = f.name == "aten::cross_entropy_loss";
  const size_t self_at = forward ? 0 : 1, target_at = forward ? 1 : 2, weight_at = forward ? 2 : 3;
  const size_t reduction_at = forward ? 3 : 4, ignore_at = forward ? 4 : 5;
  auto skip = [&] { count_unevaluated(op, backward ? "bwd" : "fwd", short_name(f.name), c10::toString(out.scalar_type())); };
  if (in.size() < ignore_at + 1 || tensor_of(in[weight_at]).defined() || !in[reduction_at].isInt() ||
      !in[ignore_at].isInt())
    return skip();
  if (forward && (in.size() < 6 || !in[5].isDouble() || in[5].toDouble() != 0.0)) return skip();
  const at::Tensor self = tensor_of(in[self_at]).detach(), target = tensor_of(in[target_at]).detach();
  const int64_t reduction = in[reduction_at].toInt(), ignore = in[ignore_at].toInt();
  if (!self.defined() || !target.defined() || self.dim() < 1 || self.dim() > 2 || target.dim() != self.dim() - 1 ||
      (forward && reduction == 0))
    return skip();
  const at::Tensor logits = self.reshape({-1, self.size(-1)}), t = target.reshape({-1}).to(at::kCPU);
  const int64_t rows = logits.size(0), classes = logits.size(1);
  if (t.numel() != rows) return skip();
  std::vector<int64_t> kept;
  const int64_t* tp = t.data_ptr<int64_t>();
  for (int64_t r = 0; r < rows; ++r)
    if (tp[r] != ignore) {
      if (tp[r] < 0 || tp[r] >= classes) return skip();
      kept.push_back(r);
    }
  if (kept.empty()) return skip();
  if (forward) {
    const at::Tensor index = at::tensor(kept, at::kLong);  // on the CPU, as t is
    sample_output(*this, op, short_name(f.name), "fwd", out, [&](int64_t, Sample& x) {
      x.kind = Kind::kCrossEntropy;
      x.a = to_host(logits.index_select(0, index.to(logits.device())).reshape(-1));
      x.targets = t.index_select(0, index);
      x.classes = classes;
      x.mean = reduction == 1;
    });
    return;
  }
  const at::Tensor g = tensor_of(in[0]).detach();
  if (!g.defined() || (reduction == 0 ? g.numel() != rows : g.numel() != 1)) return skip();
  const at::Tensor gs = g.reshape({-1});
  const int64_t count = reduction == 1 ? static_cast<int64_t>(kept.size()) : 1;
  // The samples are drawn from the rows' target elements, the only ones with arithmetic in them.
  const at::Tensor flat = out.reshape({rows, classes});
  const int64_t call = next_call(op, "dgrad", short_name(f.name));
  for (int64_t s : sample(op, "dgrad", call, static_cast<int64_t>(kept.size()))) {
    const int64_t r = kept[static_cast<size_t>(s)];
    Sample x;
    x.op = op;
    x.kernel = short_name(f.name);
    x.phase = "dgrad";
    x.call = call;
    x.index = coordinates(r * classes + tp[r], out.dim() == 1 ? std::vector<int64_t>{classes} : out.sizes().vec());
    x.observed = to_host(flat[r][tp[r]]);
    x.kind = Kind::kNllGrad;
    x.a = to_host(gs[reduction == 0 ? r : 0]);
    x.batch = count;
    add(std::move(x));
  }
}

bool OpObserver::Impl::tap_row_op(const Frame& f, const at::Tensor& out, const std::string& op,
                                  const std::string& kernel) {
  using Kind = Sample::Kind;
  const std::vector<c10::IValue>& in = f.inputs;
  const at::Tensor x_in = tensor_of(in[0]).detach();
  if (!x_in.defined() || x_in.sizes() != out.sizes()) return false;
  const std::vector<int64_t> shape = x_in.dim() == 0 ? std::vector<int64_t>{1} : x_in.sizes().vec();
  const int64_t rank = static_cast<int64_t>(shape.size());
  auto product = [&](int64_t from, int64_t to) {
    int64_t p = 1;
    for (int64_t d = from; d < to; ++d) p *= shape[d];
    return p;
  };
  const bool softmax = f.name == "aten::softmax" || f.name == "aten::_softmax";
  if (softmax || f.name == "aten::log_softmax" || f.name == "aten::_log_softmax") {
    // softmax.int(self, int dim, ScalarType? dtype), _softmax(self, int dim, bool half_to_float): the
    // row through each element along dim (negative dims wrapped).
    if (in.size() < 2 || !in[1].isInt()) return false;
    int64_t dim = in[1].toInt();
    if (dim < 0) dim += rank;
    if (dim < 0 || dim >= rank) return false;
    const int64_t size = shape[dim], inner = product(dim + 1, rank);
    const at::Tensor rows = x_in.reshape({-1, size, inner});
    sample_output(*this, op, kernel, "fwd", out, [&](int64_t s, Sample& x) {
      x.kind = Kind::kRow;
      x.fn = softmax ? reference::Op::kSoftmax : reference::Op::kLogSoftmax;
      x.a = to_host(rows[s / (size * inner)].select(1, s % inner));
      x.i = s / inner % size;
    });
    return true;
  }
  // layer_norm(input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps, bool cudnn_enable),
  // native_layer_norm(input, normalized_shape, weight, bias, eps); batch_norm(input, weight, bias,
  // running_mean, running_var, bool training, float momentum, float eps, bool cudnn_enabled),
  // native_batch_norm(the same less cudnn_enabled).
  const bool layer = f.name == "aten::layer_norm" || f.name == "aten::native_layer_norm";
  const size_t w_at = layer ? 2 : 1, eps_at = layer ? 4 : 7;
  if (in.size() <= eps_at || !in[eps_at].isDouble()) return false;
  if (!layer && !(in[5].isBool() && in[5].toBool())) return false;  // eval mode: running statistics
  const at::Tensor w = tensor_of(in[w_at]), b = tensor_of(in[w_at + 1]);
  const at::Tensor wf = w.defined() ? w.detach().reshape(-1) : w, bf = b.defined() ? b.detach().reshape(-1) : b;
  const double eps = in[eps_at].toDouble();
  int64_t group = 0, inner = 1, channels = 1;
  at::Tensor groups;
  if (layer) {
    const std::vector<int64_t> normalized = int_list(in[1]);
    const int64_t k = static_cast<int64_t>(normalized.size());
    if (k < 1 || k > rank) return false;
    group = product(rank - k, rank);
    groups = x_in.reshape({-1, group});
  } else {
    if (rank < 2) return false;
    channels = shape[1];
    inner = product(2, rank);
    groups = x_in.reshape({shape[0], channels, inner}).transpose(0, 1).reshape({channels, -1});
    group = groups.size(1);
  }
  sample_output(*this, op, kernel, "fwd", out, [&](int64_t s, Sample& x) {
    x.kind = Kind::kNorm;
    x.fn = layer ? reference::Op::kLayerNorm : reference::Op::kBatchNorm;
    x.eps = eps;
    // layer norm: row s / group, position s % group, affine parameters by position; batch norm: channel
    // c, position n·inner + the offset within the image, affine parameters by channel.
    const int64_t c = s / inner % channels;
    x.a = to_host(groups[layer ? s / group : c]);
    x.i = layer ? s % group : s / (channels * inner) * inner + s % inner;
    const int64_t p = layer ? s % group : c;
    if (wf.defined()) x.b = to_host(wf[p]);
    if (bf.defined()) x.bias = to_host(bf[p]);
  });
  return true;
}

}  // namespace saddlescope::probes::internal
