// The arithmetic of one element of each fused op, written once for the CPU loops (cpu.cpp) and the CUDA
// kernels (cuda.cu): the two differ only where their libm's expf/tanhf (or exp/tanh) differ. Products
// that feed a sum are explicit fma()s, so that neither compiler's contraction choice changes the bits.
// Masks follow LibTorch's backward formulas (threshold_backward: the gradient passes where the ReLU's
// output is > 0; clamp_max: where the input is <= max), so a NaN in the forward is propagated as it is
// by LibTorch's relu and clamp.
#pragma once

#include <cmath>

#ifdef __CUDACC__
#define SADDLESCOPE_HD __host__ __device__ __forceinline__
#else
#define SADDLESCOPE_HD inline
#endif

namespace saddlescope::kernels::math {

SADDLESCOPE_HD float exp_(float x) { return expf(x); }
SADDLESCOPE_HD double exp_(double x) { return exp(x); }
SADDLESCOPE_HD float tanh_(float x) { return tanhf(x); }
SADDLESCOPE_HD double tanh_(double x) { return tanh(x); }
SADDLESCOPE_HD float fma_(float a, float b, float c) { return fmaf(a, b, c); }
SADDLESCOPE_HD double fma_(double a, double b, double c) { return fma(a, b, c); }
SADDLESCOPE_HD float sqrt_(float x) { return sqrtf(x); }
SADDLESCOPE_HD double sqrt_(double x) { return sqrt(x); }

// σ(x) = 1 / (1 + e^-x): 0 for large negative x (e^-x = inf), as LibTorch's.
template <typename T>
SADDLESCOPE_HD T sigmoid(T x) { return T(1) / (T(1) + exp_(-x)); }
// ReLU that keeps a NaN (LibTorch's relu is clamp_min(x, 0), which does).
template <typename T>
SADDLESCOPE_HD T relu(T x) { return x < T(0) ? T(0) : x; }

// ConvLSTM cell, forward: gate pre-activations (zi, zf, zo, zg) and the previous cell c_prev give
//   i, f, o = σ(zi), σ(zf), σ(zo);  g = tanh(zg);  c = f·c_prev + i·g;  tc = tanh(c);  h = o·tc.
template <typename T>
struct CellForward {
  T i, f, o, g, c, tc, h;
};
template <typename T>
SADDLESCOPE_HD CellForward<T> cell_forward(T zi, T zf, T zo, T zg, T c_prev) {
  CellForward<T> r;
  r.i = sigmoid(zi);
  r.f = sigmoid(zf);
  r.o = sigmoid(zo);
  r.g = tanh_(zg);
  r.c = fma_(r.f, c_prev, r.i * r.g);
  r.tc = tanh_(r.c);
  r.h = r.o * r.tc;
  return r;
}

// Backward of cell_forward from the saved activations: dh and dc are the gradients of h and c (0 when
// nothing reads them). dc_total = dc + dh·o·(1 − tc²); the gate gradients are through σ' = y(1 − y) and
// tanh' = 1 − y², as LibTorch's sigmoid_backward and tanh_backward.
template <typename T>
struct CellBackward {
  T dzi, dzf, dzo, dzg, dc_prev;
};
template <typename T>
SADDLESCOPE_HD CellBackward<T> cell_backward(T i, T f, T o, T g, T c_prev, T tc, T dh, T dc) {
  const T dc_total = fma_(dh * o, T(1) - tc * tc, dc);
  CellBackward<T> r;
  r.dzo = (dh * tc) * ((T(1) - o) * o);
  r.dzi = (dc_total * g) * ((T(1) - i) * i);
  r.dzf = (dc_total * c_prev) * ((T(1) - f) * f);
  r.dzg = (dc_total * i) * (T(1) - g * g);
  r.dc_prev = dc_total * f;
  return r;
}

// PredNet's error units, forward: the prediction Â = min(ReLU(y), pixel_max) from its convolution's
// output y (pixel_max = +inf: no clamp) and the target A give E = [ReLU(A − Â); ReLU(Â − A)].
template <typename T>
struct ErrorForward {
  T ahat, up, down;  // Â, ReLU(A − Â), ReLU(Â − A)
};
template <typename T>
SADDLESCOPE_HD ErrorForward<T> error_forward(T y, T a, T pixel_max) {
  ErrorForward<T> r;
  const T relu_y = relu(y);
  r.ahat = relu_y > pixel_max ? pixel_max : relu_y;
  const T d = a - r.ahat;
  r.up = relu(d);
  r.down = relu(-d);
  return r;
}

// Backward: de_up, de_down the gradients of the two halves of E, dahat that of Â read elsewhere (the
// prediction; 0 if not). Returns dy (through the clamp and the ReLU) and da.
template <typename T>
struct ErrorBackward {
  T dy, da;
};
template <typename T>
SADDLESCOPE_HD ErrorBackward<T> error_backward(T y, T a, T pixel_max, T de_up, T de_down, T dahat) {
  const T relu_y = relu(y);
  const T ahat = relu_y > pixel_max ? pixel_max : relu_y;
  const T d = a - ahat;
  const T dd = (d > T(0) ? de_up : T(0)) - (-d > T(0) ? de_down : T(0));
  ErrorBackward<T> r;
  r.da = dd;
  r.dy = (relu_y > T(0) && relu_y <= pixel_max) ? dahat - dd : T(0);
  return r;
}

// One Adam step of one parameter. Its scalars are formed in float64 and rounded to T once, as DeviceAdam's
// LibTorch ops round their double scalars: b1 = β1, c1 = 1 − β1, b2 = β2, c2 = 1 − β2,
// step_size = lr / (1 − β1^t), root_c2 = sqrt(1 − β2^t).
//   m ← β1·m + (1 − β1)·g;  v ← β2·v + (1 − β2)·g²;  p ← p − step_size·m / (sqrt(v) / root_c2 + ε)
template <typename T>
struct AdamScalars {
  T b1, c1, b2, c2, step_size, root_c2, eps;
};
template <typename T>
SADDLESCOPE_HD AdamScalars<T> adam_scalars(double lr, double beta1_power, double beta2_power, double beta1,
                                           double beta2, double eps) {
  return {static_cast<T>(beta1), static_cast<T>(1 - beta1), static_cast<T>(beta2), static_cast<T>(1 - beta2),
          static_cast<T>(lr / (1 - beta1_power)), static_cast<T>(sqrt_(1 - beta2_power)), static_cast<T>(eps)};
}
template <typename T>
SADDLESCOPE_HD void adam(T& p, T g, T& m, T& v, const AdamScalars<T>& s) {
  m = fma_(s.c1, g, m * s.b1);
  v = fma_(s.c2 * g, g, v * s.b2);
  p = p - (m * s.step_size) / (sqrt_(v) / s.root_c2 + s.eps);
}

}  // namespace saddlescope::kernels::math
