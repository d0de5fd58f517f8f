// One element of each fused op, read from and written to its arrays (fused.h's layouts): the body of the
// CPU loops (cpu.cpp) and of the CUDA kernels (cuda.cu), so that the two differ only in how they visit
// the elements.
#pragma once

#include "saddlescope/kernels/fused.h"
#include "saddlescope/kernels/fused_math.h"

namespace saddlescope::kernels {

// y[at] plus the bias of its channel, or y[at] alone without a bias: one rounding, as LibTorch's add of a
// convolution's bias (and no add at all without one, so that −0 stays −0).
template <typename T>
SADDLESCOPE_HD T with_bias(const T* y, int64_t at, const T* bias, int64_t channel) {
  return bias ? y[at] + bias[channel] : y[at];
}

// Element k of a (B, U·P) op is (b, j) = (k / UP, k % UP), of channel j / run; gate s of a (B, 4, U·P)
// tensor is at (4b + s)·UP + j, half s of E (B, 2, U·P) at (2b + s)·UP + j.
template <typename T>
SADDLESCOPE_HD void cell_forward_at(const CellArgs<T>& a, int64_t k) {
  const int64_t up = a.units_pixels, at = 4 * (k / up) * up + k % up;
  const int64_t units = up / a.run, u = (k % up) / a.run;
  auto r = math::cell_forward(with_bias(a.pre, at, a.bias, u), with_bias(a.pre, at + up, a.bias, units + u),
                              with_bias(a.pre, at + 2 * up, a.bias, 2 * units + u),
                              with_bias(a.pre, at + 3 * up, a.bias, 3 * units + u), a.c_prev[k]);
  a.act[at] = r.i;
  a.act[at + up] = r.f;
  a.act[at + 2 * up] = r.o;
  a.act[at + 3 * up] = r.g;
  a.c[k] = r.c;
  a.tc[k] = r.tc;
  a.h[k] = r.h;
}

template <typename T>
SADDLESCOPE_HD void cell_backward_at(const CellArgs<T>& a, int64_t k) {
  const int64_t up = a.units_pixels, at = 4 * (k / up) * up + k % up;
  auto r = math::cell_backward(a.act[at], a.act[at + up], a.act[at + 2 * up], a.act[at + 3 * up], a.c_prev[k],
                               a.tc[k], a.dh ? a.dh[k] : T(0), a.dc ? a.dc[k] : T(0));
  a.dpre[at] = r.dzi;
  a.dpre[at + up] = r.dzf;
  a.dpre[at + 2 * up] = r.dzo;
  a.dpre[at + 3 * up] = r.dzg;
  if (a.dc_prev) a.dc_prev[k] = r.dc_prev;
}

template <typename T>
SADDLESCOPE_HD void error_forward_at(const ErrorArgs<T>& a, int64_t k) {
  const int64_t up = a.units_pixels, at = 2 * (k / up) * up + k % up;
  auto r = math::error_forward(with_bias(a.y, k, a.bias, (k % up) / a.run), a.a[(k / up) * a.a_batch_stride + k % up],
                               a.pixel_max);
  a.ahat[k] = r.ahat;
  a.e[at] = r.up;
  a.e[at + up] = r.down;
}

template <typename T>
SADDLESCOPE_HD void error_backward_at(const ErrorArgs<T>& a, int64_t k) {
  const int64_t up = a.units_pixels, at = 2 * (k / up) * up + k % up;
  auto r = math::error_backward(with_bias(a.y, k, a.bias, (k % up) / a.run), a.a[(k / up) * a.a_batch_stride + k % up],
                                a.pixel_max, a.de[at], a.de[at + up], a.dahat ? a.dahat[k] : T(0));
  a.dy[k] = r.dy;
  if (a.da) a.da[k] = r.da;
}

// Output element k of a pool: the index of its window's first input, the steps from there to the
// next column and the next row, and its channel.
struct Window {
  int64_t first, column, row, channel;
};
template <typename T>
SADDLESCOPE_HD Window pool_window(const PoolArgs<T>& a, int64_t k) {
  const int64_t w = 2 * a.out_width, h = 2 * a.out_height;
  if (a.nhwc) {  // k = ((b·Ho + i)·Wo + j)·U + u
    const int64_t u = k % a.units, p = k / a.units, j = p % a.out_width, bi = p / a.out_width;
    const int64_t i = bi % a.out_height, b = bi / a.out_height;
    return {((b * h + 2 * i) * w + 2 * j) * a.units + u, a.units, w * a.units, u};
  }
  // k = ((b·U + u)·Ho + i)·Wo + j
  const int64_t j = k % a.out_width, pi = k / a.out_width, i = pi % a.out_height, plane = pi / a.out_height;
  return {(plane * h + 2 * i) * w + 2 * j, 1, w, plane % a.units};
}
SADDLESCOPE_HD int64_t window_at(const Window& win, int s) { return win.first + (s / 2) * win.row + (s % 2) * win.column; }

// The window's maximum of ReLU(y + bias) and which of its four (row-major) holds it: LibTorch's rule.
template <typename T>
SADDLESCOPE_HD int pool_argmax(const PoolArgs<T>& a, const Window& win, T* max) {
  int best = 0;
  T m = math::relu(with_bias(a.y, win.first, a.bias, win.channel));
  for (int s = 1; s < 4; ++s) {
    const T v = math::relu(with_bias(a.y, window_at(win, s), a.bias, win.channel));
    if (v > m || v != v) {
      m = v;
      best = s;
    }
  }
  *max = m;
  return best;
}

template <typename T>
SADDLESCOPE_HD void pool_forward_at(const PoolArgs<T>& a, int64_t k) {
  T m;
  pool_argmax(a, pool_window(a, k), &m);
  a.out[k] = m;
}

template <typename T>
SADDLESCOPE_HD void pool_backward_at(const PoolArgs<T>& a, int64_t k) {
  const Window win = pool_window(a, k);
  T m;
  const int best = pool_argmax(a, win, &m);
  for (int s = 0; s < 4; ++s) {
    const int64_t at = window_at(win, s);
    a.dy[at] = s == best && with_bias(a.y, at, a.bias, win.channel) > T(0) ? a.dout[k] : T(0);
  }
}

// The elements an op's loop visits.
template <typename T>
SADDLESCOPE_HD int64_t elements(const CellArgs<T>& a) { return a.batch * a.units_pixels; }
template <typename T>
SADDLESCOPE_HD int64_t elements(const ErrorArgs<T>& a) { return a.batch * a.units_pixels; }
template <typename T>
SADDLESCOPE_HD int64_t elements(const PoolArgs<T>& a) { return a.batch * a.units * a.out_height * a.out_width; }

}  // namespace saddlescope::kernels
