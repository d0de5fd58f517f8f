// Fused kernels of the `kernels = fused` execution path (trainer/fused.h wires them into autograd): each
// op is one pass over its elements instead of LibTorch's op-by-op kernels (PredNet's ConvLSTM cell was
// 7 forward kernels, its error units 4-5). The per-element arithmetic is fused_math.h, the same for the
// CPU loops and the CUDA kernels. Torch-free: tensors are passed as contiguous arrays.
//
// Layouts: an op's elements are `batch` rows of `units_pixels` contiguous ones — (B, U·P) for NCHW
// tensors, (B·P, U) for NHWC (channels last), P = H·W pixels, U = units (channels) of the op — and a
// tensor with several blocks per element holds, per row, its blocks one after the other:
//   cell:   pre (rows, 4, ·) the gate convolution's output in gate order i, f, o, g; c_prev, c, h,
//           tc = tanh(c) (rows, ·); act (rows, 4, ·): σ(zi), σ(zf), σ(zo), tanh(zg)
//   error:  y, a, ahat (rows, ·); e (rows, 2, ·) = [ReLU(A − Â); ReLU(Â − A)]
// A convolution's output (the cell's pre, the error units' y, the pool's y) may come without its bias,
// which the op then adds as it reads each element, rounded as LibTorch adds it after cuDNN's
// convolution: the same bits, without LibTorch's separate add kernel (docs/benchmarks.md).
//
// Every function takes the element range [begin, end) of its op (cell and error: of rows × length; pool:
// of out; adam: of n)
// on the CPU, so that a caller may split the work over threads; the CUDA launchers take the whole op and
// a cudaStream_t (as void*) and only enqueue. dtype: float or double.
#pragma once

#include <cstdint>

namespace saddlescope::kernels {

template <typename T>
struct CellArgs {
  int64_t batch = 0, units_pixels = 0;  // rows and their length: B and U·P (NCHW), or B·P and U (NHWC)
  int64_t run = 1;                      // elements of one channel in a row: P (NCHW) or 1 (NHWC)
  const T* pre = nullptr;
  const T* bias = nullptr;  // forward: the gate convolution's bias (4U), added to pre; nullptr: none
  const T* c_prev = nullptr;
  // forward: written
  T* act = nullptr;
  T* c = nullptr;
  T* h = nullptr;
  T* tc = nullptr;
  // backward: act, c_prev and tc from the forward; dh, dc may be nullptr (zero gradient)
  const T* dh = nullptr;
  const T* dc = nullptr;
  T* dpre = nullptr;     // (B, 4, U, P), written
  T* dc_prev = nullptr;  // written; nullptr: not needed
};

template <typename T>
struct ErrorArgs {
  int64_t batch = 0, units_pixels = 0;  // rows and their length, as CellArgs
  int64_t run = 1;                      // as CellArgs
  T pixel_max = 0;                      // Â's clamp; +inf for none
  const T* y = nullptr;
  const T* bias = nullptr;  // Â's convolution's bias (U), added to y (forward and backward); nullptr: none
  const T* a = nullptr;
  int64_t a_batch_stride = 0;  // elements between a's rows (>= their length: a frame of a
                               // (B, T, U, H, W) sequence is read in place)
  // forward: written
  T* e = nullptr;
  T* ahat = nullptr;
  // backward: de (B, 2, U, P) required, dahat may be nullptr; da nullptr when A needs no gradient
  const T* de = nullptr;
  const T* dahat = nullptr;
  T* dy = nullptr;
  T* da = nullptr;
};

// PredNet's A_l above layer 0: out = maxpool2x2(ReLU(y)), y (B, U, H, W) the conv_a output, H and W
// even, out (B, U, H/2, W/2), both NCHW or both NHWC. LibTorch's semantics: the first maximum of each
// window in row-major order wins (a NaN wins and stays), and in the backward the window's gradient
// goes to it where y > 0. The backward finds the maximum again from y (nothing saved but y) and writes
// every element of dy.
template <typename T>
struct PoolArgs {
  int64_t batch = 0, units = 0, out_height = 0, out_width = 0;
  bool nhwc = false;
  const T* y = nullptr;
  const T* bias = nullptr;  // conv_a's bias (U), added to y (forward and backward); nullptr: none
  T* out = nullptr;         // forward: written
  const T* dout = nullptr;  // backward: out's gradient, in out's layout
  T* dy = nullptr;          // backward: written
};

template <typename T>
struct AdamArgs {
  int64_t n = 0;
  T* p = nullptr;
  const T* g = nullptr;
  T* m = nullptr;
  T* v = nullptr;
  // Device (or, on the CPU, host) float64 scalars: read by the kernel, so that a captured step reads
  // this step's values. The caller advances the powers before the call.
  const double* lr = nullptr;
  const double* beta1_power = nullptr;  // β1^t
  const double* beta2_power = nullptr;  // β2^t
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

// CPU: one thread's share, elements [begin, end).
template <typename T> void cell_forward_cpu(const CellArgs<T>& a, int64_t begin, int64_t end);
template <typename T> void cell_backward_cpu(const CellArgs<T>& a, int64_t begin, int64_t end);
template <typename T> void error_forward_cpu(const ErrorArgs<T>& a, int64_t begin, int64_t end);
template <typename T> void error_backward_cpu(const ErrorArgs<T>& a, int64_t begin, int64_t end);
template <typename T> void pool_forward_cpu(const PoolArgs<T>& a, int64_t begin, int64_t end);  // of out's elements
template <typename T> void pool_backward_cpu(const PoolArgs<T>& a, int64_t begin, int64_t end);
template <typename T> void adam_cpu(const AdamArgs<T>& a, int64_t begin, int64_t end);

// Whether this build has the CUDA kernels (CUDA Toolkit found at configure time), and what they were
// built for ("nvcc 13.0, sm_90"; "" when not built).
bool cuda_built();
const char* cuda_build_info();

// CUDA: enqueue the whole op on `stream` (a cudaStream_t). REQUIRES: cuda_built() (aborts otherwise),
// device pointers of the stream's device. Launch errors abort with CUDA's message.
template <typename T> void cell_forward_cuda(const CellArgs<T>& a, void* stream);
template <typename T> void cell_backward_cuda(const CellArgs<T>& a, void* stream);
template <typename T> void error_forward_cuda(const ErrorArgs<T>& a, void* stream);
template <typename T> void error_backward_cuda(const ErrorArgs<T>& a, void* stream);
template <typename T> void pool_forward_cuda(const PoolArgs<T>& a, void* stream);
template <typename T> void pool_backward_cuda(const PoolArgs<T>& a, void* stream);
template <typename T> void adam_cuda(const AdamArgs<T>& a, void* stream);

}  // namespace saddlescope::kernels
