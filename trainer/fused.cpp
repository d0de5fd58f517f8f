#include "saddlescope/trainer/fused.h"

#include <limits>

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

// `t` itself when each batch row is contiguous (a frame of a sequence), else a contiguous copy.
torch::Tensor rows_contiguous(const torch::Tensor& t) {
  return t.size(0) > 0 && t[0].is_contiguous() && t.stride(0) >= t[0].numel() ? t : t.contiguous();
}

torch::Tensor zeros_if_undefined(const torch::Tensor& g, const torch::Tensor& like) {
  return g.defined() ? g : torch::zeros_like(like);
}

struct Cell : public torch::autograd::Function<Cell> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& pre_in, const torch::Tensor& c_prev_in) {
    torch::Tensor pre = pre_in.contiguous(), c_prev = c_prev_in.contiguous();
    const int64_t units = c_prev.size(1);
    SADDLESCOPE_CHECK(pre.dim() == 4 && pre.size(1) == 4 * units && c_prev.size(0) == pre.size(0) &&
                      c_prev.size(2) == pre.size(2) && c_prev.size(3) == pre.size(3) &&
                      pre.scalar_type() == c_prev.scalar_type() && pre.device() == c_prev.device());
    torch::Tensor act = torch::empty_like(pre), c = torch::empty_like(c_prev), h = torch::empty_like(c_prev),
                  tc = torch::empty_like(c_prev);
    dispatch(pre, [&](auto zero) {
      using T = decltype(zero);
      kernels::CellArgs<T> a;
      a.batch = pre.size(0);
      a.units_pixels = c_prev[0].numel();
      a.pre = ptr<T>(pre);
      a.c_prev = ptr<T>(c_prev);
      a.act = ptr<T>(act);
      a.c = ptr<T>(c);
      a.h = ptr<T>(h);
      a.tc = ptr<T>(tc);
      launch(pre, c.numel(), a, &kernels::cell_forward_cpu<T>, &kernels::cell_forward_cuda<T>);
    });
    ctx->set_materialize_grads(false);
    ctx->mark_non_differentiable({act, tc});
    ctx->save_for_backward({pre, c_prev, act, tc});
    return {c, h, act, tc};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &pre = saved[0], &c_prev = saved[1], &act = saved[2], &tc = saved[3];
    torch::Tensor dc = grads[0], dh = grads[1];
    if (!dc.defined() && !dh.defined()) return {torch::Tensor(), torch::Tensor()};
    if (torch::GradMode::is_enabled()) return differentiable(pre, c_prev, dh, dc);
    dc = dc.defined() ? dc.contiguous() : dc;
    dh = dh.defined() ? dh.contiguous() : dh;
    torch::Tensor dpre = torch::empty_like(pre);
    torch::Tensor dc_prev = ctx->needs_input_grad(1) ? torch::empty_like(c_prev) : torch::Tensor();
    dispatch(pre, [&](auto zero) {
      using T = decltype(zero);
      kernels::CellArgs<T> a;
      a.batch = pre.size(0);
      a.units_pixels = c_prev[0].numel();
      a.c_prev = ptr<T>(c_prev);
      a.act = ptr<T>(act);
      a.tc = ptr<T>(tc);
      a.dh = ptr<T>(dh);
      a.dc = ptr<T>(dc);
      a.dpre = ptr<T>(dpre);
      a.dc_prev = ptr<T>(dc_prev);
      launch(pre, c_prev.numel(), a, &kernels::cell_backward_cpu<T>, &kernels::cell_backward_cuda<T>);
    });
    return {dpre, dc_prev};
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
                               double pixel_max) {
    torch::Tensor y = y_in.contiguous(), a = rows_contiguous(a_in);
    SADDLESCOPE_CHECK(y.dim() == 4 && y.sizes() == a.sizes() && y.scalar_type() == a.scalar_type() &&
                      y.device() == a.device());
    auto s = y.sizes();
    torch::Tensor e = torch::empty({s[0], 2 * s[1], s[2], s[3]}, y.options()), ahat = torch::empty_like(y);
    dispatch(y, [&](auto zero) {
      using T = decltype(zero);
      kernels::ErrorArgs<T> args;
      args.batch = s[0];
      args.units_pixels = y[0].numel();
      args.pixel_max = static_cast<T>(pixel_max);
      args.y = ptr<T>(y);
      args.a = ptr<T>(a);
      args.a_batch_stride = a.stride(0);
      args.e = ptr<T>(e);
      args.ahat = ptr<T>(ahat);
      launch(y, y.numel(), args, &kernels::error_forward_cpu<T>, &kernels::error_forward_cuda<T>);
    });
    ctx->set_materialize_grads(false);
    ctx->saved_data["pixel_max"] = pixel_max;
    ctx->save_for_backward({y, a});
    return {e, ahat};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &y = saved[0], &a = saved[1];
    const double pixel_max = ctx->saved_data["pixel_max"].toDouble();
    torch::Tensor de = grads[0], dahat = grads[1];
    if (!de.defined() && !dahat.defined()) return {torch::Tensor(), torch::Tensor(), torch::Tensor()};
    de = de.defined() ? de.contiguous() : torch::zeros({y.size(0), 2 * y.size(1), y.size(2), y.size(3)}, y.options());
    if (torch::GradMode::is_enabled()) {  // differentiable in de and dahat; the masks are constants
      auto relu_y = torch::relu(y), d = a - relu_y.clamp_max(pixel_max);
      const int64_t u = y.size(1);
      auto dd = de.narrow(1, 0, u) * (d > 0) - de.narrow(1, u, u) * (d < 0);
      auto pass = torch::logical_and(relu_y > 0, relu_y <= pixel_max);
      auto dy = (zeros_if_undefined(dahat, y) - dd) * pass;
      return {dy, ctx->needs_input_grad(1) ? dd : torch::Tensor(), torch::Tensor()};
    }
    dahat = dahat.defined() ? dahat.contiguous() : dahat;
    torch::Tensor dy = torch::empty_like(y), da = ctx->needs_input_grad(1) ? torch::empty(a.sizes(), a.options()) : torch::Tensor();
    dispatch(y, [&](auto zero) {
      using T = decltype(zero);
      kernels::ErrorArgs<T> args;
      args.batch = y.size(0);
      args.units_pixels = y[0].numel();
      args.pixel_max = static_cast<T>(pixel_max);
      args.y = ptr<T>(y);
      args.a = ptr<T>(a);
      args.a_batch_stride = a.stride(0);
      args.de = ptr<T>(de);
      args.dahat = ptr<T>(dahat);
      args.dy = ptr<T>(dy);
      args.da = ptr<T>(da);
      launch(y, y.numel(), args, &kernels::error_backward_cpu<T>, &kernels::error_backward_cuda<T>);
    });
    return {dy, da, torch::Tensor()};
  }
};

}  // namespace

FusedCell fused_lstm_cell(const torch::Tensor& pre, const torch::Tensor& c_prev) {
  variable_list out = Cell::apply(pre, c_prev);
  return {out[0], out[1], out[2], out[3]};
}

FusedError fused_error_units(const torch::Tensor& y, const torch::Tensor& a, double pixel_max) {
  variable_list out = Error::apply(y, a, pixel_max);
  return {out[0], out[1]};
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
