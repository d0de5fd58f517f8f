// fused.h's CPU loops over elements.h.
#include "saddlescope/kernels/fused.h"

#include "elements.h"

namespace saddlescope::kernels {

namespace {
template <typename Args, void (*at)(const Args&, int64_t)>
void each(const Args& a, int64_t begin, int64_t end) {
  for (int64_t k = begin; k < end; ++k) at(a, k);
}
}  // namespace

template <typename T>
void cell_forward_cpu(const CellArgs<T>& a, int64_t begin, int64_t end) {
  each<CellArgs<T>, cell_forward_at<T>>(a, begin, end);
}
template <typename T>
void cell_backward_cpu(const CellArgs<T>& a, int64_t begin, int64_t end) {
  each<CellArgs<T>, cell_backward_at<T>>(a, begin, end);
}
template <typename T>
void error_forward_cpu(const ErrorArgs<T>& a, int64_t begin, int64_t end) {
  each<ErrorArgs<T>, error_forward_at<T>>(a, begin, end);
}
template <typename T>
void error_backward_cpu(const ErrorArgs<T>& a, int64_t begin, int64_t end) {
  each<ErrorArgs<T>, error_backward_at<T>>(a, begin, end);
}

template <typename T>
void pool_forward_cpu(const PoolArgs<T>& a, int64_t begin, int64_t end) {
  each<PoolArgs<T>, pool_forward_at<T>>(a, begin, end);
}
template <typename T>
void pool_backward_cpu(const PoolArgs<T>& a, int64_t begin, int64_t end) {
  each<PoolArgs<T>, pool_backward_at<T>>(a, begin, end);
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
  template void pool_forward_cpu<T>(const PoolArgs<T>&, int64_t, int64_t);       \
  template void pool_backward_cpu<T>(const PoolArgs<T>&, int64_t, int64_t);      \
  template void adam_cpu<T>(const AdamArgs<T>&, int64_t, int64_t);
SADDLESCOPE_KERNELS_CPU(float)
SADDLESCOPE_KERNELS_CPU(double)

}  // namespace saddlescope::kernels
