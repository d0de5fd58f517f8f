// Golden test of the trainer: the first steps of a tiny float64 autoencoder (24->16->4->16->24, batch 8,
// Adam) against an independent implementation in plain double loops — no torch in the reference. From
// the run's step-0 snapshot (the initial weights are LibTorch's draw, so they are read, not re-drawn)
// the reference redoes everything else: the data (uint8 / 255 in float32, widened), the example order
// (Fisher–Yates on mt19937_64(data_seed), a fresh permutation per epoch, batches spanning epochs),
// forward, MSE, hand-derived gradients, the global gradient norm and Adam. Every step's loss and
// gradient norm (metrics.csv) and every snapshot's parameters must agree to kTolerance: float64
// rounding-order differences are ~1e-15, so a change to any of those pieces — one that moves every bit
// of a float32 run but leaves its statistics alone — fails here rather than passing silently.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/train.h"
#include "small_run.h"
#include "temp_dir.h"

namespace saddlescope::trainer {
namespace {

// Relative: |run − reference| / |reference| for the loss and the gradient norm; for a parameter
// tensor max|run − reference| / max|reference| over its elements.
constexpr double kTolerance = 1e-12;

// The documented example order, written again: Fisher–Yates from the last position down, each index
// drawn below i+1 by rejecting draws at or above the largest multiple of i+1 that fits in 64 bits.
class ReferenceOrder {
 public:
  ReferenceOrder(int64_t n, uint64_t seed) : rng_(seed), perm_(static_cast<size_t>(n)), pos_(perm_.size()) {}
  int64_t next() {
    if (pos_ == perm_.size()) {
      std::iota(perm_.begin(), perm_.end(), int64_t{0});
      for (size_t i = perm_.size() - 1; i > 0; --i) {
        const uint64_t bound = i + 1, limit = std::numeric_limits<uint64_t>::max() / bound * bound;
        uint64_t r = rng_();
        while (r >= limit) r = rng_();
        std::swap(perm_[i], perm_[r % bound]);
      }
      pos_ = 0;
    }
    return perm_[pos_++];
  }

 private:
  std::mt19937_64 rng_;
  std::vector<int64_t> perm_;
  size_t pos_;
};

// One Linear layer y = x·Wᵀ + b with its gradient and Adam moments; weight row-major (out, in).
struct Layer {
  std::string name;
  int64_t in = 0, out = 0;
  std::vector<double> w, b, gw, gb, mw, mb, vw, vb;
};

const std::vector<double>& values(const store::Snapshot& snap, const std::string& name, int64_t numel,
                                  std::vector<double>* out) {
  auto it = snap.find(name);
  SADDLESCOPE_CHECK(it != snap.end() && it->second.dtype == store::Dtype::kFloat64 && it->second.numel() == numel);
  out->assign(it->second.data<double>(), it->second.data<double>() + numel);
  return *out;
}

// Loss of the batch `x` (B rows of d) and every layer's gradient, by hand: forward with ReLU hidden
// layers and a sigmoid output, mean squared error over B·d, then the chain rule backwards.
double loss_and_grads(std::vector<Layer>& net, const std::vector<double>& x, int64_t B) {
  const size_t L = net.size();
  std::vector<std::vector<double>> a(L + 1), z(L);  // a[l]: input of layer l, (B, in)
  a[0] = x;
  for (size_t l = 0; l < L; ++l) {
    const Layer& k = net[l];
    z[l].assign(B * k.out, 0);
    a[l + 1].assign(B * k.out, 0);
    for (int64_t r = 0; r < B; ++r)
      for (int64_t o = 0; o < k.out; ++o) {
        double s = k.b[o];
        for (int64_t i = 0; i < k.in; ++i) s += a[l][r * k.in + i] * k.w[o * k.in + i];
        z[l][r * k.out + o] = s;
        a[l + 1][r * k.out + o] = l + 1 < L ? (s > 0 ? s : 0) : 1 / (1 + std::exp(-s));
      }
  }
  const std::vector<double>& y = a[L];
  const double count = static_cast<double>(y.size());
  double loss = 0;
  std::vector<double> dz(y.size());  // dLoss/dz of the current layer, (B, out)
  for (size_t e = 0; e < y.size(); ++e) {
    const double diff = y[e] - x[e];
    loss += diff * diff;
    dz[e] = 2 * diff / count * y[e] * (1 - y[e]);  // through the sigmoid
  }
  for (size_t l = L; l-- > 0;) {
    Layer& k = net[l];
    k.gw.assign(k.w.size(), 0);
    k.gb.assign(k.b.size(), 0);
    std::vector<double> da(B * k.in, 0);
    for (int64_t r = 0; r < B; ++r)
      for (int64_t o = 0; o < k.out; ++o) {
        const double d = dz[r * k.out + o];
        k.gb[o] += d;
        for (int64_t i = 0; i < k.in; ++i) {
          k.gw[o * k.in + i] += d * a[l][r * k.in + i];
          da[r * k.in + i] += d * k.w[o * k.in + i];
        }
      }
    if (l > 0)  // through the ReLU of the layer below: zero where its pre-activation was <= 0
      for (size_t e = 0; e < da.size(); ++e) da[e] = z[l - 1][e] > 0 ? da[e] : 0;
    dz = std::move(da);
  }
  return loss / count;
}

// Adam as documented in adam.h: θ ← θ − (lr/(1−β1ᵗ))·m / (√v/√(1−β2ᵗ) + ε), β powers as running products.
struct ReferenceAdam {
  double lr, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, beta1_power = 1, beta2_power = 1;
  void begin_step() {
    beta1_power *= beta1;
    beta2_power *= beta2;
  }
  void update(std::vector<double>& p, const std::vector<double>& g, std::vector<double>& m, std::vector<double>& v) const {
    const double step_size = lr / (1 - beta1_power), root_correction2 = std::sqrt(1 - beta2_power);
    for (size_t e = 0; e < p.size(); ++e) {
      m[e] = beta1 * m[e] + (1 - beta1) * g[e];
      v[e] = beta2 * v[e] + (1 - beta2) * g[e] * g[e];
      p[e] -= m[e] * step_size / (std::sqrt(v[e]) / root_correction2 + eps);
    }
  }
};

// max|run − ref| / max|ref| over one parameter tensor.
double tensor_diff(const std::vector<double>& run, const std::vector<double>& ref) {
  double diff = 0, scale = 0;
  for (size_t e = 0; e < ref.size(); ++e) {
    diff = std::max(diff, std::fabs(run[e] - ref[e]));
    scale = std::max(scale, std::fabs(ref[e]));
  }
  return diff / scale;
}

TEST(Golden, Float64AutoencoderMatchesPlainLoopsStepByStep) {
  testing::TempDir dir;
  const int64_t n = 60, d = 24;  // 60 rows at batch 8: batches straddle the epoch ends (steps 7, 14)
  RunConfig cfg = testing::small_config(dir, testing::write_pixels(dir, n, d));
  cfg.execution.dtype = Dtype::kFloat64;
  cfg.steps = 20;
  cfg.snapshot_every = 1;
  auto r = train(cfg, {true, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->status, store::RunStatus::kCompleted);
  auto run = store::RunDir::open(r->run_dir);
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto metrics = run->metrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status().message();
  ASSERT_EQ(metrics->size(), static_cast<size_t>(cfg.steps));

  // The data as the dataset scales it: uint8 → float32, divided by 255 in float32, widened exactly.
  auto pixels = store::read_npy(cfg.data.substr(4));
  ASSERT_TRUE(pixels.ok()) << pixels.status().message();
  std::vector<double> data(n * d);
  for (int64_t e = 0; e < n * d; ++e)
    data[e] = static_cast<double>(static_cast<float>(pixels->data<uint8_t>()[e]) / 255.0f);

  // The network from the step-0 snapshot: encoder d→16→4, decoder mirrored.
  std::vector<int64_t> widths = {d};
  widths.insert(widths.end(), cfg.hidden.begin(), cfg.hidden.end());
  const size_t half = widths.size() - 1;
  for (size_t i = half; i-- > 0;) widths.push_back(widths[i]);
  std::vector<Layer> net;
  auto snap0 = run->snapshot(0);
  ASSERT_TRUE(snap0.ok()) << snap0.status().message();
  ASSERT_EQ(snap0->size(), 2 * (widths.size() - 1));
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    Layer k;
    k.name = (l < half ? "encoder.fc" + std::to_string(l + 1) : "decoder.fc" + std::to_string(l - half + 1));
    k.in = widths[l];
    k.out = widths[l + 1];
    values(*snap0, k.name + ".weight", k.in * k.out, &k.w);
    values(*snap0, k.name + ".bias", k.out, &k.b);
    k.mw.assign(k.w.size(), 0), k.vw.assign(k.w.size(), 0), k.mb.assign(k.b.size(), 0), k.vb.assign(k.b.size(), 0);
    net.push_back(std::move(k));
  }

  ReferenceOrder order(n, static_cast<uint64_t>(cfg.data_seed));
  ReferenceAdam adam{cfg.lr};
  double loss_diff = 0, norm_diff = 0, param_diff = 0;
  auto compare_params = [&](int64_t step) {
    auto snap = run->snapshot(step);
    ASSERT_TRUE(snap.ok()) << snap.status().message();
    std::vector<double> got;
    for (const Layer& k : net) {
      double dw = tensor_diff(values(*snap, k.name + ".weight", k.in * k.out, &got), k.w);
      double db = tensor_diff(values(*snap, k.name + ".bias", k.out, &got), k.b);
      param_diff = std::max({param_diff, dw, db});
      EXPECT_LE(std::max(dw, db), kTolerance) << k.name << " at step " << step << ": weight " << dw << ", bias " << db;
    }
  };
  for (int64_t step = 0; step < cfg.steps; ++step) {
    compare_params(step);
    std::vector<double> batch;
    for (int64_t b = 0; b < cfg.batch_size; ++b) {
      const int64_t row = order.next();
      batch.insert(batch.end(), data.begin() + row * d, data.begin() + (row + 1) * d);
    }
    const double loss = loss_and_grads(net, batch, cfg.batch_size);
    double sq = 0;
    for (const Layer& k : net) {
      for (double g : k.gw) sq += g * g;
      for (double g : k.gb) sq += g * g;
    }
    const double norm = std::sqrt(sq);
    const store::MetricsRow& row = (*metrics)[step];
    ASSERT_EQ(row.step, step);
    EXPECT_EQ(row.lr, cfg.lr);
    const double dl = std::fabs(row.loss - loss) / loss, dn = std::fabs(row.batch_grad_norm - norm) / norm;
    loss_diff = std::max(loss_diff, dl);
    norm_diff = std::max(norm_diff, dn);
    EXPECT_LE(dl, kTolerance) << "step " << step << ": loss " << row.loss << ", reference " << loss;
    EXPECT_LE(dn, kTolerance) << "step " << step << ": grad norm " << row.batch_grad_norm << ", reference " << norm;
    adam.begin_step();
    for (Layer& k : net) {
      adam.update(k.w, k.gw, k.mw, k.vw);
      adam.update(k.b, k.gb, k.mb, k.vb);
    }
    if (HasFailure()) break;  // report the first step that differs, not every one after it
  }
  if (!HasFailure()) compare_params(cfg.steps);  // the final snapshot, after the last update
  std::printf("[ max diff ] %lld float64 steps vs plain loops: loss rel %.3g, batch_grad_norm rel %.3g, "
              "parameters (max abs / max |θ| per tensor) %.3g; tolerance %.0e\n",
              static_cast<long long>(cfg.steps), loss_diff, norm_diff, param_diff, kTolerance);
}

}  // namespace
}  // namespace saddlescope::trainer
