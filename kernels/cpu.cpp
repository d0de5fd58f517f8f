// fused.h's CPU loops: fused_math.h per element.
#include "saddlescope/kernels/fused.h"

#include "saddlescope/kernels/fused_math.h"

namespace saddlescope::kernels {

// Element k of a (B, U·P) op is (b, j) = (k / UP, k % UP); its gate s of a (B, 4, U·P) tensor is at
// (4b + s)·UP + j.
template <typename T>
void cell_forward_cpu(const CellArgs<T>& a, int64_t begin, int64_t end) {
  const int64_t up = a.units_pixels;
  for (int64_t k = begin; k < end; ++k) {
    const int64_t b = k / up, j = k % up, at = 4 * b * up + j;
    auto r = math::cell_forward(a.pre[at], a.pre[at + up], a.pre[at + 2 * up], a.pre[at + 3 * up], a.c_prev[k]);
    a.act[at] = r.i;
    a.act[at + up] = r.f;
    a.act[at + 2 * up] = r.o;
    a.act[at + 3 * up] = r.g;
    a.c[k] = r.c;
    a.tc[k] = r.tc;
    a.h[k] = r.h;
  }
}

template <typename T>
void cell_backward_cpu(const CellArgs<T>& a, int64_t begin, int64_t end) {
  const int64_t up = a.units_pixels;
  for (int64_t k = begin; k < end; ++k) {
    const int64_t b = k / up, j = k % up, at = 4 * b * up + j;
    auto r = math::cell_backward(a.act[at], a.act[at + up], a.act[at + 2 * up], a.act[at + 3 * up], a.c_prev[k],
                                 a.tc[k], a.dh ? a.dh[k] : T(0), a.dc ? a.dc[k] : T(0));
    a.dpre[at] = r.dzi;
    a.dpre[at + up] = r.dzf;
    a.dpre[at + 2 * up] = r.dzo;
    a.dpre[at + 3 * up] = r.dzg;
    if (a.dc_prev) a.dc_prev[k] = r.dc_prev;
  }
}

template <typename T>
void error_forward_cpu(const ErrorArgs<T>& a, int64_t begin, int64_t end) {
  const int64_t up = a.units_pixels;
  for (int64_t k = begin; k < end; ++k) {
    const int64_t at = 2 * (k / up) * up + k % up;
    auto r = math::error_forward(a.y[k], a.a[(k / up) * a.a_batch_stride + k % up], a.pixel_max);
    a.ahat[k] = r.ahat;
    a.e[at] = r.up;
    a.e[at + up] = r.down;
  }
}

template <typename T>
void error_backward_cpu(const ErrorArgs<T>& a, int64_t begin, int64_t end) {
  const int64_t up = a.units_pixels;
  for (int64_t k = begin; k < end; ++k) {
    const int64_t at = 2 * (k / up) * up + k % up;
    auto r = math::error_backward(a.y[k], a.a[(k / up) * a.a_batch_stride + k % up], a.pixel_max, a.de[at], a.de[at + up], a.dahat ? a.dahat[k] : T(0));
    a.dy[k] = r.dy;
    if (a.da) a.da[k] = r.da;
  }
}

template <typename T>
void adam_cpu(const AdamArgs<T>& a, int64_t begin, int64_t end) {
  const auto s = math::adam_scalars<T>(*a.lr, *a.beta1_power, *a.beta2_power, a.beta1, a.beta2, a.eps);
  for (int64_t k = begin; k < end; ++k) math::adam(a.p[k], a.g[k], a.m[k], a.v[k], s);
}

#define SADDLESCOPE_KERNELS_CPU(T)                                                  \
  template void cell_forward_cpu<T>(const CellArgs<T>&, int64_t, int64_t);       \
  template void cell_backward_cpu<T>(const CellArgs<T>&, int64_t, int64_t);      \
  template void error_forward_cpu<T>(const ErrorArgs<T>&, int64_t, int64_t);     \
  template void error_backward_cpu<T>(const ErrorArgs<T>&, int64_t, int64_t);    \
  template void adam_cpu<T>(const AdamArgs<T>&, int64_t, int64_t);
SADDLESCOPE_KERNELS_CPU(float)
SADDLESCOPE_KERNELS_CPU(double)

}  // namespace saddlescope::kernels
