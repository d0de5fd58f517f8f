#include "saddlescope/trainer/fused.h"

#include <atomic>

#include <ATen/Parallel.h>
#include <c10/core/DeviceGuard.h>
#include <torch/torch.h>

#include "saddlescope/base/status.h"
#include "saddlescope/gpu/graph.h"
#include "saddlescope/kernels/fused.h"

namespace saddlescope::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

template <typename T>
T* ptr(const torch::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

// Runs the op over `n` elements: on a CUDA tensor's current stream, or split over intra-op threads.
template <typename Args>
void launch(const torch::Tensor& like, int64_t n, const Args& args, void (*cpu)(const Args&, int64_t, int64_t),
            void (*cuda)(const Args&, void*)) {
  if (like.is_cuda()) {
    c10::DeviceGuard guard(like.device());
    cuda(args, gpu::current_cuda_stream(like.device()));
  } else {
    at::parallel_for(0, n, 4096, [&](int64_t begin, int64_t end) { cpu(args, begin, end); });
  }
}

// T for a float32 or float64 tensor; other dtypes are refused.
template <typename Fn>
void dispatch(const torch::Tensor& t, Fn&& fn) {
  SADDLESCOPE_CHECK(t.scalar_type() == torch::kFloat32 || t.scalar_type() == torch::kFloat64);
  if (t.scalar_type() == torch::kFloat32) fn(float{});
  else fn(double{});
}

// An op's memory layout, from its first input: NCHW, or NHWC (channels last) when that input is laid
// out so. The kernels see the elements as `outer` rows of `inner` contiguous ones: (B, U·H·W) in NCHW,
// (B·H·W, U) in NHWC, with a gate or half of E the `inner` block after the previous one (fused.h's
// layouts, per row).
struct Layout {
  torch::MemoryFormat format = torch::MemoryFormat::Contiguous;
  int64_t outer = 0, inner = 0;
  int64_t run = 1;  // elements of one channel in a row: P (NCHW) or 1 (NHWC)
};
Layout layout_of(const torch::Tensor& first, int64_t units) {
  // A one-channel tensor's strides still say which it is (LibTorch: (HW, 1, W, 1) is channels last),
  // and an op with one unit has several blocks per element (the cell's four gates, E's two halves).
  const bool nhwc = first.suggest_memory_format() == torch::MemoryFormat::ChannelsLast;
  const int64_t b = first.size(0), pixels = first.size(2) * first.size(3);
  if (nhwc) return {torch::MemoryFormat::ChannelsLast, b * pixels, units, 1};
  return {torch::MemoryFormat::Contiguous, b, units * pixels, pixels};
}

// `t` in `layout`, for a read as rows: in NCHW a frame of a (B, T, U, H, W) sequence is read in place
// (its batch rows are contiguous, `t.stride(0)` apart); anything else becomes a copy in the layout.
// Returns the tensor and the stride between its rows.
std::pair<torch::Tensor, int64_t> as_rows(const torch::Tensor& t, const Layout& layout) {
  if (layout.format == torch::MemoryFormat::Contiguous && t.size(0) > 0 && t[0].is_contiguous() &&
      t.stride(0) >= t[0].numel())
    return {t, t.stride(0)};
  return {t.contiguous(layout.format), layout.inner};
}

torch::Tensor empty_in(torch::IntArrayRef sizes, const torch::Tensor& like, const Layout& layout,
                       const FrameSlot& slot = {}) {
  return slot.get(sizes, like, layout.format);
}

// A slot kept for the backward in an autograd context's saved data.
void save_slot(AutogradContext* ctx, const std::string& key, const FrameSlot& slot) {
  ctx->saved_data[key + ".buffer"] = slot.buffer;
  ctx->saved_data[key + ".index"] = slot.index;
  ctx->saved_data[key + ".frames"] = slot.frames;
}
FrameSlot load_slot(AutogradContext* ctx, const std::string& key) {
  return {ctx->saved_data[key + ".buffer"].toTensorList(), ctx->saved_data[key + ".index"].toInt(),
          ctx->saved_data[key + ".frames"].toInt()};
}

torch::Tensor in_layout(const torch::Tensor& t, const Layout& layout) {
  return t.defined() ? t.contiguous(layout.format) : t;
}

torch::Tensor zeros_if_undefined(const torch::Tensor& g, const torch::Tensor& like) {
  return g.defined() ? g : torch::zeros_like(like);
}

// A convolution's bias for an op that adds it to the convolution's output y (B, C, H, W) as it reads:
// checked, contiguous; undefined for none.
torch::Tensor bias_for(const c10::optional<torch::Tensor>& bias, const torch::Tensor& y) {
  if (!bias) return torch::Tensor();
  SADDLESCOPE_CHECK(bias->dim() == 1 && bias->size(0) == y.size(1) && bias->scalar_type() == y.scalar_type() &&
                    bias->device() == y.device());
  return bias->contiguous();
}

struct Cell : public torch::autograd::Function<Cell> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& pre_in, const torch::Tensor& c_prev_in,
                               const c10::optional<torch::Tensor>& bias_in, const FrameSlot& h_slot,
                               const FrameSlot& pre_grad_slot) {
    const int64_t units = c_prev_in.size(1);
    SADDLESCOPE_CHECK(pre_in.dim() == 4 && c_prev_in.dim() == 4 && pre_in.size(1) == 4 * units &&
                      c_prev_in.size(0) == pre_in.size(0) && c_prev_in.size(2) == pre_in.size(2) &&
                      c_prev_in.size(3) == pre_in.size(3) && pre_in.scalar_type() == c_prev_in.scalar_type() &&
                      pre_in.device() == c_prev_in.device());
    const Layout layout = layout_of(pre_in, units);
    torch::Tensor pre = in_layout(pre_in, layout), c_prev = in_layout(c_prev_in, layout),
                  bias = bias_for(bias_in, pre_in);
    torch::Tensor act = empty_in(pre.sizes(), pre, layout), c = empty_in(c_prev.sizes(), pre, layout),
                  h = empty_in(c_prev.sizes(), pre, layout, h_slot), tc = empty_in(c_prev.sizes(), pre, layout);
    dispatch(pre, [&](auto zero) {
      using T = decltype(zero);
      kernels::CellArgs<T> a;
      a.batch = layout.outer;
      a.units_pixels = layout.inner;
      a.run = layout.run;
      a.pre = ptr<T>(pre);
      a.bias = ptr<T>(bias);
      a.c_prev = ptr<T>(c_prev);
      a.act = ptr<T>(act);
      a.c = ptr<T>(c);
      a.h = ptr<T>(h);
      a.tc = ptr<T>(tc);
      launch(pre, c.numel(), a, &kernels::cell_forward_cpu<T>, &kernels::cell_forward_cuda<T>);
    });
    ctx->set_materialize_grads(false);
    ctx->mark_non_differentiable({act, tc});
    ctx->save_for_backward({pre, c_prev, act, tc, bias});
    save_slot(ctx, "dpre", pre_grad_slot);
    return {c, h, act, tc};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &pre = saved[0], &c_prev = saved[1], &act = saved[2], &tc = saved[3], &bias = saved[4];
    torch::Tensor dc = grads[0], dh = grads[1];
    // The bias's gradient is its convolution's to form (FrameConvolution): none here.
    if (!dc.defined() && !dh.defined()) return variable_list(5);
    if (torch::GradMode::is_enabled()) {
      variable_list d = differentiable(plus_bias(pre, bias), c_prev, dh, dc);
      return {d[0], d[1], torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
    const Layout layout = layout_of(pre, c_prev.size(1));  // the forward's: `pre` was saved in it
    dc = in_layout(dc, layout);
    dh = in_layout(dh, layout);
    torch::Tensor dpre = empty_in(pre.sizes(), pre, layout, load_slot(ctx, "dpre"));
    torch::Tensor dc_prev = ctx->needs_input_grad(1) ? empty_in(c_prev.sizes(), pre, layout) : torch::Tensor();
    dispatch(pre, [&](auto zero) {
      using T = decltype(zero);
      kernels::CellArgs<T> a;
      a.batch = layout.outer;
      a.units_pixels = layout.inner;
      a.c_prev = ptr<T>(c_prev);
      a.act = ptr<T>(act);
      a.tc = ptr<T>(tc);
      a.dh = ptr<T>(dh);
      a.dc = ptr<T>(dc);
      a.dpre = ptr<T>(dpre);
      a.dc_prev = ptr<T>(dc_prev);
      launch(pre, c_prev.numel(), a, &kernels::cell_backward_cpu<T>, &kernels::cell_backward_cuda<T>);
    });
    return {dpre, dc_prev, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }

  // The backward in LibTorch ops from the inputs: differentiable, for double backward.
  static variable_list differentiable(const torch::Tensor& pre, const torch::Tensor& c_prev, torch::Tensor dh,
                                      torch::Tensor dc) {
    const int64_t u = c_prev.size(1);
    auto i = torch::sigmoid(pre.narrow(1, 0, u)), f = torch::sigmoid(pre.narrow(1, u, u)),
         o = torch::sigmoid(pre.narrow(1, 2 * u, u)), g = torch::tanh(pre.narrow(1, 3 * u, u));
    auto tc = torch::tanh(f * c_prev + i * g);
    dh = zeros_if_undefined(dh, c_prev);
    auto dc_total = zeros_if_undefined(dc, c_prev) + dh * o * (1 - tc * tc);
    auto dpre = torch::cat({dc_total * g * i * (1 - i), dc_total * c_prev * f * (1 - f), dh * tc * o * (1 - o),
                            dc_total * i * (1 - g * g)}, 1);
    return {dpre, dc_total * f};
  }
};

struct Error : public torch::autograd::Function<Error> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& y_in, const torch::Tensor& a_in,
                               double pixel_max, const c10::optional<torch::Tensor>& bias_in, const FrameSlot& e_slot,
                               const FrameSlot& dy_slot) {
    SADDLESCOPE_CHECK(y_in.dim() == 4 && y_in.sizes() == a_in.sizes() && y_in.scalar_type() == a_in.scalar_type() &&
                      y_in.device() == a_in.device());
    const Layout layout = layout_of(y_in, y_in.size(1));
    torch::Tensor y = in_layout(y_in, layout), bias = bias_for(bias_in, y_in);
    auto [a, a_stride] = as_rows(a_in, layout);
    auto s = y.sizes();
    torch::Tensor e = empty_in({s[0], 2 * s[1], s[2], s[3]}, y, layout, e_slot), ahat = empty_in(s, y, layout);
    dispatch(y, [&](auto zero) {
      using T = decltype(zero);
      kernels::ErrorArgs<T> args;
      args.batch = layout.outer;
      args.units_pixels = layout.inner;
      args.run = layout.run;
      args.pixel_max = static_cast<T>(pixel_max);
      args.y = ptr<T>(y);
      args.bias = ptr<T>(bias);
      args.a = ptr<T>(a);
      args.a_batch_stride = a_stride;
      args.e = ptr<T>(e);
      args.ahat = ptr<T>(ahat);
      launch(y, y.numel(), args, &kernels::error_forward_cpu<T>, &kernels::error_forward_cuda<T>);
    });
    ctx->set_materialize_grads(false);
    ctx->saved_data["pixel_max"] = pixel_max;
    save_slot(ctx, "dy", dy_slot);
    ctx->save_for_backward({y, a, bias});
    return {e, ahat};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &y = saved[0], &a = saved[1], &bias = saved[2];
    const double pixel_max = ctx->saved_data["pixel_max"].toDouble();
    torch::Tensor de = grads[0], dahat = grads[1];
    if (!de.defined() && !dahat.defined()) return variable_list(6);
    const Layout layout = layout_of(y, y.size(1));
    de = de.defined() ? in_layout(de, layout) : torch::zeros({y.size(0), 2 * y.size(1), y.size(2), y.size(3)}, y.options());
    if (torch::GradMode::is_enabled()) {  // differentiable in de and dahat; the masks are constants
      auto relu_y = torch::relu(plus_bias(y, bias)), d = a - relu_y.clamp_max(pixel_max);
      const int64_t u = y.size(1);
      auto dd = de.narrow(1, 0, u) * (d > 0) - de.narrow(1, u, u) * (d < 0);
      auto pass = torch::logical_and(relu_y > 0, relu_y <= pixel_max);
      auto dy = (zeros_if_undefined(dahat, y) - dd) * pass;
      return {dy, ctx->needs_input_grad(1) ? dd : torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(),
              torch::Tensor()};
    }
    dahat = in_layout(dahat, layout);
    auto [rows, a_stride] = as_rows(a, layout);
    torch::Tensor dy = empty_in(y.sizes(), y, layout, load_slot(ctx, "dy")),
                  da = ctx->needs_input_grad(1) ? empty_in(a.sizes(), y, layout) : torch::Tensor();
    dispatch(y, [&](auto zero) {
      using T = decltype(zero);
      kernels::ErrorArgs<T> args;
      args.batch = layout.outer;
      args.units_pixels = layout.inner;
      args.run = layout.run;
      args.pixel_max = static_cast<T>(pixel_max);
      args.y = ptr<T>(y);
      args.bias = ptr<T>(bias);
      args.a = ptr<T>(rows);
      args.a_batch_stride = a_stride;
      args.de = ptr<T>(de);
      args.dahat = ptr<T>(dahat);
      args.dy = ptr<T>(dy);
      args.da = ptr<T>(da);
      launch(y, y.numel(), args, &kernels::error_backward_cpu<T>, &kernels::error_backward_cuda<T>);
    });
    return {dy, da, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

struct Pool : public torch::autograd::Function<Pool> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& y_in,
                               const c10::optional<torch::Tensor>& bias_in, const FrameSlot& dy_slot) {
    SADDLESCOPE_CHECK(y_in.dim() == 4 && y_in.size(2) % 2 == 0 && y_in.size(3) % 2 == 0);
    const Layout layout = layout_of(y_in, y_in.size(1));
    torch::Tensor y = in_layout(y_in, layout), bias = bias_for(bias_in, y_in);
    torch::Tensor out = empty_in({y.size(0), y.size(1), y.size(2) / 2, y.size(3) / 2}, y, layout);
    run(y, bias, layout, out, torch::Tensor(), torch::Tensor());
    ctx->set_materialize_grads(false);
    save_slot(ctx, "dy", dy_slot);
    ctx->save_for_backward({y, bias});
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &y = saved[0], &bias = saved[1];
    const torch::Tensor& dout = grads[0];
    if (!dout.defined()) return variable_list(3);
    if (torch::GradMode::is_enabled()) {  // differentiable in dout; which input won is a constant
      auto yb = plus_bias(y, bias).detach(), r = torch::relu(yb);
      auto winners = std::get<1>(at::max_pool2d_with_indices(r, {2, 2}, {2, 2}));
      return {at::max_pool2d_with_indices_backward(dout, r, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, winners) * (yb > 0),
              torch::Tensor(), torch::Tensor()};
    }
    const Layout layout = layout_of(y, y.size(1));  // the forward's: `y` was saved in it
    torch::Tensor dy = empty_in(y.sizes(), y, layout, load_slot(ctx, "dy"));
    run(y, bias, layout, torch::Tensor(), in_layout(dout, layout), dy);
    return {dy, torch::Tensor(), torch::Tensor()};
  }

  // The forward (out given) or the backward (dout, dy given) over out's elements.
  static void run(const torch::Tensor& y, const torch::Tensor& bias, const Layout& layout, const torch::Tensor& out,
                  const torch::Tensor& dout, const torch::Tensor& dy) {
    dispatch(y, [&](auto zero) {
      using T = decltype(zero);
      kernels::PoolArgs<T> a;
      a.batch = y.size(0);
      a.units = y.size(1);
      a.out_height = y.size(2) / 2;
      a.out_width = y.size(3) / 2;
      a.nhwc = layout.format == torch::MemoryFormat::ChannelsLast;
      a.y = ptr<T>(y);
      a.bias = ptr<T>(bias);
      a.out = ptr<T>(out);
      a.dout = ptr<T>(dout);
      a.dy = ptr<T>(dy);
      const int64_t n = y.numel() / 4;
      if (out.defined()) launch(y, n, a, &kernels::pool_forward_cpu<T>, &kernels::pool_forward_cuda<T>);
      else launch(y, n, a, &kernels::pool_backward_cpu<T>, &kernels::pool_backward_cuda<T>);
    });
  }
};

// assemble_channels: cat's forward into the slot, and cat's backward (a view of each part's channels).
struct Assemble : public torch::autograd::Function<Assemble> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& e, const torch::Tensor& r,
                               const c10::optional<torch::Tensor>& above, const FrameSlot& slot) {
    std::vector<torch::Tensor> parts = {e, r};
    if (above) parts.push_back(*above);
    std::vector<int64_t> sizes = e.sizes().vec();
    sizes[1] = 0;
    for (const auto& p : parts) {
      SADDLESCOPE_CHECK(p.dim() == 4 && p.size(0) == e.size(0) && p.size(2) == e.size(2) && p.size(3) == e.size(3));
      sizes[1] += p.size(1);
    }
    // The slot's layout is e's, the model's. A frame in another layout gets a tensor of its own, and
    // the weight gradient concatenates: slower, not wrong (Fused.PredNetReadsEveryFrameInPlace).
    torch::Tensor z = slot.get(sizes, e, e.suggest_memory_format());
    at::cat_out(z, parts, 1);
    ctx->saved_data["channels"] = std::vector<int64_t>{e.size(1), r.size(1), above ? above->size(1) : 0};
    return {z};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::vector<int64_t> c = ctx->saved_data["channels"].toIntVector();
    const torch::Tensor& dz = grads[0];
    if (!dz.defined()) return variable_list(4);
    return {dz.narrow(1, 0, c[0]), dz.narrow(1, c[0], c[1]), c[2] ? dz.narrow(1, c[0] + c[1], c[2]) : torch::Tensor(),
            torch::Tensor()};
  }
};

// A stride-1 convolution with "same" padding: LibTorch's forward and backward ops.
torch::Tensor convolve(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  const int64_t p = w.size(2) / 2;
  return at::convolution(x, w, b, {1, 1}, {p, p}, {1, 1}, false, {0, 0}, 1);
}
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> convolve_backward(const torch::Tensor& dy,
                                                                       const torch::Tensor& x,
                                                                       const torch::Tensor& w,
                                                                       std::array<bool, 3> mask) {
  const int64_t p = w.size(2) / 2;
  return at::convolution_backward(dy, x, w, c10::IntArrayRef{w.size(0)}, {1, 1}, {p, p}, {1, 1}, false, {0, 0}, 1, mask);
}

// Σ of dy (N, C, H, W) over N, H and W: a bias gradient. In channels-last memory dy is an (N·H·W, C)
// matrix, and its column sums as a matrix-vector product (cuBLAS's GEMV) took the bias gradients of a
// batch-16 PredNet step from 0.64 to 0.17 ms of kernel time on the H100, against LibTorch's reduction
// (docs/benchmarks.md). Another summation order: other bits than the reduction's.
torch::Tensor channel_sums(const torch::Tensor& dy) {
  if (!dy.is_contiguous(torch::MemoryFormat::ChannelsLast)) return dy.sum({0, 2, 3});
  const torch::Tensor rows = dy.permute({0, 2, 3, 1}).reshape({-1, dy.size(1)});  // a view
  return at::mv(rows.t(), torch::ones({rows.size(0)}, rows.options()));
}

// One frame's convolution of a FrameConvolution: its backward forms the input's gradient and leaves
// (input, output gradient) in `frames` for Gather, which forms the weights' over all frames at once.
// Without `add_bias` the output lacks b, which the op that reads it adds; b's gradient is this node's
// (or Gather's) all the same.
struct FrameConv : public torch::autograd::Function<FrameConv> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               const torch::Tensor& b, c10::List<torch::Tensor> frames, bool add_bias) {
    ctx->saved_data["frames"] = frames;
    ctx->save_for_backward({x, w});
    return {convolve(x, w, add_bias ? b : torch::Tensor())};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &w = saved[1], &dy = grads[0];
    if (torch::GradMode::is_enabled()) {  // create_graph: per frame, differentiable
      auto [dx, dw, db] = convolve_backward(dy, x, w, {ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                                                       ctx->needs_input_grad(2)});
      return {dx, dw, db, torch::Tensor(), torch::Tensor()};
    }
    torch::Tensor dx;
    if (ctx->needs_input_grad(0)) dx = std::get<0>(convolve_backward(dy, x, w, {true, false, false}));
    if (ctx->needs_input_grad(1) || ctx->needs_input_grad(2)) {
      // Detached: the list must not hold the graph (x's history leads back to this node).
      auto frames = ctx->saved_data["frames"].toTensorList();
      frames.push_back(x.detach());
      frames.push_back(dy);
    }
    return {dx, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// The weight and bias as they enter the frames' convolutions: the identity forward; the backward, which
// runs once every frame's backward has, adds their deferred weight and bias gradients, formed at once.
struct Gather : public torch::autograd::Function<Gather> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& w, const torch::Tensor& b,
                               c10::List<torch::Tensor> frames) {
    ctx->set_materialize_grads(false);
    ctx->saved_data["frames"] = frames;
    ctx->save_for_backward({w});
    return {w, b};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    torch::Tensor dw = grads[0], db = grads[1];
    auto frames = ctx->saved_data["frames"].toTensorList();
    if (!frames.empty()) {
      std::vector<torch::Tensor> x, dy;
      for (size_t i = 0; i < frames.size(); i += 2) {
        x.push_back(frames.get(i));
        dy.push_back(frames.get(i + 1));
      }
      frames.clear();
      const torch::Tensor w = ctx->get_saved_variables()[0];
      const torch::Tensor all_dy = join_frames(dy);
      const torch::Tensor frames_dw = std::get<1>(convolve_backward(all_dy, join_frames(x), w, {false, true, false}));
      const torch::Tensor frames_db = channel_sums(all_dy);
      dw = dw.defined() ? dw + frames_dw : frames_dw;
      db = db.defined() ? db + frames_db : frames_db;
    }
    return {dw, db, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor FrameSlot::get(torch::IntArrayRef sizes, const torch::Tensor& like, torch::MemoryFormat format) const {
  const auto options = like.options().memory_format(format);
  if (!defined() || sizes.empty()) return torch::empty(sizes, options);
  SADDLESCOPE_CHECK(index >= 0 && index < frames);  // set_ below must stay inside the buffer
  std::vector<int64_t> all = sizes.vec();
  all[0] *= frames;
  c10::List<torch::Tensor> shared = buffer;  // a handle on the same list
  if (shared.empty()) shared.push_back(torch::empty(all, options));
  const torch::Tensor whole = shared.get(0);
  if (whole.sizes() != c10::IntArrayRef(all) || whole.scalar_type() != like.scalar_type() ||
      whole.device() != like.device() || !whole.is_contiguous(format))
    return torch::empty(sizes, options);
  return torch::empty({0}, like.options())
      .set_(whole.storage(), whole.storage_offset() + index * sizes[0] * whole.stride(0), sizes, whole.strides());
}

namespace {
std::atomic<int64_t> concatenated{0};
}  // namespace

int64_t frames_concatenated() { return concatenated.load(); }

torch::Tensor join_frames(const std::vector<torch::Tensor>& parts) {
  SADDLESCOPE_CHECK(!parts.empty());
  const torch::Tensor& first = parts[0];
  const int64_t step = first.dim() > 0 ? first.size(0) * first.stride(0) : 0;  // elements per part
  bool adjacent = first.dim() > 0 && first.numel() > 0 && first.is_non_overlapping_and_dense() && step == first.numel();
  for (size_t i = 1; adjacent && i < parts.size(); ++i) {
    const torch::Tensor& p = parts[i];
    adjacent = p.sizes() == first.sizes() && p.strides() == first.strides() && p.dtype() == first.dtype() &&
               p.storage().unsafeGetStorageImpl() == first.storage().unsafeGetStorageImpl() &&
               p.storage_offset() == first.storage_offset() + static_cast<int64_t>(i) * step;
  }
  if (!adjacent) {
    ++concatenated;
    return torch::cat(parts);
  }
  std::vector<int64_t> sizes = first.sizes().vec();
  sizes[0] *= static_cast<int64_t>(parts.size());
  return first.as_strided(sizes, first.strides());
}

FrameConvolution::FrameConvolution(const torch::Tensor& weight, const torch::Tensor& bias, bool batched,
                                   int64_t frames)
    : weight_(weight), bias_(bias), frames_in_sequence_(batched ? frames : 0) {
  SADDLESCOPE_CHECK(weight.dim() == 4 && weight.size(2) % 2 == 1 && weight.size(2) == weight.size(3) &&
                    bias.dim() == 1 && bias.size(0) == weight.size(0));
  if (!batched) return;
  variable_list seen = Gather::apply(weight, bias, frames_);
  gathered_weight_ = seen[0];
  gathered_bias_ = seen[1];
}

torch::Tensor FrameConvolution::operator()(const torch::Tensor& x) const { return convolve(x, true); }

torch::Tensor FrameConvolution::without_bias(const torch::Tensor& x) const {
  SADDLESCOPE_CHECK(gathered_weight_.defined());  // unbatched, the bias would get no gradient
  return convolve(x, false);
}

torch::Tensor FrameConvolution::convolve(const torch::Tensor& x, bool add_bias) const {
  if (!gathered_weight_.defined()) return torch::conv2d(x, weight_, add_bias ? bias_ : torch::Tensor(), 1, padding());
  return FrameConv::apply(x, gathered_weight_, gathered_bias_, frames_, add_bias)[0];
}

FrameSlot FrameConvolution::slot(const c10::List<torch::Tensor>& buffer, int64_t t) const {
  if (frames_in_sequence_ == 0) return {};
  SADDLESCOPE_CHECK(t >= 0 && t < frames_in_sequence_);
  return {buffer, frames_in_sequence_ - 1 - t, frames_in_sequence_};  // backward order: last frame first
}

torch::Tensor plus_bias(const torch::Tensor& y, const torch::Tensor& bias) {
  return bias.defined() ? y + bias.view({1, -1, 1, 1}) : y;
}

namespace {
c10::optional<torch::Tensor> optional(const torch::Tensor& t) {
  return t.defined() ? c10::optional<torch::Tensor>(t) : c10::nullopt;
}
}  // namespace

FusedCell fused_lstm_cell(const torch::Tensor& pre, const torch::Tensor& c_prev, const torch::Tensor& bias,
                          const FrameSlot& h_slot, const FrameSlot& pre_grad_slot) {
  variable_list out = Cell::apply(pre, c_prev, optional(bias), h_slot, pre_grad_slot);
  return {out[0], out[1], out[2], out[3]};
}

FusedError fused_error_units(const torch::Tensor& y, const torch::Tensor& a, double pixel_max,
                             const torch::Tensor& bias, const FrameSlot& e_slot, const FrameSlot& y_grad_slot) {
  variable_list out = Error::apply(y, a, pixel_max, optional(bias), e_slot, y_grad_slot);
  return {out[0], out[1]};
}

torch::Tensor fused_relu_pool(const torch::Tensor& y, const torch::Tensor& bias, const FrameSlot& y_grad_slot) {
  return Pool::apply(y, optional(bias), y_grad_slot)[0];
}

torch::Tensor assemble_channels(const torch::Tensor& e, const torch::Tensor& r, const torch::Tensor& above,
                                const FrameSlot& slot) {
  return Assemble::apply(e, r, optional(above), slot)[0];
}

void fused_adam(const torch::Tensor& param, const torch::Tensor& m, const torch::Tensor& v, const torch::Tensor& lr,
                const torch::Tensor& beta1_power, const torch::Tensor& beta2_power, double beta1, double beta2,
                double eps) {
  const torch::Tensor& g = param.grad();
  SADDLESCOPE_CHECK(g.defined() && param.is_contiguous() && g.is_contiguous() && m.is_contiguous() &&
                    v.is_contiguous() && g.sizes() == param.sizes() && m.sizes() == param.sizes() &&
                    v.sizes() == param.sizes() && lr.scalar_type() == torch::kFloat64);
  dispatch(param, [&](auto zero) {
    using T = decltype(zero);
    kernels::AdamArgs<T> a;
    a.n = param.numel();
    a.p = ptr<T>(param);
    a.g = ptr<T>(g);
    a.m = ptr<T>(m);
    a.v = ptr<T>(v);
    a.lr = ptr<double>(lr);
    a.beta1_power = ptr<double>(beta1_power);
    a.beta2_power = ptr<double>(beta2_power);
    a.beta1 = beta1;
    a.beta2 = beta2;
    a.eps = eps;
    launch(param, a.n, a, &kernels::adam_cpu<T>, &kernels::adam_cuda<T>);
  });
}

}  // namespace saddlescope::trainer
