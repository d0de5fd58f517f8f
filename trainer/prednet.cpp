#include "saddlescope/trainer/prednet.h"

#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "saddlescope/base/text.h"
#include "saddlescope/trainer/fused.h"

namespace saddlescope::trainer {
namespace {

bool known_loss(const std::string& loss) { return loss == "L0" || loss == "Lall" || loss == "pixel_mse"; }

std::string list(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

torch::nn::Conv2d make_conv(int64_t in, int64_t out, int64_t k) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, k).padding(k / 2));
}

// Nearest-neighbour x2 upsampling as a view and one copy: (B, C, h, w) -> (B, C, 2h, 2w). Written out
// rather than through interpolate() so that it is the same kernel on every LibTorch version.
//
// On the CPU the columns are doubled by a stack instead of the expand: the expand's backward is a sum
// over the two innermost size-2 dims, which LibTorch's CPU reduction does slowly (12 ms of a 370 ms
// one-thread step); this way the backward is one add of two strided views (left + right), then a sum
// over a middle size-2 dim (top + bottom): the order LibTorch 1.13's sum takes (same bits, checked),
// now explicit, in 1 ms. Both duplications keep a single edge to x: stacking x with itself would add
// x's two gradients into x's buffer one at a time, between its other consumers' gradients, and round
// differently. The GPU keeps the expand (one kernel each way).
torch::Tensor upsample2(const torch::Tensor& x) {
  auto s = x.sizes();
  if (x.is_cpu()) {
    auto rows = x.unsqueeze(3).expand({s[0], s[1], s[2], 2, s[3]}).reshape({s[0], s[1], 2 * s[2], s[3]});
    return torch::stack({rows, rows}, 4).view({s[0], s[1], 2 * s[2], 2 * s[3]});
  }
  return x.unsqueeze(3).unsqueeze(5)
      .expand({s[0], s[1], s[2], 2, s[3], 2})
      .reshape({s[0], s[1], 2 * s[2], 2 * s[3]});
}

}  // namespace

Status validate(const PredNetOptions& o) {
  auto bad = [](const std::string& field, const std::string& what) {
    return Status::Error("prednet." + field + " must be " + what);
  };
  const auto layers = static_cast<int64_t>(o.stack_sizes.size());
  if (layers < 1) return bad("stack_sizes", "non-empty (one entry per layer), got ()");
  for (int64_t s : o.stack_sizes)
    if (s < 1) return bad("stack_sizes", "all >= 1, got " + list(o.stack_sizes));
  if (static_cast<int64_t>(o.r_stack_sizes.size()) != layers)
    return bad("r_stack_sizes",
               "one entry per layer (" + std::to_string(layers) + "), got " + list(o.r_stack_sizes));
  for (int64_t s : o.r_stack_sizes)
    if (s < 1) return bad("r_stack_sizes", "all >= 1, got " + list(o.r_stack_sizes));
  // Each layer above the first halves the resolution; upsampling must give back the exact size.
  const int64_t div = int64_t{1} << (layers - 1);
  const std::string divisible = "a positive multiple of 2^(layers-1) = " + std::to_string(div) + " (" +
                                std::to_string(layers) + " layers), got ";
  if (o.height < 1 || o.height % div) return bad("height", divisible + std::to_string(o.height));
  if (o.width < 1 || o.width % div) return bad("width", divisible + std::to_string(o.width));
  if (o.filter_size < 1 || o.filter_size % 2 == 0)
    return bad("filter_size", "odd and >= 1, got " + std::to_string(o.filter_size));
  if (o.nt < 2) return bad("nt", ">= 2, got " + std::to_string(o.nt));
  if (!known_loss(o.loss)) return bad("loss", "one of L0, Lall, pixel_mse, got '" + printable(o.loss) + "'");
  if (!(o.pixel_max > 0) || !std::isfinite(o.pixel_max))
    return bad("pixel_max", "> 0 and finite, got " + std::to_string(o.pixel_max));
  return Status::Ok();
}

PredNetImpl::PredNetImpl(const PredNetOptions& options) : options_(options) {
  SADDLESCOPE_CHECK(validate(options).ok());
  const auto& a = options.stack_sizes;
  const auto& r = options.r_stack_sizes;
  const int64_t n = layers(), k = options.filter_size;
  for (int64_t l = 0; l < n; ++l) {
    auto module = std::make_shared<torch::nn::Module>();
    auto lstm = std::make_shared<torch::nn::Module>();
    Layer layer;
    if (l > 0) layer.conv_a = module->register_module("conv_a", make_conv(2 * a[l - 1], a[l], k));
    // The gates see [E_l (2 a_l); R_l (r_l); upsample(R_{l+1}) (r_{l+1}, below the top)].
    const int64_t in = 2 * a[l] + r[l] + (l + 1 < n ? r[l + 1] : 0);
    layer.i = lstm->register_module("i", make_conv(in, r[l], k));
    layer.f = lstm->register_module("f", make_conv(in, r[l], k));
    layer.o = lstm->register_module("o", make_conv(in, r[l], k));
    layer.c = lstm->register_module("c", make_conv(in, r[l], k));
    module->register_module("lstm", lstm);
    layer.conv_ahat = module->register_module("conv_ahat", make_conv(r[l], a[l], k));
    register_module("l" + std::to_string(l), module);
    layers_.push_back(layer);
  }
}

std::vector<torch::Tensor> PredNetImpl::readers_of_r(int64_t l) const {
  const auto& a = options_.stack_sizes;
  const auto& r = options_.r_stack_sizes;
  std::vector<torch::Tensor> readers;
  const Layer& L = layers_[l];
  for (const auto* g : {&L.i, &L.f, &L.o, &L.c}) readers.push_back((*g)->weight.narrow(1, 2 * a[l], r[l]));
  readers.push_back(L.conv_ahat->weight);
  if (l > 0) {
    const Layer& below = layers_[l - 1];
    for (const auto* g : {&below.i, &below.f, &below.o, &below.c})
      readers.push_back((*g)->weight.narrow(1, 2 * a[l - 1] + r[l - 1], r[l]));
  }
  return readers;
}

std::vector<probes::LayerUnits> PredNetImpl::unit_layers() const {
  std::vector<probes::LayerUnits> units;
  for (int64_t l = 0; l < layers(); ++l) {
    const int64_t channels = options_.r_stack_sizes[l];
    if (channels < 2) continue;
    const Layer& L = layers_[l];
    std::vector<torch::Tensor> in, out;
    for (const auto* g : {&L.i, &L.f, &L.o, &L.c}) {
      in.push_back((*g)->weight.detach().reshape({channels, -1}));
      in.push_back((*g)->bias.detach().reshape({channels, 1}));
    }
    for (const auto& w : readers_of_r(l)) out.push_back(w.detach().transpose(0, 1).reshape({channels, -1}));
    units.push_back({"l" + std::to_string(l) + ".r", torch::cat(in, 1), at::Tensor(), torch::cat(out, 1).t()});
  }
  return units;
}

void PredNetImpl::duplicate_channels(int64_t l, const std::vector<int64_t>& channels) {
  const Layer& L = layers_[l];
  const int64_t first = channels[0];
  for (const auto* g : {&L.i, &L.f, &L.o, &L.c})
    for (size_t k = 1; k < channels.size(); ++k) {
      (*g)->weight[channels[k]].copy_((*g)->weight[first]);
      (*g)->bias[channels[k]].copy_((*g)->bias[first]);
    }
  for (const auto& w : readers_of_r(l))
    for (size_t k = 1; k < channels.size(); ++k) w.select(1, channels[k]).copy_(w.select(1, first));
}

void PredNetImpl::tap(const char* what, int64_t l, int64_t t, const torch::Tensor& v) const {
  if (tap_) tap_("l" + std::to_string(l) + "." + what, t, v);
}

torch::Tensor PredNetImpl::conv(const FrameConvolution& c, const torch::Tensor& in, int64_t l, const char* what) const {
  torch::Tensor y = options_.fused ? c.without_bias(in) : c(in);
  if (op_taps_ && op_taps_->armed()) {
    // The tap sees the convolution with its bias on either path: fused, the output plus the bias (the
    // sum the fused op forms as it reads), whose gradient arrives at y.
    const torch::Tensor seen = options_.fused ? plus_bias(y.detach(), c.bias().detach()) : y;
    op_taps_->conv2d("l" + std::to_string(l) + "." + what, in, c.weight(), c.bias(), {1, c.padding(), 1}, seen, y);
  }
  return y;
}

torch::Tensor PredNetImpl::activate(Activation f, const torch::Tensor& in, int64_t l, const char* what) const {
  torch::Tensor y = f == Activation::kSigmoid ? torch::sigmoid(in) : f == Activation::kTanh ? torch::tanh(in) : torch::relu(in);
  tap_elementwise(l, what, in, y);
  return y;
}

void PredNetImpl::tap_elementwise(int64_t l, const char* what, const torch::Tensor& in, const torch::Tensor& y) const {
  if (op_taps_ && op_taps_->armed()) op_taps_->elementwise("l" + std::to_string(l) + "." + what, in, y);
}

std::vector<probes::TapOp> PredNetImpl::tap_ops(int64_t batch, int64_t frames) const {
  const auto& a = options_.stack_sizes;
  const auto& r = options_.r_stack_sizes;
  const int64_t n = layers(), kk = options_.filter_size * options_.filter_size;
  std::vector<probes::TapOp> ops;
  auto add = [&](int64_t l, const std::string& what, const char* kernel, int64_t per_frame, int64_t weights) {
    ops.push_back({"l" + std::to_string(l) + "." + what, kernel, frames * batch * per_frame, weights, frames});
  };
  for (int64_t l = 0; l < n; ++l) {
    const int64_t pixels = (options_.height >> l) * (options_.width >> l);
    if (l > 0) {
      const int64_t below = (options_.height >> (l - 1)) * (options_.width >> (l - 1));  // conv_a runs before pooling
      add(l, "conv_a", "conv2d", a[l] * below, a[l] * 2 * a[l - 1] * kk);
      if (!options_.fused) add(l, "conv_a.relu", "relu", a[l] * below, 0);
    }
    const int64_t in = 2 * a[l] + r[l] + (l + 1 < n ? r[l + 1] : 0);
    add(l, "lstm", "conv2d", 4 * r[l] * pixels, 4 * r[l] * in * kk);  // gates i, f, o, c stacked
    add(l, "lstm.ifo.sigmoid", "sigmoid", 3 * r[l] * pixels, 0);
    add(l, "lstm.c.tanh", "tanh", r[l] * pixels, 0);
    add(l, "cell.tanh", "tanh", r[l] * pixels, 0);
    add(l, "conv_ahat", "conv2d", a[l] * pixels, a[l] * r[l] * kk);
    if (!options_.fused) add(l, "conv_ahat.relu", "relu", a[l] * pixels, 0);
  }
  return ops;
}

PredNetOutput PredNetImpl::forward(const torch::Tensor& x) {
  const auto& a_sizes = options_.stack_sizes;
  const auto& r_sizes = options_.r_stack_sizes;
  SADDLESCOPE_CHECK(x.dim() == 5 && x.size(1) >= 1 && x.size(2) == a_sizes[0] &&
                    x.size(3) == options_.height && x.size(4) == options_.width);
  const int64_t batch = x.size(0), frames = x.size(1), n = layers();

  // kernels = fused on CUDA keeps every activation channels-last (NHWC): cuDNN's TF32 convolutions are
  // NHWC, and NCHW tensors cost two layout transposes per convolution (687 kernels of a batch-16 step
  // on the H100, docs/benchmarks.md). The weights are converted once per forward. Not on the CPU, where
  // channels-last convolutions were slower.
  const bool nhwc = options_.fused && (x.is_cuda() || options_.channels_last_on_cpu);
  const auto layout = nhwc ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
  auto in_layout = [&](const torch::Tensor& t) { return nhwc ? t.contiguous(layout) : t; };

  // Layer 0's targets x[:, t], (T, B, C, H, W). Channels-last frames of x are not contiguous at B > 1
  // (their batch rows are T frames apart), so the error op would copy each one: one frame-major copy
  // of the whole sequence instead.
  torch::Tensor targets = x.transpose(0, 1);
  if (nhwc && !targets[0].is_contiguous(layout))
    targets = x.permute({1, 0, 3, 4, 2}).contiguous().permute({0, 1, 4, 2, 3});

  // State carried between frames, per layer: E_l, R_l and the LSTM cell C_l, zero before frame 0.
  std::vector<torch::Tensor> e(n), r(n), cell(n);
  // torch::zeros drops a memory format (LibTorch 1.13 and 2.x): empty, then zero, in the layout.
  auto zeros = [&](torch::IntArrayRef sizes) { return torch::empty(sizes, x.options().memory_format(layout)).zero_(); };
  for (int64_t l = 0; l < n; ++l) {
    const int64_t h = options_.height >> l, w = options_.width >> l;
    e[l] = zeros({batch, 2 * a_sizes[l], h, w});
    r[l] = zeros({batch, r_sizes[l], h, w});
    cell[l] = zeros({batch, r_sizes[l], h, w});
  }

  // The four gate convolutions of a layer run as one, their filters stacked on the output channels
  // (i, f, o, c): per frame one convolution and two activations instead of four and four — a PredNet
  // step is thousands of tiny kernels, and their count is its time on a GPU. Same math per output.
  // With fused kernels each convolution's weight gradients are formed once over all frames
  // (FrameConvolution), and the ops that make its inputs and their gradients write them to its frame
  // slots, where that weight gradient reads them in place.
  std::vector<FrameConvolution> gate_conv(n), ahat_conv(n), a_conv(n);
  for (int64_t l = 0; l < n; ++l) {
    Layer& L = layers_[l];
    auto weights = [&](const torch::Tensor& w, const torch::Tensor& b) {
      torch::Tensor seen = in_layout(w);
      // A weight-gradient tap reads the .grad of the weight the convolution saw (the stacked filters, a
      // channels-last copy): kept only at tap steps.
      if (op_taps_ && op_taps_->armed() && seen.requires_grad()) seen.retain_grad();
      return FrameConvolution(seen, b, options_.fused, frames);
    };
    gate_conv[l] = weights(torch::cat({L.i->weight, L.f->weight, L.o->weight, L.c->weight}),
                           torch::cat({L.i->bias, L.f->bias, L.o->bias, L.c->bias}));
    ahat_conv[l] = weights(L.conv_ahat->weight, L.conv_ahat->bias);
    if (l > 0) a_conv[l] = weights(L.conv_a->weight, L.conv_a->bias);
  }

  // With fused kernels E's means are taken once per layer over all frames (2 kernels, not one per
  // frame), and only the layers the configured loss weighs carry a gradient: the others' would take a
  // backward of zeros.
  std::vector<std::vector<torch::Tensor>> e_frames(n);
  std::vector<bool> weighed(n, false);
  if (options_.fused && options_.loss != "pixel_mse") {
    std::vector<double> w = prednet_layer_weights(options_.loss, n);
    for (int64_t l = 0; l < n; ++l) weighed[l] = w[l] != 0;
  }

  std::vector<torch::Tensor> predictions, errors;
  for (int64_t t = 0; t < frames; ++t) {
    // Top-down: R_l from this layer's E and R of the previous frame and the new R_{l+1}.
    for (int64_t l = n - 1; l >= 0; --l) {
      const int64_t units = r_sizes[l];
      torch::Tensor z, above;
      if (l + 1 < n)
        above = nhwc ? torch::upsample_nearest2d(r[l + 1], {r[l].size(2), r[l].size(3)}) : upsample2(r[l + 1]);
      if (options_.fused) z = assemble_channels(e[l], r[l], above, gate_conv[l].input_slot(t));
      else z = above.defined() ? torch::cat({e[l], r[l], above}, 1) : torch::cat({e[l], r[l]}, 1);
      auto gates = conv(gate_conv[l], z, l, "lstm");
      const bool armed = op_taps_ && op_taps_->armed();
      torch::Tensor i, f, o, g;
      if (options_.fused) {
        FusedCell next = fused_lstm_cell(gates, cell[l], gate_conv[l].bias_seen(), ahat_conv[l].input_slot(t),
                                         gate_conv[l].output_gradient_slot(t));
        i = next.act.narrow(1, 0, units), f = next.act.narrow(1, units, units);
        o = next.act.narrow(1, 2 * units, units), g = next.act.narrow(1, 3 * units, units);
        if (armed) {  // the fused cell's activations against the same exact references
          const torch::Tensor pre = plus_bias(gates.detach(), gate_conv[l].bias().detach());  // what the cell read
          tap_elementwise(l, "lstm.ifo.sigmoid", pre.narrow(1, 0, 3 * units).contiguous(),
                          next.act.narrow(1, 0, 3 * units).contiguous());
          tap_elementwise(l, "lstm.c.tanh", pre.narrow(1, 3 * units, units).contiguous(), g.contiguous());
          tap_elementwise(l, "cell.tanh", next.c.contiguous(), next.tc.contiguous());
        }
        cell[l] = next.c;
        r[l] = next.h;
      } else {
        // A tap reads the op's input through a contiguous copy (only at tap steps).
        auto ifo_in = gates.narrow(1, 0, 3 * units), c_in = gates.narrow(1, 3 * units, units);
        auto ifo = activate(Activation::kSigmoid, armed ? ifo_in.contiguous() : ifo_in, l, "lstm.ifo.sigmoid");
        i = ifo.narrow(1, 0, units), f = ifo.narrow(1, units, units), o = ifo.narrow(1, 2 * units, units);
        g = activate(Activation::kTanh, armed ? c_in.contiguous() : c_in, l, "lstm.c.tanh");
        cell[l] = f * cell[l] + i * g;
        r[l] = o * activate(Activation::kTanh, cell[l], l, "cell.tanh");
      }
      if (tap_) {
        tap("lstm.i", l, t, i);
        tap("lstm.f", l, t, f);
        tap("lstm.o", l, t, o);
        tap("lstm.c", l, t, g);
        tap("cell", l, t, cell[l]);
        tap("r", l, t, r[l]);
      }
    }
    // Bottom-up: predictions, targets and errors of this frame.
    std::vector<torch::Tensor> frame_errors(n);
    for (int64_t l = 0; l < n; ++l) {
      torch::Tensor y = conv(ahat_conv[l], r[l], l, "conv_ahat"), ahat, a;
      if (!options_.fused) ahat = activate(Activation::kRelu, y, l, "conv_ahat.relu");
      if (l == 0) {
        if (!options_.fused) ahat = torch::clamp_max(ahat, options_.pixel_max);
        a = targets[t];
      } else {
        torch::Tensor y_a = conv(a_conv[l], e[l - 1], l, "conv_a");
        a = options_.fused ? fused_relu_pool(y_a, a_conv[l].bias_seen(), a_conv[l].output_gradient_slot(t))
                           : torch::max_pool2d(activate(Activation::kRelu, y_a, l, "conv_a.relu"), {2, 2});
      }
      if (options_.fused) {
        // E_l goes where the layer above's conv_a reads it; y's gradient where conv_ahat's weights do.
        FusedError err = fused_error_units(y, a, l == 0 ? options_.pixel_max : std::numeric_limits<double>::infinity(),
                                           ahat_conv[l].bias_seen(), l + 1 < n ? a_conv[l + 1].input_slot(t) : FrameSlot{},
                                           ahat_conv[l].output_gradient_slot(t));
        e[l] = err.e;
        ahat = err.ahat;
      } else {
        auto diff = a - ahat;
        e[l] = torch::relu(torch::cat({diff, -diff}, 1));  // [ReLU(A - Â); ReLU(Â - A)]
      }
      if (l == 0) predictions.push_back(ahat);
      if (options_.fused) e_frames[l].push_back(weighed[l] ? e[l] : e[l].detach());
      else frame_errors[l] = e[l].mean({1, 2, 3});  // (batch)
      if (tap_) {
        tap("ahat", l, t, ahat);
        tap("a", l, t, a);
        tap("e", l, t, e[l]);
      }
    }
    if (!options_.fused) errors.push_back(torch::stack(frame_errors, 1));  // (batch, L)
  }
  if (options_.fused) {
    for (int64_t l = 0; l < n; ++l) errors.push_back(torch::stack(e_frames[l], 1).mean({2, 3, 4}));  // (batch, T)
    return {torch::stack(predictions, 1), torch::stack(errors, 2)};
  }
  return {torch::stack(predictions, 1), torch::stack(errors, 1)};
}

void PredNetImpl::reset_parameters(at::Generator& gen) {
  torch::NoGradGuard no_grad;
  auto init = [&](torch::nn::Conv2d& c) {
    const auto& w = c->weight;
    double bound = 1.0 / std::sqrt(static_cast<double>(w.size(1) * w.size(2) * w.size(3)));
    c->weight.uniform_(-bound, bound, gen);
    if (options_.zero_bias)
      c->bias.zero_();
    else
      c->bias.uniform_(-bound, bound, gen);
  };
  for (Layer& L : layers_) {
    if (L.conv_a) init(L.conv_a);
    for (auto* c : {&L.i, &L.f, &L.o, &L.c, &L.conv_ahat}) init(*c);
  }
}

Result<PredNet> make_prednet(const PredNetOptions& options) {
  SADDLESCOPE_RETURN_IF_ERROR(validate(options));
  return PredNet(options);
}

std::vector<double> prednet_layer_weights(const std::string& loss, int64_t layers) {
  SADDLESCOPE_CHECK((loss == "L0" || loss == "Lall") && layers >= 1);
  std::vector<double> w(layers, loss == "Lall" ? 0.1 : 0.0);
  w[0] = 1.0;
  return w;
}

torch::Tensor pixel_mse(const torch::Tensor& later_prediction, const torch::Tensor& later_frames) {
  // Equal weights 1/(T-1) over t >= 1 make this the mean over those frames. torch::mse_loss, as the
  // planted fault's loss_against runs it: the two configs then differ in the target alone.
  return torch::mse_loss(later_prediction, later_frames);
}

torch::Tensor prednet_loss(const PredNetOutput& out, const torch::Tensor& x, const std::string& loss) {
  SADDLESCOPE_CHECK(known_loss(loss) && x.dim() == 5 && x.size(1) >= 2);
  const int64_t frames = x.size(1);
  if (loss == "pixel_mse") return pixel_mse(out.prediction.narrow(1, 1, frames - 1), x.narrow(1, 1, frames - 1));
  // Mean over t >= 1 (time weights 0, then 1/(T-1)), then the layer weights as scalars: no weight
  // tensor to build on the host and copy to the device every step.
  auto per_layer = out.errors.narrow(1, 1, frames - 1).mean(1);  // (batch, L)
  std::vector<double> w = prednet_layer_weights(loss, per_layer.size(1));
  torch::Tensor total = per_layer.select(1, 0) * w[0];
  for (size_t l = 1; l < w.size(); ++l)
    if (w[l] != 0) total = total + per_layer.select(1, static_cast<int64_t>(l)) * w[l];
  return total.mean();
}

FrameScores score_predictions(const torch::Tensor& prediction, const torch::Tensor& x) {
  SADDLESCOPE_CHECK(prediction.dim() == 5 && prediction.sizes() == x.sizes() && x.size(1) >= 2);
  torch::NoGradGuard no_grad;
  const int64_t frames = x.size(1);
  auto next = x.narrow(1, 1, frames - 1);
  auto per_frame = [&](const torch::Tensor& guess) {
    auto mse = (guess - next).pow(2).to(torch::kFloat64).mean({0, 2, 3, 4}).cpu().contiguous();
    return std::vector<double>(mse.data_ptr<double>(), mse.data_ptr<double>() + mse.numel());
  };
  FrameScores s;
  s.model_mse = per_frame(prediction.narrow(1, 1, frames - 1));
  s.previous_mse = per_frame(x.narrow(1, 0, frames - 1));
  for (size_t i = 0; i < s.model_mse.size(); ++i) {
    s.model_mean += s.model_mse[i];
    s.previous_mean += s.previous_mse[i];
  }
  s.model_mean /= static_cast<double>(s.model_mse.size());
  s.previous_mean /= static_cast<double>(s.previous_mse.size());
  return s;
}

}  // namespace saddlescope::trainer
