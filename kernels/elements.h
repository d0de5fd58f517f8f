// One element of each fused op, read from and written to its arrays (fused.h's layouts): the body of the
// CPU loops (cpu.cpp) and of the CUDA kernels (cuda.cu), so that the two differ only in how they visit
// the elements.
#pragma once

#include "saddlescope/kernels/fused.h"
#include "saddlescope/kernels/fused_math.h"

namespace saddlescope::kernels {

// Element k of a (B, U·P) op is (b, j) = (k / UP, k % UP); gate s of a (B, 4, U·P) tensor is at
// (4b + s)·UP + j, half s of E (B, 2, U·P) at (2b + s)·UP + j.
template <typename T>
SADDLESCOPE_HD void cell_forward_at(const CellArgs<T>& a, int64_t k) {
  const int64_t up = a.units_pixels, at = 4 * (k / up) * up + k % up;
  auto r = math::cell_forward(a.pre[at], a.pre[at + up], a.pre[at + 2 * up], a.pre[at + 3 * up], a.c_prev[k]);
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
  auto r = math::error_forward(a.y[k], a.a[(k / up) * a.a_batch_stride + k % up], a.pixel_max);
  a.ahat[k] = r.ahat;
  a.e[at] = r.up;
  a.e[at + up] = r.down;
}

template <typename T>
SADDLESCOPE_HD void error_backward_at(const ErrorArgs<T>& a, int64_t k) {
  const int64_t up = a.units_pixels, at = 2 * (k / up) * up + k % up;
  auto r = math::error_backward(a.y[k], a.a[(k / up) * a.a_batch_stride + k % up], a.pixel_max, a.de[at],
                                a.de[at + up], a.dahat ? a.dahat[k] : T(0));
  a.dy[k] = r.dy;
  if (a.da) a.da[k] = r.da;
}

}  // namespace saddlescope::kernels
