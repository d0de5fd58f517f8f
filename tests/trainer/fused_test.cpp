// kernels = fused against LibTorch's ops on the same inputs: each fused op, the whole PredNet (forward,
// loss, every gradient, the HVP through double backward) and Adam. float64 agrees to 1e-12 relative
// (both sides round only in the last bits of each op); float32 to the stated tolerances. On the GPU host
// every test runs on CUDA as well; CI (CPU LibTorch) runs the CPU loops.
#include "saddlescope/trainer/fused.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "saddlescope/kernels/fused.h"
#include "saddlescope/probes/op_taps.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/trainer/adam.h"
#include "saddlescope/trainer/prednet.h"
#include "temp_dir.h"

namespace saddlescope::trainer {
namespace {

std::vector<torch::Device> devices() {
  std::vector<torch::Device> d = {torch::kCPU};
  if (torch::cuda::is_available() && kernels::cuda_built()) d.emplace_back(torch::kCUDA);
  return d;
}

torch::Tensor uniform(std::vector<int64_t> shape, double lo, double hi, uint64_t seed, torch::Dtype dtype,
                      torch::Device device) {
  auto gen = at::detail::createCPUGenerator(seed);
  return torch::empty(shape, torch::dtype(torch::kFloat64)).uniform_(lo, hi, gen).to(dtype).to(device);
}

// max |a − b| / max |b|: the difference relative to the reference's scale (printed on failure).
double relative(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>() / (scale > 0 ? scale : 1);
}

double tolerance(torch::Dtype dtype) { return dtype == torch::kFloat64 ? 1e-12 : 2e-6; }

#define EXPECT_CLOSE(a, b, tol) \
  EXPECT_LE(relative(a, b), tol) << #a " vs " #b ": relative difference " << relative(a, b)

TEST(Fused, LstmCellMatchesLibTorchOps) {
  for (torch::Device device : devices())
    for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32}) {
      SCOPED_TRACE(device.str() + (dtype == torch::kFloat64 ? " float64" : " float32"));
      const int64_t b = 3, u = 5;
      auto pre = uniform({b, 4 * u, 6, 7}, -4, 4, 1, dtype, device).requires_grad_(),
           c_prev = uniform({b, u, 6, 7}, -2, 2, 2, dtype, device).requires_grad_();
      auto dh = uniform({b, u, 6, 7}, -1, 1, 3, dtype, device), dc = uniform({b, u, 6, 7}, -1, 1, 4, dtype, device);

      FusedCell fused = fused_lstm_cell(pre, c_prev);
      auto fused_grads = torch::autograd::grad({fused.c, fused.h}, {pre, c_prev}, {dc, dh});

      auto gates = pre.split(u, 1);
      auto i = torch::sigmoid(gates[0]), f = torch::sigmoid(gates[1]), o = torch::sigmoid(gates[2]),
           g = torch::tanh(gates[3]);
      auto c = f * c_prev + i * g, h = o * torch::tanh(c);
      auto grads = torch::autograd::grad({c, h}, {pre, c_prev}, {dc, dh});

      const double tol = tolerance(dtype);
      EXPECT_CLOSE(fused.c, c, tol);
      EXPECT_CLOSE(fused.h, h, tol);
      EXPECT_CLOSE(fused.act, torch::cat({i, f, o, g}, 1), tol);
      EXPECT_CLOSE(fused.tc, torch::tanh(c), tol);
      EXPECT_CLOSE(fused_grads[0], grads[0], tol);
      EXPECT_CLOSE(fused_grads[1], grads[1], tol);
    }
}

TEST(Fused, ErrorUnitsMatchLibTorchOpsIncludingTheMaskEdges) {
  for (torch::Device device : devices())
    for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32})
      for (double pixel_max : {1.0, std::numeric_limits<double>::infinity()}) {
        SCOPED_TRACE(device.str() + (dtype == torch::kFloat64 ? " float64" : " float32") + " pixel_max " +
                     std::to_string(pixel_max));
        // y and a on a grid of quarters: exact zeros, y at the clamp and A = Â occur, where the masks decide.
        auto y = (uniform({2, 3, 8, 8}, -8, 8, 5, torch::kFloat64, torch::kCPU).round() / 4)
                     .to(dtype).to(device).requires_grad_();
        auto a = (uniform({2, 3, 8, 8}, 0, 8, 6, torch::kFloat64, torch::kCPU).round() / 4)
                     .to(dtype).to(device).requires_grad_();
        auto de = uniform({2, 6, 8, 8}, -1, 1, 7, dtype, device), dahat = uniform({2, 3, 8, 8}, -1, 1, 8, dtype, device);

        FusedError fused = fused_error_units(y, a, pixel_max);
        auto fused_grads = torch::autograd::grad({fused.e, fused.ahat}, {y, a}, {de, dahat});

        auto ahat = torch::relu(y);
        if (std::isfinite(pixel_max)) ahat = torch::clamp_max(ahat, pixel_max);
        auto diff = a - ahat;
        auto e = torch::relu(torch::cat({diff, -diff}, 1));
        auto grads = torch::autograd::grad({e, ahat}, {y, a}, {de, dahat});

        EXPECT_TRUE(torch::equal(fused.e, e));  // no rounding but A − Â's, the same in both
        EXPECT_TRUE(torch::equal(fused.ahat, ahat));
        EXPECT_TRUE(torch::equal(fused_grads[0], grads[0]));
        EXPECT_TRUE(torch::equal(fused_grads[1], grads[1]));
      }
}

// Channels-last (NHWC) tensors, as the fused PredNet keeps them on CUDA: the same elements through the
// same per-element code, so the same bits as NCHW, forward and backward.
TEST(Fused, ChannelsLastGivesTheBitsOfContiguous) {
  const auto cl = torch::MemoryFormat::ChannelsLast;
  auto pre = uniform({2, 12, 5, 6}, -4, 4, 1, torch::kFloat32, torch::kCPU),
       c_prev = uniform({2, 3, 5, 6}, -2, 2, 2, torch::kFloat32, torch::kCPU);
  auto dh = uniform({2, 3, 5, 6}, -1, 1, 3, torch::kFloat32, torch::kCPU);
  auto cell = [&](torch::MemoryFormat f) {
    auto p = pre.contiguous(f).requires_grad_(), c = c_prev.contiguous(f).requires_grad_();
    FusedCell out = fused_lstm_cell(p, c);
    auto g = torch::autograd::grad({out.h}, {p, c}, {dh.contiguous(f)});
    return std::vector<torch::Tensor>{out.c, out.h, out.act, g[0], g[1]};
  };
  auto a = cell(torch::MemoryFormat::Contiguous), b = cell(cl);
  EXPECT_TRUE(b[0].is_contiguous(cl));
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(torch::equal(a[k], b[k])) << k;

  auto y = uniform({2, 3, 5, 6}, -1, 2, 4, torch::kFloat32, torch::kCPU), t = uniform({2, 3, 5, 6}, 0, 1, 5, torch::kFloat32, torch::kCPU);
  auto de = uniform({2, 6, 5, 6}, -1, 1, 6, torch::kFloat32, torch::kCPU);
  auto error = [&](torch::MemoryFormat f) {
    auto yy = y.contiguous(f).requires_grad_(), tt = t.contiguous(f).requires_grad_();
    FusedError out = fused_error_units(yy, tt, 1.0);
    auto g = torch::autograd::grad({out.e}, {yy, tt}, {de.contiguous(f)});
    return std::vector<torch::Tensor>{out.e, out.ahat, g[0], g[1]};
  };
  auto ea = error(torch::MemoryFormat::Contiguous), eb = error(cl);
  EXPECT_TRUE(eb[0].is_contiguous(cl));
  for (size_t k = 0; k < ea.size(); ++k) EXPECT_TRUE(torch::equal(ea[k], eb[k])) << k;
}

// A fused op given its convolution's bias adds it as it reads, in one rounding, as LibTorch adds it after
// the convolution: the cell, the error units and the pool give the bits of the same op on y + bias, forward
// and backward, in both layouts and on every device.
TEST(Fused, BiasAddedAsReadGivesTheBitsOfAddingItFirst) {
  for (torch::Device device : devices())
    for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32})
      for (auto format : {torch::MemoryFormat::Contiguous, torch::MemoryFormat::ChannelsLast}) {
        SCOPED_TRACE(device.str() + (dtype == torch::kFloat64 ? " float64" : " float32") +
                     (format == torch::MemoryFormat::Contiguous ? " NCHW" : " NHWC"));
        auto in = [&](std::vector<int64_t> shape, double lo, double hi, uint64_t seed) {
          return uniform(shape, lo, hi, seed, dtype, device).contiguous(format);
        };
        const int64_t u = 3;
        // The cell: pre (2, 4U, 4, 6) and its bias.
        auto pre = in({2, 4 * u, 4, 6}, -3, 3, 1), c_prev = in({2, u, 4, 6}, -2, 2, 2), dh = in({2, u, 4, 6}, -1, 1, 3);
        auto gate_bias = uniform({4 * u}, -1, 1, 4, dtype, device);
        auto cell = [&](bool as_read) {
          auto p = pre.clone().requires_grad_(), c = c_prev.clone().requires_grad_();
          FusedCell out = as_read ? fused_lstm_cell(p, c, gate_bias) : fused_lstm_cell(plus_bias(p, gate_bias), c);
          auto g = torch::autograd::grad({out.h}, {p, c}, {dh});
          return std::vector<torch::Tensor>{out.c, out.h, out.act, g[0], g[1]};
        };
        auto a = cell(true), b = cell(false);
        for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(torch::equal(a[k], b[k])) << "cell " << k;

        // The error units: y around the ReLU's and the clamp's edges once the bias is added.
        auto y = in({2, u, 4, 6}, -1.5, 2.5, 5), target = in({2, u, 4, 6}, 0, 1, 6), de = in({2, 2 * u, 4, 6}, -1, 1, 7);
        auto bias = uniform({u}, -0.5, 0.5, 8, dtype, device);
        auto error = [&](bool as_read) {
          auto yy = y.clone().requires_grad_(), tt = target.clone().requires_grad_();
          FusedError out = as_read ? fused_error_units(yy, tt, 1.0, bias) : fused_error_units(plus_bias(yy, bias), tt, 1.0);
          auto g = torch::autograd::grad({out.e}, {yy, tt}, {de});
          return std::vector<torch::Tensor>{out.e, out.ahat, g[0], g[1]};
        };
        auto ea = error(true), eb = error(false);
        for (size_t k = 0; k < ea.size(); ++k) EXPECT_TRUE(torch::equal(ea[k], eb[k])) << "error units " << k;

        // ReLU with the max-pool.
        auto dout = in({2, u, 2, 3}, -1, 1, 9);
        auto pool = [&](bool as_read) {
          auto yy = y.clone().requires_grad_();
          auto out = as_read ? fused_relu_pool(yy, bias) : fused_relu_pool(plus_bias(yy, bias));
          auto g = torch::autograd::grad({out}, {yy}, {dout});
          return std::vector<torch::Tensor>{out, g[0]};
        };
        auto pa = pool(true), pb = pool(false);
        for (size_t k = 0; k < pa.size(); ++k) EXPECT_TRUE(torch::equal(pa[k], pb[k])) << "pool " << k;
      }
}

// LibTorch's TF32 switches off for a scope, restored after.
struct TF32Off {
  bool cudnn = at::globalContext().allowTF32CuDNN(), matmul = at::globalContext().allowTF32CuBLAS();
  TF32Off() {
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);
  }
  ~TF32Off() {
    at::globalContext().setAllowTF32CuDNN(cudnn);
    at::globalContext().setAllowTF32CuBLAS(matmul);
  }
};

PredNetOptions small(bool fused) {
  PredNetOptions o;
  o.stack_sizes = o.r_stack_sizes = {1, 4, 8};
  o.height = o.width = 16;
  o.nt = 4;
  o.fused = fused;
  return o;
}

// A PredNet of `options` with seed 3's weights, on `device` in `dtype`.
PredNet seeded(const PredNetOptions& options, torch::Dtype dtype, torch::Device device) {
  PredNet model(options);
  auto gen = at::detail::createCPUGenerator(3);
  model->reset_parameters(gen);
  model->to(device, dtype);
  return model;
}

TEST(Fused, PredNetForwardLossAndGradientsMatchLibTorch) {
  // TF32 off: with it cuDNN may round a convolution's products to 10 bits, and whether it does depends
  // on the call's shape — the frames' weight gradients in one call took TF32 on the H100 where the
  // per-frame calls had not (gradients up to 3.8e-4 relative apart). This test is about the fused ops.
  TF32Off no_tf32;
  for (torch::Device device : devices())
    for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32})
      for (const char* loss : {"L0", "Lall", "pixel_mse"}) {
        SCOPED_TRACE(device.str() + (dtype == torch::kFloat64 ? " float64 " : " float32 ") + loss);
        PredNetOptions lib_options = small(false), fused_options = small(true);
        lib_options.loss = fused_options.loss = loss;
        fused_options.channels_last_on_cpu = dtype == torch::kFloat32;  // CUDA's layout, on the CPU too
        PredNet lib = seeded(lib_options, dtype, device), fused = seeded(fused_options, dtype, device);
        auto x = uniform({2, 4, 1, 16, 16}, 0, 1, 9, dtype, device);
        auto run = [&](PredNet& m) {
          PredNetOutput out = m->forward(x);
          torch::Tensor l = std::string(loss) == "pixel_mse" ? pixel_mse(out.prediction.narrow(1, 1, 3), x.narrow(1, 1, 3))
                                                             : prednet_loss(out, x, loss);
          l.backward();
          return std::make_pair(out, l);
        };
        auto [lib_out, lib_loss] = run(lib);
        auto [fused_out, fused_loss] = run(fused);
        // float32: 4 frames of 3 layers of recurrences, each op within an ulp or two of the other.
        const double tol = dtype == torch::kFloat64 ? 1e-12 : 1e-5;
        EXPECT_CLOSE(fused_out.prediction, lib_out.prediction, tol);
        EXPECT_CLOSE(fused_out.errors, lib_out.errors, tol);
        EXPECT_CLOSE(fused_loss, lib_loss, tol);
        auto lp = lib->named_parameters(), fp = fused->named_parameters();
        for (const auto& p : lp) {
          SCOPED_TRACE(p.key());
          ASSERT_TRUE(fp[p.key()].grad().defined());
          EXPECT_CLOSE(fp[p.key()].grad(), p.value().grad(), tol);
        }
      }
}

// Op taps of the fused model in CUDA's channels-last layout (here on the CPU): every tap finds its
// op's gradients (a weight gradient is read from the channels-last copy the convolution saw) and every
// sample is within its bound.
TEST(Fused, ChannelsLastPredNetIsTappedWithinTheBound) {
  PredNetOptions o = small(true);
  o.channels_last_on_cpu = true;
  PredNet model = seeded(o, torch::kFloat32, torch::kCPU);
  testing::TempDir dir;
  auto spec = probes::parse_probe_spec("ops:every=1,k=4");
  ASSERT_TRUE(spec.ok());
  auto taps = probes::OpTaps::create({*spec}, model->tap_ops(2, 4), dir.file(""));
  ASSERT_TRUE(taps.ok()) << taps.status().message();
  model->set_op_taps(*taps);
  auto x = uniform({2, 4, 1, 16, 16}, 0, 1, 9, torch::kFloat32, torch::kCPU);
  (*taps)->arm(0);
  prednet_loss(model->forward(x), x, "L0").backward();
  Status recorded = (*taps)->record(0);
  ASSERT_TRUE(recorded.ok()) << recorded.message();
  std::ifstream csv(dir.file("ops.csv"));
  std::string line;
  int rows = 0;
  while (std::getline(csv, line)) rows += line.find(",beyond") != std::string::npos ? 1000 : 1;
  EXPECT_GT(rows, 20);
  EXPECT_LT(rows, 1000) << "a sample beyond its bound";
}

// maxpool2x2(ReLU(y)) forward and backward are LibTorch's bits, in NCHW and NHWC: values on a coarse grid
// give windows with tied maxima (the first must win), all-negative windows (no gradient) and zeros.
TEST(Fused, ReluPoolGivesLibTorchsBitsIncludingTiesAndDeadWindows) {
  for (torch::Device device : devices())
    for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32})
      for (bool nhwc : {false, true}) {
        SCOPED_TRACE(device.str() + (dtype == torch::kFloat64 ? " float64" : " float32") + (nhwc ? " NHWC" : " NCHW"));
        auto y = (uniform({3, 5, 6, 8}, -1, 1, 50, dtype, device) * 4).round() / 4;
        if (nhwc) y = y.contiguous(torch::MemoryFormat::ChannelsLast);
        auto dout = uniform({3, 5, 3, 4}, -1, 1, 51, dtype, device);
        auto grad_of = [&](bool fused) {
          auto yy = y.clone().requires_grad_();
          auto out = fused ? fused_relu_pool(yy) : torch::max_pool2d(torch::relu(yy), {2, 2});
          out.backward(dout);
          return std::make_pair(out.detach(), yy.grad());
        };
        auto [lib_out, lib_dy] = grad_of(false);
        auto [fused_out, fused_dy] = grad_of(true);
        EXPECT_TRUE(torch::equal(fused_out, lib_out));
        EXPECT_TRUE(torch::equal(fused_dy, lib_dy));
        EXPECT_GT((lib_dy == 0).sum().item<int64_t>(), y.numel() * 3 / 4) << "dead windows and losers get none";
      }
}

// FrameConvolution's weight gradients, formed once over all frames, against LibTorch's frame-by-frame
// sum; input gradients per frame as LibTorch's. A second backward of the same graph collects its frames
// anew (the first's were consumed); a backward that asks for the inputs alone leaves the weights alone.
TEST(Fused, FrameConvolutionGradientsAreTheSumOverFrames) {
  for (torch::Device device : devices())
    for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32}) {
      SCOPED_TRACE(device.str() + (dtype == torch::kFloat64 ? " float64" : " float32"));
      const double tol = dtype == torch::kFloat64 ? 1e-12 : 2e-6;
      auto w0 = uniform({6, 5, 3, 3}, -0.3, 0.3, 30, dtype, device), b0 = uniform({6}, -0.3, 0.3, 31, dtype, device);
      std::vector<torch::Tensor> x;
      for (int t = 0; t < 4; ++t) x.push_back(uniform({2, 5, 8, 8}, -1, 1, 40 + t, dtype, device).requires_grad_());
      auto run = [&](bool batched, int backwards) {
        torch::Tensor w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
        FrameConvolution conv(w, b, batched, 4);
        torch::Tensor h = torch::zeros({2, 6, 8, 8}, x[0].options()), loss = torch::zeros({}, h.options());
        for (const auto& xt : x) {  // a recurrence, so that frames depend on earlier frames' outputs
          h = torch::tanh(conv(xt) + 0.5 * h);
          loss = loss + (h * h).sum();
        }
        for (int k = 0; k < backwards; ++k) loss.backward({}, /*retain_graph=*/true);
        auto dx = torch::autograd::grad({loss}, {x[0]}, {}, true);
        EXPECT_FALSE(w.grad().defined() && backwards == 0);
        return std::vector<torch::Tensor>{w.grad(), b.grad(), x[1].grad(), dx[0]};
      };
      for (auto& xt : x) xt.mutable_grad() = torch::Tensor();
      auto lib = run(false, 2);
      for (auto& xt : x) xt.mutable_grad() = torch::Tensor();
      auto batched = run(true, 2);
      for (size_t i = 0; i < lib.size(); ++i) EXPECT_CLOSE(batched[i], lib[i], tol) << "gradient " << i;
      for (auto& xt : x) xt.mutable_grad() = torch::Tensor();
      run(true, 0);
    }
}

// Frames written to FrameSlots are joined as a view of their buffer; anything else is concatenated, and
// a slot whose buffer was made for other sizes hands out a tensor of its own.
TEST(Fused, JoinFramesViewsSlottedFramesAndConcatenatesOthers) {
  for (auto format : {torch::MemoryFormat::Contiguous, torch::MemoryFormat::ChannelsLast}) {
    auto like = torch::zeros({1}, torch::kFloat32);
    c10::List<torch::Tensor> buffer;
    std::vector<torch::Tensor> slotted, separate;
    for (int64_t i = 0; i < 3; ++i) {
      torch::Tensor frame = FrameSlot{buffer, i, 3}.get({2, 3, 4, 5}, like, format);
      EXPECT_TRUE(frame.is_contiguous(format));
      frame.copy_(uniform({2, 3, 4, 5}, -1, 1, 60 + i, torch::kFloat32, torch::kCPU));
      slotted.push_back(frame);
      separate.push_back(frame.clone());
    }
    ASSERT_EQ(buffer.size(), 1u);
    const torch::Tensor whole = join_frames(slotted);
    EXPECT_EQ(whole.data_ptr(), buffer.get(0).data_ptr()) << "a view, not a copy";
    EXPECT_TRUE(torch::equal(whole, torch::cat(separate)));
    const int64_t before = frames_concatenated();
    EXPECT_NE(join_frames(separate).data_ptr(), separate[0].data_ptr());
    EXPECT_EQ(frames_concatenated(), before + 1);
    EXPECT_TRUE(torch::equal(join_frames(separate), whole));
    std::vector<torch::Tensor> backwards = {slotted[1], slotted[0]};  // side by side, out of order
    EXPECT_TRUE(torch::equal(join_frames(backwards), torch::cat({separate[1], separate[0]})));
    torch::Tensor other = FrameSlot{buffer, 1, 3}.get({2, 3, 4, 6}, like, format);  // not the buffer's sizes
    EXPECT_EQ(other.sizes(), (std::vector<int64_t>{2, 3, 4, 6}));
    EXPECT_FALSE(other.storage().is_alias_of(buffer.get(0).storage()));
  }
}

// The fused PredNet writes every convolution's inputs and output gradients to its frame slots, in both
// layouts, at L0 (where some layers' last frames get no gradient) and Lall: its backward concatenates
// nothing. (Slots handing out tensors of their own would only be slower, so no other test would fail.)
TEST(Fused, PredNetReadsEveryFrameInPlace) {
  for (torch::Device device : devices())
    for (bool nhwc : {false, true})
      for (const char* loss : {"L0", "Lall"}) {
        SCOPED_TRACE(device.str() + (nhwc ? " NHWC " : " NCHW ") + loss);
        if (device.is_cuda() && !nhwc) continue;  // CUDA is always channels-last
        PredNetOptions o = small(true);
        o.channels_last_on_cpu = nhwc;
        o.loss = loss;
        PredNet model = seeded(o, torch::kFloat32, device);
        auto x = uniform({2, 4, 1, 16, 16}, 0, 1, 9, torch::kFloat32, device);
        const int64_t before = frames_concatenated();
        prednet_loss(model->forward(x), x, loss).backward();
        EXPECT_EQ(frames_concatenated(), before);
        EXPECT_TRUE(model->parameters()[0].grad().defined());
      }
}

// A sequence whose convolution reads its inputs from slots (written by assemble_channels) and the
// output gradients from slots (written by the fused cell's backward) has the bits of the same sequence
// with tensors of their own, whose frames are concatenated: the same sums in the same order.
TEST(Fused, FrameSlotsGiveTheBitsOfConcatenatedFrames) {
  for (torch::Device device : devices())
    for (auto format : {torch::MemoryFormat::Contiguous, torch::MemoryFormat::ChannelsLast}) {
      SCOPED_TRACE(device.str() + (format == torch::MemoryFormat::Contiguous ? " NCHW" : " NHWC"));
      const int64_t frames = 4, u = 3;
      auto w0 = uniform({4 * u, 2 + u + 2, 3, 3}, -0.3, 0.3, 70, torch::kFloat32, device).contiguous(format),
           b0 = uniform({4 * u}, -0.3, 0.3, 71, torch::kFloat32, device);
      std::vector<torch::Tensor> e, above;
      for (int64_t t = 0; t < frames; ++t) {
        e.push_back(uniform({2, 2, 8, 8}, -1, 1, 80 + t, torch::kFloat32, device).contiguous(format).requires_grad_());
        above.push_back(uniform({2, 2, 8, 8}, -1, 1, 90 + t, torch::kFloat32, device).contiguous(format));
      }
      auto run = [&](bool slots) {
        torch::Tensor w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
        FrameConvolution conv(w, b, true, frames);
        torch::Tensor c = torch::zeros({2, u, 8, 8}, e[0].options()).contiguous(format), h = c.clone(),
                      loss = torch::zeros({}, c.options());
        for (int64_t t = 0; t < frames; ++t) {
          torch::Tensor z = assemble_channels(e[t], h, t % 2 ? above[t] : torch::zeros_like(above[t]),
                                              slots ? conv.input_slot(t) : FrameSlot{});
          FusedCell next = fused_lstm_cell(conv(z), c, {}, {}, slots ? conv.output_gradient_slot(t) : FrameSlot{});
          c = next.c;
          h = next.h;
          loss = loss + (h * h).sum();
        }
        loss.backward();
        return std::vector<torch::Tensor>{w.grad(), b.grad(), e[0].grad().clone(), e[3].grad().clone()};
      };
      auto plain = run(false);
      for (auto& t : e) t.mutable_grad() = torch::Tensor();
      auto slotted = run(true);
      for (auto& t : e) t.mutable_grad() = torch::Tensor();
      for (size_t k = 0; k < plain.size(); ++k) EXPECT_TRUE(torch::equal(slotted[k], plain[k])) << "gradient " << k;
    }
}

// The curvature probe differentiates the gradient again: through the fused ops that is LibTorch's
// derivative of the saved inputs (fused.h), so H·v matches the unfused model's.
TEST(Fused, HessianVectorProductThroughFusedOpsMatchesLibTorch) {
  for (torch::Device device : devices()) {
    SCOPED_TRACE(device.str());
    PredNet lib = seeded(small(false), torch::kFloat64, device), fused = seeded(small(true), torch::kFloat64, device);
    auto x = uniform({2, 4, 1, 16, 16}, 0, 1, 9, torch::kFloat64, device);
    auto hvp = [&](PredNet& m) {
      std::vector<torch::Tensor> params = m->parameters();
      auto grads = torch::autograd::grad({prednet_loss(m->forward(x), x, "L0")}, params, {}, true, true);
      torch::Tensor gv = torch::zeros({}, x.options());
      for (size_t k = 0; k < params.size(); ++k)
        gv = gv + (grads[k] * uniform(params[k].sizes().vec(), -1, 1, 100 + k, torch::kFloat64, device)).sum();
      auto h = torch::autograd::grad({gv}, params);
      std::vector<torch::Tensor> flat;
      for (const auto& t : h) flat.push_back(t.reshape({-1}));
      return torch::cat(flat);
    };
    EXPECT_CLOSE(hvp(fused), hvp(lib), 1e-10);
  }
}

TEST(Fused, AdamMatchesTheLibTorchOps) {
  for (torch::Device device : devices())
    for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32}) {
      SCOPED_TRACE(device.str() + (dtype == torch::kFloat64 ? " float64" : " float32"));
      auto start = uniform({1000}, -1, 1, 11, dtype, device);
      torch::Tensor p_lib = start.clone(), p_fused = start.clone();
      DeviceAdam::Options o;
      o.lr = 1e-2;
      DeviceAdam lib({p_lib}, o);
      o.fused = true;
      DeviceAdam fused({p_fused}, o);
      for (int step = 0; step < 5; ++step) {
        auto g = uniform({1000}, -1, 1, 20 + step, dtype, device);
        p_lib.mutable_grad() = g.clone();
        p_fused.mutable_grad() = g.clone();
        lib.step();
        fused.step();
      }
      // float32: m and v differ by fma's single rounding; the update is lr-sized, the parameter ~1.
      EXPECT_CLOSE(p_fused, p_lib, dtype == torch::kFloat64 ? 1e-14 : 1e-6);
      EXPECT_FALSE(torch::equal(p_fused, start));
    }
}

// The CUDA kernels and the CPU loops run the same per-element code: float64 results differ only where
// the device's exp/tanh differ from glibc's in the last bit.
TEST(Fused, CudaKernelsMatchTheCpuLoops) {
  if (devices().size() < 2) GTEST_SKIP() << "needs a CUDA device and the CUDA kernels";
  PredNet cpu = seeded(small(true), torch::kFloat64, torch::kCPU), gpu = seeded(small(true), torch::kFloat64, torch::kCUDA);
  auto x = uniform({2, 4, 1, 16, 16}, 0, 1, 9, torch::kFloat64, torch::kCPU);
  prednet_loss(cpu->forward(x), x, "L0").backward();
  prednet_loss(gpu->forward(x.cuda()), x.cuda(), "L0").backward();
  auto cp = cpu->named_parameters(), gp = gpu->named_parameters();
  for (const auto& p : cp) EXPECT_CLOSE(gp[p.key()].grad().cpu(), p.value().grad(), 1e-13) << p.key();
}

}  // namespace
}  // namespace saddlescope::trainer
