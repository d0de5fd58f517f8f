#include "saddlescope/reference/ops.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "nonfinite.h"
#include "reduction.h"
#include "saddlescope/reference/superaccumulator.h"

namespace saddlescope::reference {
namespace {

Status check_length(const char* what, const char* name, int64_t got, int64_t want, const char* shape) {
  if (got == want) return Status::Ok();
  return Status::Error(fmt::format("{}: {} has {} elements, expected {} ({})", what, name, got, want, shape));
}

Status check_index(const char* what, const char* name, int64_t i, int64_t size) {
  if (i >= 0 && i < size) return Status::Ok();
  return Status::Error(fmt::format("{}: {} = {} is outside [0, {})", what, name, i, size));
}

template <class T>
Result<Evaluation> matmul_impl(const T* a, int64_t sa, const T* b, int64_t sb, int64_t depth) {
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("matmul", "a_row", a, depth));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("matmul", "b_col", b, depth));
  if (sa < 1 || sb < 1) {
    return Status::Error(fmt::format("matmul: strides must be >= 1, got {} and {}", sa, sb));
  }
  return internal::reduce<T>(Op::kMatmul, a, sa, b, sb, depth);
}

// The operand pairs of one conv2d element, in (c, ky, kx) or (b, oy, ox) order, padding left out.
template <class T>
struct Terms {
  std::vector<T> a, b;
  void add(T x, T y) {
    a.push_back(x);
    b.push_back(y);
  }
  Evaluation reduce(Op op) const {
    return internal::reduce<T>(op, a.data(), 1, b.data(), 1, static_cast<int64_t>(a.size()));
  }
};

template <class T>
Result<Evaluation> conv2d_impl(const T* input, int64_t input_len, const T* weight, int64_t weight_len,
                               const T* bias, const Conv2dGeometry& g, int64_t oy, int64_t ox) {
  SADDLESCOPE_RETURN_IF_ERROR(validate(g));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("conv2d", "input", input, input_len));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("conv2d", "weight", weight, weight_len));
  SADDLESCOPE_RETURN_IF_ERROR(
      check_length("conv2d", "input", input_len, g.channels * g.height * g.width, "C·H·W"));
  SADDLESCOPE_RETURN_IF_ERROR(
      check_length("conv2d", "weight", weight_len, g.channels * g.kernel_h * g.kernel_w, "C·kh·kw"));
  SADDLESCOPE_RETURN_IF_ERROR(check_index("conv2d", "oy", oy, g.out_height()));
  SADDLESCOPE_RETURN_IF_ERROR(check_index("conv2d", "ox", ox, g.out_width()));
  Terms<T> terms;
  for (int64_t c = 0; c < g.channels; ++c) {
    for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
      const int64_t iy = oy * g.stride_h - g.pad_h + ky * g.dilation_h;
      if (iy < 0 || iy >= g.height) continue;
      for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
        const int64_t ix = ox * g.stride_w - g.pad_w + kx * g.dilation_w;
        if (ix < 0 || ix >= g.width) continue;
        terms.add(input[(c * g.height + iy) * g.width + ix], weight[(c * g.kernel_h + ky) * g.kernel_w + kx]);
      }
    }
  }
  if (bias) terms.add(*bias, T(1));
  return terms.reduce(Op::kConv2d);
}

template <class T>
Result<Evaluation> wgrad_impl(const T* input, int64_t input_len, const T* grad, int64_t grad_len,
                              int64_t batch, const Conv2dGeometry& g, int64_t ky, int64_t kx) {
  SADDLESCOPE_RETURN_IF_ERROR(validate(g));
  if (batch < 0) return Status::Error(fmt::format("conv2d_wgrad: batch must be >= 0, got {}", batch));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("conv2d_wgrad", "input_plane", input, input_len));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span("conv2d_wgrad", "grad_plane", grad, grad_len));
  const int64_t oh = g.out_height(), ow = g.out_width();
  SADDLESCOPE_RETURN_IF_ERROR(
      check_length("conv2d_wgrad", "input_plane", input_len, batch * g.height * g.width, "N·H·W"));
  SADDLESCOPE_RETURN_IF_ERROR(check_length("conv2d_wgrad", "grad_plane", grad_len, batch * oh * ow, "N·OH·OW"));
  SADDLESCOPE_RETURN_IF_ERROR(check_index("conv2d_wgrad", "ky", ky, g.kernel_h));
  SADDLESCOPE_RETURN_IF_ERROR(check_index("conv2d_wgrad", "kx", kx, g.kernel_w));
  Terms<T> terms;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t iy = oy * g.stride_h - g.pad_h + ky * g.dilation_h;
      if (iy < 0 || iy >= g.height) continue;
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t ix = ox * g.stride_w - g.pad_w + kx * g.dilation_w;
        if (ix < 0 || ix >= g.width) continue;
        terms.add(grad[(b * oh + oy) * ow + ox], input[(b * g.height + iy) * g.width + ix]);
      }
    }
  }
  return terms.reduce(Op::kConv2dWeightGrad);
}

// The IEEE outcome of (x - y)^2 or |x - y| summed, when some input is NaN/Inf (ops.h).
template <class T>
Kind loss_nonfinite_kind(const T* x, const T* y, int64_t n, int64_t* first) {
  bool nan = false;
  *first = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(x[i]) && std::isfinite(y[i])) continue;
    if (*first < 0) *first = i;
    nan |= std::isnan(x[i]) || std::isnan(y[i]) || x[i] == y[i];  // equal here means same-sign infinities
  }
  return nan ? Kind::kNaN : Kind::kPlusInf;
}

template <class T>
Result<Evaluation> loss_impl(Op op, const T* x, int64_t nx, const T* y, int64_t ny) {
  const char* what = op_name(op);
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span(what, "x", x, nx));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span(what, "y", y, ny));
  if (nx != ny) return Status::Error(fmt::format("{}: lengths differ: x has {} elements, y has {}", what, nx, ny));
  Evaluation e;
  e.op = op;
  e.input_format = internal::format_of<T>();
  e.n = nx;
  e.rounding_steps = nx + (op == Op::kMseLoss ? 3 : 1);
  if (nx == 0) {
    internal::set_nonfinite(e, Kind::kNaN);
    return e;
  }
  if (!internal::all_finite(x, 1, nx) || !internal::all_finite(y, 1, nx)) {
    internal::set_nonfinite(e, loss_nonfinite_kind(x, y, nx, &e.first_nonfinite));
    return e;
  }
  // Each term from exact pieces: (x - y)^2 = x·x + y·y - 2·x·y, and |x - y| = max - min.
  Superaccumulator sum;
  for (int64_t i = 0; i < nx; ++i) {
    if (op == Op::kMseLoss) {
      sum.add_product(x[i], x[i]);
      sum.add_product(y[i], y[i]);
      sum.add_product(-x[i], y[i]);
      sum.add_product(-x[i], y[i]);
    } else {
      sum.add(x[i] >= y[i] ? x[i] : y[i]);
      sum.add(x[i] >= y[i] ? -y[i] : -x[i]);
    }
  }
  e.exact = sum.value();
  const int twos = __builtin_ctzll(static_cast<uint64_t>(nx));
  e.divisor = nx >> twos;
  if (!e.exact.is_zero()) e.exact.exponent -= twos;
  internal::set_rounded(e);
  e.abs_sum = e.f64;
  return e;
}

int64_t out_size(int64_t in, int64_t pad, int64_t dilation, int64_t kernel, int64_t stride) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

// A loss gradient element numerator·2^shift/n: exact / divisor (divisor n's odd part), its roundings,
// and abs_sum = |value|. REQUIRES: n >= 1.
void set_quotient(Evaluation& e, const Dyadic& numerator, int shift, int64_t n) {
  const int twos = __builtin_ctzll(static_cast<uint64_t>(n));
  e.divisor = n >> twos;
  e.exact = numerator;
  if (!e.exact.is_zero()) e.exact.exponent += shift - twos;
  internal::set_rounded(e);
  e.abs_sum = std::fabs(e.f64);
}

template <class T>
Evaluation gradient_element(Op op, int64_t rounding_steps) {
  Evaluation e;
  e.op = op;
  e.input_format = internal::format_of<T>();
  e.n = 1;
  e.rounding_steps = rounding_steps;
  return e;
}

template <class T>
Result<Evaluation> loss_grad_impl(T x, T y, T g, int64_t n) {
  if (n < 1) return Status::Error(fmt::format("mse_loss_grad: the loss must have >= 1 element, got {}", n));
  Evaluation e = gradient_element<T>(Op::kMseLossGrad, 5);
  if (!std::isfinite(x) || !std::isfinite(y) || !std::isfinite(g)) {
    const double v = (static_cast<double>(x) - static_cast<double>(y)) * static_cast<double>(g);  // IEEE outcome
    internal::set_nonfinite(e, std::isnan(v) ? Kind::kNaN : v > 0 ? Kind::kPlusInf : Kind::kMinusInf);
    e.first_nonfinite = 0;
    return e;
  }
  Superaccumulator sum;  // g·x − g·y, each product exact
  sum.add_product(g, x);
  sum.add_product(-g, y);
  set_quotient(e, sum.value(), 1, n);  // ·2/n
  return e;
}

template <class T>
Result<Evaluation> nll_loss_grad_impl(T g, int64_t n) {
  if (n < 1) return Status::Error(fmt::format("nll_loss_grad: the mean must be over >= 1 row, got {}", n));
  Evaluation e = gradient_element<T>(Op::kNllLossGrad, 2);
  if (!std::isfinite(g)) {
    internal::set_nonfinite(e, std::isnan(g) ? Kind::kNaN : g > 0 ? Kind::kMinusInf : Kind::kPlusInf);
    e.first_nonfinite = 0;
    return e;
  }
  Superaccumulator value;
  value.add(-g);
  set_quotient(e, value.value(), 0, n);
  return e;
}

}  // namespace

int64_t Conv2dGeometry::out_height() const { return out_size(height, pad_h, dilation_h, kernel_h, stride_h); }
int64_t Conv2dGeometry::out_width() const { return out_size(width, pad_w, dilation_w, kernel_w, stride_w); }

Status validate(const Conv2dGeometry& g) {
  const struct {
    const char* name;
    int64_t value, min;
  } fields[] = {{"channels", g.channels, 1},     {"height", g.height, 1},         {"width", g.width, 1},
                {"kernel_h", g.kernel_h, 1},     {"kernel_w", g.kernel_w, 1},     {"stride_h", g.stride_h, 1},
                {"stride_w", g.stride_w, 1},     {"pad_h", g.pad_h, 0},           {"pad_w", g.pad_w, 0},
                {"dilation_h", g.dilation_h, 1}, {"dilation_w", g.dilation_w, 1}};
  for (const auto& f : fields) {
    if (f.value < f.min) return Status::Error(fmt::format("conv2d: {} must be >= {}, got {}", f.name, f.min, f.value));
  }
  if (g.out_height() < 1 || g.out_width() < 1) {
    return Status::Error(fmt::format("conv2d: the {}x{} kernel (dilation {}x{}) does not fit the padded {}x{} input",
                                     g.kernel_h, g.kernel_w, g.dilation_h, g.dilation_w, g.height, g.width));
  }
  return Status::Ok();
}

Result<Evaluation> evaluate_matmul_element(const float* a, int64_t sa, const float* b, int64_t sb, int64_t depth) {
  return matmul_impl(a, sa, b, sb, depth);
}
Result<Evaluation> evaluate_matmul_element(const double* a, int64_t sa, const double* b, int64_t sb,
                                           int64_t depth) {
  return matmul_impl(a, sa, b, sb, depth);
}
Result<Evaluation> evaluate_conv2d_element(const float* in, int64_t in_len, const float* w, int64_t w_len,
                                           const float* bias, const Conv2dGeometry& g, int64_t oy, int64_t ox) {
  return conv2d_impl(in, in_len, w, w_len, bias, g, oy, ox);
}
Result<Evaluation> evaluate_conv2d_element(const double* in, int64_t in_len, const double* w, int64_t w_len,
                                           const double* bias, const Conv2dGeometry& g, int64_t oy, int64_t ox) {
  return conv2d_impl(in, in_len, w, w_len, bias, g, oy, ox);
}
Result<Evaluation> evaluate_conv2d_weight_grad(const float* in, int64_t in_len, const float* grad, int64_t grad_len,
                                               int64_t batch, const Conv2dGeometry& g, int64_t ky, int64_t kx) {
  return wgrad_impl(in, in_len, grad, grad_len, batch, g, ky, kx);
}
Result<Evaluation> evaluate_conv2d_weight_grad(const double* in, int64_t in_len, const double* grad,
                                               int64_t grad_len, int64_t batch, const Conv2dGeometry& g,
                                               int64_t ky, int64_t kx) {
  return wgrad_impl(in, in_len, grad, grad_len, batch, g, ky, kx);
}
Result<Evaluation> evaluate_mse_loss(const float* x, int64_t nx, const float* y, int64_t ny) {
  return loss_impl(Op::kMseLoss, x, nx, y, ny);
}
Result<Evaluation> evaluate_mse_loss(const double* x, int64_t nx, const double* y, int64_t ny) {
  return loss_impl(Op::kMseLoss, x, nx, y, ny);
}
Result<Evaluation> evaluate_mae_loss(const float* x, int64_t nx, const float* y, int64_t ny) {
  return loss_impl(Op::kMaeLoss, x, nx, y, ny);
}
Result<Evaluation> evaluate_mae_loss(const double* x, int64_t nx, const double* y, int64_t ny) {
  return loss_impl(Op::kMaeLoss, x, nx, y, ny);
}

Result<Evaluation> evaluate_nll_loss_grad(float g, int64_t n) { return nll_loss_grad_impl(g, n); }
Result<Evaluation> evaluate_nll_loss_grad(double g, int64_t n) { return nll_loss_grad_impl(g, n); }
Result<Evaluation> evaluate_mse_loss_grad(float x, float y, float g, int64_t n) { return loss_grad_impl(x, y, g, n); }
Result<Evaluation> evaluate_mse_loss_grad(double x, double y, double g, int64_t n) { return loss_grad_impl(x, y, g, n); }

}  // namespace saddlescope::reference
