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

namespace saddlescope::probes::internal {
namespace {

// Ops whose arithmetic is evaluated (op_observer.h lists what each means).
const std::set<std::string>& evaluable() {
  static const std::set<std::string> ops = {
      "aten::mm",   "aten::addmm", "aten::bmm",     "aten::mul",  "aten::add",     "aten::sub",
      "aten::convolution", "aten::convolution_backward", "aten::relu", "aten::sigmoid", "aten::tanh",
      "aten::exp",  "aten::sum",   "aten::mse_loss", "aten::softmax", "aten::_softmax", "aten::log_softmax",
      "aten::_log_softmax", "aten::layer_norm", "aten::native_layer_norm", "aten::batch_norm",
      "aten::native_batch_norm", "aten::_softmax_backward_data", "aten::_log_softmax_backward_data", "aten::gelu"};
  return ops;
}

// The ops of reference/normalization.h: tapped only where outermost (cross_entropy_loss's log_softmax
// is not, and the loss stays listed whole rather than half measured).
bool is_row_op(const std::string& name) {
  return name == "aten::softmax" || name == "aten::_softmax" || name == "aten::log_softmax" ||
         name == "aten::_log_softmax" || name == "aten::layer_norm" || name == "aten::native_layer_norm" ||
         name == "aten::batch_norm" || name == "aten::native_batch_norm" || name == "aten::_softmax_backward_data" ||
         name == "aten::_log_softmax_backward_data";
}

at::Tensor tensor_of(const c10::IValue& v) { return v.isTensor() ? v.toTensor() : at::Tensor(); }

bool is_floating(const at::Tensor& t) {
  return t.defined() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble);
}

// A parameter, or a view of one.
bool is_weight(const at::Tensor& t) {
  if (!t.defined()) return false;
  const at::TensorBase& base = base_of(t);
  return base.is_leaf() && base.requires_grad();
}

std::vector<int64_t> squeezed(at::IntArrayRef s) {
  std::vector<int64_t> v;
  for (int64_t d : s)
    if (d != 1) v.push_back(d);
  return v;
}

struct Frame {
  std::string name;
  int64_t seq = -1;
  bool backward = false;  // an autograd node's frame (the engine's record or the node's own)
  std::string context;    // backward: the name of the forward op whose node runs
  bool tapped = false;    // evaluated: nothing below it is looked at
  bool covered = false;   // something evaluated ran within it
  bool outermost = false;
  std::vector<c10::IValue> inputs;
  std::string module;     // forward: the op's name less its kernel (a parameter's module, or the caller)
};

thread_local std::vector<Frame> t_stack;
// Set while the callbacks themselves run ops (the samples' gathers and copies): those are not the step's.
thread_local bool t_busy = false;


}  // namespace

struct OpObserver::Impl {
  uint64_t seed;
  int64_t k, step;
  ParameterNames parameters;
  Registration<Impl> registration;

  // A forward op that created an autograd node: its name and its inputs' shapes and kinds.
  struct Forward {
    std::string name;
    std::vector<std::pair<std::vector<int64_t>, bool>> inputs;  // squeezed shape, is a weight
  };
  struct Sample {
    enum class Kind { kDot, kSum, kElementwise, kMse, kConv, kConvWgrad, kConvDgrad, kRow, kNorm, kSoftmaxBwd } kind;
    std::string op, kernel, phase, index;
    int64_t call = 0;
    reference::Op fn = reference::Op::kRelu;
    at::Tensor a, b, bias, observed;  // host copies
    reference::Conv2dGeometry g;
    int64_t oy = 0, ox = 0, ky = 0, kx = 0, batch = 0;
    int64_t i = 0;    // kRow, kNorm, kSoftmaxBwd: the element's position in its row / group `a`
    double eps = 0;   // kNorm; b and bias hold the element's weight and bias (or undefined)
  };

  std::mutex mutex;  // everything below: the callbacks run on every thread
  std::map<int64_t, Forward> forward;
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> calls;  // (op, phase, kernel)
  std::vector<Sample> samples;
  std::vector<UnevaluatedOp> unevaluated;
  std::string error;

  int64_t next_call(const std::string& op, const std::string& phase, const std::string& kernel) {
    std::lock_guard<std::mutex> lock(mutex);
    return calls[{op, phase, kernel}]++;
  }
  std::vector<int64_t> sample(const std::string& op, const std::string& phase, int64_t call, int64_t n) const {
    return sample_indices(op_seed(seed, step, op + "#" + std::to_string(call), phase.c_str()), std::min(k, n), n);
  }
  void add(Sample s) {
    std::lock_guard<std::mutex> lock(mutex);
    samples.push_back(std::move(s));
  }
  void count_unevaluated(const std::string& op, const std::string& phase, const std::string& kernel,
                         const std::string& dtype) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& u : unevaluated)
      if (u.op == op && u.phase == phase && u.kernel == kernel && u.dtype == dtype) {
        ++u.calls;
        return;
      }
    unevaluated.push_back({op, phase, kernel, dtype, 1});
  }
  Forward* find_forward(int64_t seq) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = forward.find(seq);
    return it == forward.end() ? nullptr : &it->second;
  }
  void remember(int64_t seq, const std::string& name, const std::vector<c10::IValue>& inputs) {
    Forward f{name, {}};
    for (const auto& v : inputs)
      if (v.isTensor()) f.inputs.emplace_back(squeezed(v.toTensor().sizes()), is_weight(v.toTensor()));
    std::lock_guard<std::mutex> lock(mutex);
    forward.emplace(seq, std::move(f));
  }

  // The phase of a backward op's output: the gradient of exactly one of the forward op's inputs.
  static std::string phase_of(const Forward* f, const at::Tensor& out) {
    if (!f) return "bwd";
    const std::vector<int64_t> s = squeezed(out.sizes());
    const std::vector<int64_t> t(s.rbegin(), s.rend());  // a matrix's gradient may come transposed
    int matches = 0;
    bool weight = false;
    for (const auto& [shape, w] : f->inputs)
      if (shape == s || (s.size() == 2 && shape == t)) {
        ++matches;
        weight = w;
      }
    return matches == 1 ? (weight ? "wgrad" : "dgrad") : "bwd";
  }

  // Samples of tapped op `f`, named `op`; `fwd` is the forward op of the autograd node it runs in.
  void tap(const Frame& f, const std::vector<c10::IValue>& outputs, const std::string& op, bool backward,
           const Forward* fwd);
  // softmax, log_softmax, layer_norm, batch_norm (training): false when the arguments are not ones the
  // reference takes (batch norm in eval mode, a dim out of range).
  bool tap_row_op(const Frame& f, const at::Tensor& out, const std::string& op, const std::string& kernel);
};

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
  // Every tensor operand floating and of the output's dtype.
  for (const auto& v : in)
    if (v.isTensor() && v.toTensor().defined() && (!is_floating(v.toTensor()) || !out.defined() ||
                                                   v.toTensor().scalar_type() != out.scalar_type())) {
      if (f.name != "aten::convolution_backward") return skip();
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

namespace {

std::vector<c10::IValue> results(const at::RecordFunction& fn) { return own_values(fn, true); }

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (t_busy) return nullptr;
  std::vector<Frame>& stack = t_stack;
  Frame f;
  f.name = fn.name();
  f.seq = fn.seqNr();
  OpObserver::Impl* m = Registration<OpObserver::Impl>::active();
  const bool inside_tapped = std::any_of(stack.begin(), stack.end(), [](const Frame& x) { return x.tapped; });
  if (!m || inside_tapped) {
    stack.push_back(std::move(f));
    return nullptr;
  }
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    f.backward = true;
    const OpObserver::Impl::Forward* fwd = m->find_forward(f.seq);
    f.context = fwd ? fwd->name : f.name;
    if (!stack.empty() && stack.back().backward) stack.back().context = f.context, stack.back().seq = f.seq;
  } else if (starts_with(f.name, kEngine)) {
    f.backward = true;
    f.context = f.name.substr(sizeof(kEngine) - 1);
  } else {
    f.outermost = stack.empty() || stack.back().backward;
    f.tapped = evaluable().count(f.name) > 0 && (f.outermost || !is_row_op(f.name));
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
    if (!backward && f.seq >= 0 && made_node) m->remember(f.seq, name, f.inputs);
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
