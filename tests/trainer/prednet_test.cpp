#include "saddlescope/trainer/prednet.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "saddlescope/trainer/mnist.h"
#include "saddlescope/trainer/moving_mnist.h"

namespace saddlescope::trainer {
namespace {

PredNetOptions tiny(std::vector<int64_t> stacks, std::vector<int64_t> r_stacks, int64_t side, int64_t nt) {
  PredNetOptions o;
  o.stack_sizes = std::move(stacks);
  o.r_stack_sizes = std::move(r_stacks);
  o.height = o.width = side;
  o.nt = nt;
  return o;
}

PredNet seeded(const PredNetOptions& o, uint64_t seed) {
  PredNet model(o);
  auto gen = at::detail::createCPUGenerator(seed);
  model->reset_parameters(gen);
  return model;
}

// Frames in [0, 1] drawn from their own generator: (batch, T, C, H, W).
torch::Tensor random_frames(std::vector<int64_t> shape, uint64_t seed, torch::Dtype dtype = torch::kFloat32) {
  auto gen = at::detail::createCPUGenerator(seed);
  return torch::empty(shape, torch::dtype(dtype)).uniform_(0, 1, gen);
}

// Moving squares of 6x6 on a 16x16 canvas, (batch, T, 1, 16, 16): learnable motion without MNIST.
torch::Tensor moving_squares(int64_t batch, int64_t frames, uint64_t seed, int64_t first = 0) {
  IdxArray square{{1, 6, 6}, std::vector<uint8_t>(36, 255)};
  MovingMnistOptions o;
  o.canvas = 16, o.digits = 1, o.frames = frames, o.seed = seed;
  auto data = MovingMnist::create(o, square);
  return frames_to_input(data->batch(first, batch));
}

TEST(PredNet, ShapesPerLayerAndStableNames) {
  PredNet model = seeded(tiny({1, 3, 5}, {2, 4, 6}, 16, 4), 1);
  std::map<std::string, std::vector<int64_t>> param;
  for (const auto& p : model->named_parameters()) param[p.key()] = p.value().sizes().vec();
  using V = std::vector<int64_t>;
  EXPECT_EQ(param.size(), 2u * (3 * 5 + 2));  // 5 convs per layer, conv_a from l1 on; weight + bias
  EXPECT_EQ(param.count("l0.conv_a.weight"), 0u) << "A_0 is the input frame";
  EXPECT_EQ(param["l1.conv_a.weight"], (V{3, 2 * 1, 3, 3}));  // E_0 -> A_1
  EXPECT_EQ(param["l2.conv_a.weight"], (V{5, 2 * 3, 3, 3}));
  for (const char* gate : {"i", "f", "o", "c"}) {  // gates see [E_l; R_l; upsample(R_{l+1})]
    EXPECT_EQ(param[std::string("l0.lstm.") + gate + ".weight"], (V{2, 2 * 1 + 2 + 4, 3, 3}));
    EXPECT_EQ(param[std::string("l1.lstm.") + gate + ".weight"], (V{4, 2 * 3 + 4 + 6, 3, 3}));
    EXPECT_EQ(param[std::string("l2.lstm.") + gate + ".bias"], (V{6}));
    EXPECT_EQ(param[std::string("l2.lstm.") + gate + ".weight"], (V{6, 2 * 5 + 6, 3, 3}));
  }
  EXPECT_EQ(param["l0.conv_ahat.weight"], (V{1, 2, 3, 3}));
  EXPECT_EQ(param["l2.conv_ahat.weight"], (V{5, 6, 3, 3}));

  std::map<std::string, std::vector<int64_t>> act;
  int64_t calls = 0;
  model->set_tap([&](const std::string& name, int64_t t, const torch::Tensor& v) {
    act[name] = v.sizes().vec();
    calls += t == 3;
  });
  auto out = model->forward(random_frames({2, 4, 1, 16, 16}, 2));
  EXPECT_EQ(out.prediction.sizes().vec(), (V{2, 4, 1, 16, 16}));
  EXPECT_EQ(out.errors.sizes().vec(), (V{2, 4, 3}));
  EXPECT_EQ(calls, 3 * 9);  // per frame and layer: 4 gates, cell, r, ahat, a, e
  const V a = {1, 3, 5}, r = {2, 4, 6};
  for (int64_t l = 0; l < 3; ++l) {
    auto n = [&](const char* what) { return "l" + std::to_string(l) + "." + what; };
    const int64_t s = 16 >> l;
    EXPECT_EQ(act[n("a")], (V{2, a[l], s, s})) << l;
    EXPECT_EQ(act[n("ahat")], (V{2, a[l], s, s})) << l;
    EXPECT_EQ(act[n("e")], (V{2, 2 * a[l], s, s})) << l;
    EXPECT_EQ(act[n("r")], (V{2, r[l], s, s})) << l;
    EXPECT_EQ(act[n("cell")], (V{2, r[l], s, s})) << l;
    for (const char* g : {"lstm.i", "lstm.f", "lstm.o", "lstm.c"})
      EXPECT_EQ(act[n(g)], (V{2, r[l], s, s})) << l << " " << g;
  }
}

// E_l = [ReLU(A - Â); ReLU(Â - A)] >= 0, errors are their means, Â_0 is clipped at pixel_max.
TEST(PredNet, ErrorsAreNonNegativeAndPredictionsClipped) {
  PredNetOptions o = tiny({1, 4, 8}, {1, 4, 8}, 16, 5);
  o.pixel_max = 0.75;
  PredNet model = seeded(o, 3);
  std::map<std::string, torch::Tensor> act;  // at the last frame
  model->set_tap([&](const std::string& name, int64_t t, const torch::Tensor& v) {
    if (t == 4) act[name] = v.detach();
  });
  auto x = random_frames({3, 5, 1, 16, 16}, 4) * 0.75;
  auto out = model->forward(x);
  EXPECT_GE(out.errors.min().item<double>(), 0.0);
  for (int64_t l = 0; l < 3; ++l) {
    std::string n = "l" + std::to_string(l) + ".";
    auto e = act[n + "e"];
    EXPECT_GE(e.min().item<double>(), 0.0) << l;
    auto diff = act[n + "a"] - act[n + "ahat"];
    EXPECT_TRUE(torch::equal(e, torch::cat({torch::relu(diff), torch::relu(-diff)}, 1))) << l;
    EXPECT_TRUE(torch::allclose(out.errors.select(1, 4).select(1, l), e.mean({1, 2, 3}))) << l;
  }
  EXPECT_TRUE(torch::equal(act["l0.a"], x.select(1, 4)));
  EXPECT_LE(out.prediction.max().item<double>(), 0.75);
  EXPECT_GE(out.prediction.min().item<double>(), 0.0);
  {  // A large output bias saturates every prediction at pixel_max.
    torch::NoGradGuard no_grad;
    model->named_parameters()["l0.conv_ahat.bias"].fill_(10.0);
  }
  EXPECT_TRUE(torch::equal(model->forward(x).prediction, torch::full({3, 5, 1, 16, 16}, 0.75)));
}

TEST(PredNet, InitialisationIsSeededAndWithinPyTorchBounds) {
  auto o = tiny({1, 4, 8}, {1, 4, 8}, 16, 5);
  auto a = seeded(o, 9), b = seeded(o, 9), c = seeded(o, 10);
  torch::manual_seed(1234);  // the global generator plays no part
  auto pa = a->named_parameters(), pb = b->named_parameters(), pc = c->named_parameters();
  bool differ = false;
  for (const auto& p : pa) {
    EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
    differ |= !torch::equal(p.value(), pc[p.key()]);
    std::string conv = p.key().substr(0, p.key().rfind('.'));
    auto w = pa[conv + ".weight"];
    double bound = 1.0 / std::sqrt(static_cast<double>(w.size(1) * w.size(2) * w.size(3)));
    EXPECT_LE(p.value().abs().max().item<double>(), bound) << p.key();
    if (p.value().numel() >= 16) EXPECT_GT(p.value().abs().max().item<double>(), 0.5 * bound) << p.key();
  }
  EXPECT_TRUE(differ);
}

// Central differences in float64 against backward, for a sample of every parameter tensor's elements,
// on the original loss over all layers and on the pixel loss.
TEST(PredNet, GradientMatchesFiniteDifferencesInFloat64) {
  auto o = tiny({1, 2, 3}, {1, 2, 3}, 8, 3);
  PredNet model = seeded(o, 5);
  model->to(torch::kFloat64);
  auto x = random_frames({2, 3, 1, 8, 8}, 6, torch::kFloat64);
  auto gen = at::detail::createCPUGenerator(7);
  const double h = 1e-6;
  for (const std::string loss : {"Lall", "pixel_mse"}) {
    model->zero_grad();
    prednet_loss(model->forward(x), x, loss).backward();
    double worst = 0;
    int64_t checked = 0;
    for (auto& p : model->named_parameters()) {
      torch::NoGradGuard no_grad;
      auto flat = p.value().view(-1);
      auto grad = p.value().grad().view(-1);
      for (int k = 0; k < 12; ++k) {
        int64_t i = torch::randint(flat.numel(), {1}, gen).item<int64_t>();
        double keep = flat[i].item<double>();
        flat[i] = keep + h;
        double up = prednet_loss(model->forward(x), x, loss).item<double>();
        flat[i] = keep - h;
        double down = prednet_loss(model->forward(x), x, loss).item<double>();
        flat[i] = keep;
        double fd = (up - down) / (2 * h), an = grad[i].item<double>();
        // Relative, with a floor so that near-zero gradients are compared absolutely.
        double rel = std::abs(fd - an) / std::max({std::abs(fd), std::abs(an), 1e-4});
        worst = std::max(worst, rel);
        ++checked;
        EXPECT_LT(rel, 1e-5) << loss << " " << p.key() << "[" << i << "]: finite difference " << fd
                             << ", backward " << an;
      }
    }
    std::printf("gradient check, loss %s: %lld elements, max relative difference %.3g\n", loss.c_str(),
                static_cast<long long>(checked), worst);
  }
}

TEST(PredNet, OneAdamStepLowersTheLossOnAFixedBatch) {
  auto x = moving_squares(4, 5, 1);
  for (const std::string loss : {"L0", "Lall", "pixel_mse"}) {
    PredNet model = seeded(tiny({1, 4, 8}, {1, 4, 8}, 16, 5), 2);
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
    auto before = prednet_loss(model->forward(x), x, loss);
    adam.zero_grad();
    before.backward();
    adam.step();
    double after = prednet_loss(model->forward(x), x, loss).item<double>();
    std::printf("loss %s: %.6g -> %.6g after one Adam step\n", loss.c_str(), before.item<double>(), after);
    EXPECT_LT(after, before.item<double>()) << loss;
  }
}

TEST(PredNet, LossesFollowTheirDefinitions) {
  PredNet model = seeded(tiny({1, 4, 8}, {1, 4, 8}, 16, 5), 2);
  auto x = moving_squares(2, 5, 3);
  auto out = model->forward(x);
  auto err = out.errors.detach();  // (batch, T, L); frame 0 carries no weight
  auto mean_t = err.narrow(1, 1, 4).sum(1) / 4.0;  // (batch, L)
  EXPECT_NEAR(prednet_loss(out, x, "L0").item<double>(), mean_t.select(1, 0).mean().item<double>(), 1e-6);
  auto lall = mean_t.select(1, 0) + 0.1 * mean_t.select(1, 1) + 0.1 * mean_t.select(1, 2);
  EXPECT_NEAR(prednet_loss(out, x, "Lall").item<double>(), lall.mean().item<double>(), 1e-6);
  auto next = (out.prediction.narrow(1, 1, 4) - x.narrow(1, 1, 4)).pow(2).mean();
  EXPECT_NEAR(prednet_loss(out, x, "pixel_mse").item<double>(), next.item<double>(), 1e-7);
  EXPECT_EQ(prednet_layer_weights("Lall", 4), (std::vector<double>{1, 0.1, 0.1, 0.1}));
  EXPECT_EQ(prednet_layer_weights("L0", 4), (std::vector<double>{1, 0, 0, 0}));
  // Predicting each frame by its predecessor scores exactly the baseline.
  auto copy = torch::cat({x.narrow(1, 0, 1), x.narrow(1, 0, 4)}, 1);
  FrameScores s = score_predictions(copy, x);
  ASSERT_EQ(s.model_mse.size(), 4u);
  EXPECT_EQ(s.model_mse, s.previous_mse);
  EXPECT_GT(s.previous_mean, 0.0);
}

// A negative conv_ahat bias in layer 0 (PyTorch's init draws one for about half the seeds) makes Â_0 = 0
// everywhere: E_0 is then the input itself, and every gradient is exactly 0, for good. zero_bias (the
// original implementations' init) starts with Â_0 alive on part of the frame.
TEST(PredNet, ZeroBiasAvoidsADeadPredictionAtInitialisation) {
  auto x = moving_squares(2, 5, 1);
  for (bool zero_bias : {false, true}) {
    auto o = tiny({1, 4, 8}, {1, 4, 8}, 16, 5);
    o.zero_bias = zero_bias;
    PredNet model = seeded(o, 1);  // seed 1: l0.conv_ahat.bias = -0.22 under PyTorch's init
    auto out = model->forward(x);
    prednet_loss(out, x, "L0").backward();
    double grad = 0;
    for (const auto& p : model->parameters()) grad += p.grad().abs().sum().item<double>();
    double alive = (out.prediction > 0).to(torch::kFloat64).mean().item<double>();
    std::printf("zero_bias %d: Â_0 > 0 on %.0f%% of pixels, sum |gradient| %.3g\n", zero_bias, 100 * alive,
                grad);
    if (zero_bias) {
      EXPECT_GT(alive, 0.1);
      EXPECT_GT(grad, 0.0);
    } else {
      EXPECT_EQ(alive, 0.0);
      EXPECT_EQ(grad, 0.0);
    }
  }
}

// 16x16 Moving MNIST (the standard 64x64 generator with one real digit, average-pooled 4x4) and a
// (1, 4, 8) PredNet with four R_0 channels, zero biases and the pixel loss: after 200 CPU steps, for each
// of three weight seeds, its predictions of held-out test-split sequences beat copying the previous
// frame (by about 2x). Why this configuration: with the L0 loss (an L1 error whose best constant on
// mostly-black frames is 0) or a single R_0 channel, Â_0's ReLU dies within a few steps for some seeds.
TEST(PredNet, TinyModelBeatsThePreviousFrameBaselineOnHeldOutSequences) {
  at::set_num_threads(1);
  auto start = std::chrono::steady_clock::now();
  auto train_digits = moving_mnist_digits(default_data_dir(), "train");
  auto test_digits = moving_mnist_digits(default_data_dir(), "test");
  ASSERT_TRUE(train_digits.ok()) << train_digits.status().message();
  ASSERT_TRUE(test_digits.ok()) << test_digits.status().message();
  MovingMnistOptions mo;
  mo.digits = 1, mo.frames = 5, mo.seed = 1;
  auto train_data = MovingMnist::create(mo, std::move(train_digits).value());
  mo.seed = 2;
  auto test_data = MovingMnist::create(mo, std::move(test_digits).value());
  auto pooled = [](const torch::Tensor& frames) {  // (T, N, 64, 64) uint8 -> (N, T, 1, 16, 16)
    auto x = frames_to_input(frames);
    auto s = x.sizes().vec();
    return torch::avg_pool2d(x.view({s[0] * s[1], 1, 64, 64}), {4, 4}).view({s[0], s[1], 1, 16, 16});
  };
  auto held_out = pooled(test_data->batch(0, 256));

  const int64_t steps = 200, batch = 16;
  auto o = tiny({1, 4, 8}, {4, 4, 8}, 16, 5);
  o.loss = "pixel_mse";
  o.zero_bias = true;
  for (uint64_t seed : {1, 2, 3}) {
    PredNet model = seeded(o, seed);
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(5e-3));
    for (int64_t step = 0; step < steps; ++step) {
      auto x = pooled(train_data->batch(step * batch, batch));
      auto loss = prednet_loss(model->forward(x), x, o.loss);
      adam.zero_grad();
      loss.backward();
      adam.step();
    }
    torch::NoGradGuard no_grad;
    FrameScores s = score_predictions(model->forward(held_out).prediction, held_out);
    std::printf("seed %llu: held-out MSE per frame t >= 1: PredNet %.5f, previous frame %.5f;",
                static_cast<unsigned long long>(seed), s.model_mean, s.previous_mean);
    for (size_t t = 0; t < s.model_mse.size(); ++t)
      std::printf("  t=%zu %.5f/%.5f", t + 1, s.model_mse[t], s.previous_mse[t]);
    std::printf("\n");
    EXPECT_LT(s.model_mean, 0.8 * s.previous_mean) << "seed " << seed;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("3 x %lld steps at batch %lld, 1 thread: %.1f s\n", static_cast<long long>(steps),
              static_cast<long long>(batch), seconds);
}

TEST(PredNet, BadOptionsAreClearErrors) {
  auto error = [](const PredNetOptions& o) {
    auto r = make_prednet(o);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  PredNetOptions o;
  EXPECT_EQ(error(o), "ok");
  o.height = 60;
  EXPECT_EQ(error(o), "prednet.height must be a positive multiple of 2^(layers-1) = 8 (4 layers), got 60");
  o = {}, o.width = 20;
  EXPECT_EQ(error(o), "prednet.width must be a positive multiple of 2^(layers-1) = 8 (4 layers), got 20");
  o = {}, o.nt = 1;
  EXPECT_EQ(error(o), "prednet.nt must be >= 2, got 1");
  o = {}, o.loss = "l2";
  EXPECT_EQ(error(o), "prednet.loss must be one of L0, Lall, pixel_mse, got 'l2'");
  o = {}, o.r_stack_sizes = {1, 32, 64};
  EXPECT_EQ(error(o), "prednet.r_stack_sizes must be one entry per layer (4), got (1, 32, 64)");
  o = {}, o.stack_sizes = {};
  EXPECT_EQ(error(o), "prednet.stack_sizes must be non-empty (one entry per layer), got ()");
  o = {}, o.stack_sizes = {1, 0, 64, 128};
  EXPECT_EQ(error(o), "prednet.stack_sizes must be all >= 1, got (1, 0, 64, 128)");
  o = {}, o.filter_size = 4;
  EXPECT_EQ(error(o), "prednet.filter_size must be odd and >= 1, got 4");
  o = {}, o.pixel_max = 0;
  EXPECT_EQ(error(o), "prednet.pixel_max must be > 0 and finite, got 0.000000");
  o = tiny({1, 4, 8}, {1, 4, 8}, 12, 2);  // 12 = 3 * 2^2: fine for three layers
  EXPECT_EQ(error(o), "ok");
}

}  // namespace
}  // namespace saddlescope::trainer
