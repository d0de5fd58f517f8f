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

// Each element-wise op's loop, for float and double: elements [begin, end) through name##_at.
#define SADDLESCOPE_EACH_CPU(name, Args)                                       \
  template <typename T>                                                        \
  void name##_cpu(const Args<T>& a, int64_t begin, int64_t end) {              \
    each<Args<T>, name##_at<T>>(a, begin, end);                                \
  }                                                                            \
  template void name##_cpu<float>(const Args<float>&, int64_t, int64_t);       \
  template void name##_cpu<double>(const Args<double>&, int64_t, int64_t);
SADDLESCOPE_EACH_CPU(cell_forward, CellArgs)
SADDLESCOPE_EACH_CPU(cell_backward, CellArgs)
SADDLESCOPE_EACH_CPU(error_forward, ErrorArgs)
SADDLESCOPE_EACH_CPU(error_backward, ErrorArgs)
SADDLESCOPE_EACH_CPU(pool_forward, PoolArgs)
SADDLESCOPE_EACH_CPU(pool_backward, PoolArgs)

template <typename T>
void adam_cpu(const AdamArgs<T>& a, int64_t begin, int64_t end) {
  const auto s = math::adam_scalars<T>(*a.lr, *a.beta1_power, *a.beta2_power, a.beta1, a.beta2, a.eps);
  for (int64_t k = begin; k < end; ++k) math::adam(a.p[k], a.g[k], a.m[k], a.v[k], s);
}

template void adam_cpu<float>(const AdamArgs<float>&, int64_t, int64_t);
template void adam_cpu<double>(const AdamArgs<double>&, int64_t, int64_t);

}  // namespace saddlescope::kernels
