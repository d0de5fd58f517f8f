#include "saddlescope/trainer/moving_mnist.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include <torch/torch.h>

#include "saddlescope/store/npy.h"
#include "saddlescope/trainer/mnist.h"
#include "temp_dir.h"

namespace saddlescope::trainer {
namespace {

// `n` square images of side `side`, image k filled with the value `fill(k)`: easy to recognise.
IdxArray flat_images(int64_t n, int64_t side, uint8_t (*fill)(int64_t)) {
  IdxArray a;
  a.dims = {n, side, side};
  for (int64_t k = 0; k < n; ++k) a.data.insert(a.data.end(), side * side, fill(k));
  return a;
}
uint8_t distinct(int64_t k) { return static_cast<uint8_t>(40 + 60 * k); }  // 40, 100, 160, ...

MovingMnist make(const MovingMnistOptions& o, IdxArray images) {
  auto r = MovingMnist::create(o, std::move(images));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).value();
}

TEST(MovingMnist, SequenceDependsOnlyOnSeedAndIndex) {
  MovingMnistOptions o;
  o.seed = 11;
  MovingMnist a = make(o, flat_images(3, 28, distinct));
  MovingMnist b = make(o, flat_images(3, 28, distinct));
  auto s5 = a.sequence(5);
  EXPECT_EQ(s5.sizes(), (std::vector<int64_t>{20, 64, 64}));
  EXPECT_EQ(s5.scalar_type(), torch::kUInt8);
  // Another generator, other sequences generated first, inside a batch: the same bytes.
  (void)b.sequence(0), (void)b.batch(100, 3);
  EXPECT_TRUE(torch::equal(s5, b.sequence(5)));
  auto batch = b.batch(3, 4);  // (T, N, H, W)
  EXPECT_EQ(batch.sizes(), (std::vector<int64_t>{20, 4, 64, 64}));
  for (int64_t n = 0; n < 4; ++n) EXPECT_TRUE(torch::equal(batch.select(1, n), a.sequence(3 + n))) << n;
  // Other indices and other seeds give other sequences.
  EXPECT_FALSE(torch::equal(s5, a.sequence(6)));
  o.seed = 12;
  EXPECT_FALSE(torch::equal(s5, make(o, flat_images(3, 28, distinct)).sequence(5)));
}

// Pinned values: the generator's arithmetic is our own, so these hold on every platform. If this
// fails, the sequences of every published run have changed.
TEST(MovingMnist, FirstPathIsPinned) {
  MovingMnistOptions o;
  o.seed = 1;
  auto p = make(o, flat_images(10, 28, distinct)).paths(0);
  ASSERT_EQ(p.size(), 2u);
  // Image and start come from integer arithmetic on the generator's output: exact. The velocity goes
  // through cos/sin: equal to within an ulp or two of the libm.
  EXPECT_EQ(p[0].image, 4);
  EXPECT_EQ(p[0].x[0], 0.32840228721762499);
  EXPECT_EQ(p[0].y[0], 0.74444132216996051);
  EXPECT_NEAR(p[0].vx[0], -0.077735215652028358, 1e-16);
  EXPECT_NEAR(p[0].vy[0], 0.062906567602537697, 1e-16);
  EXPECT_EQ(p[0].col[1], 9);   // floor((0.3284 - 0.0777) * 36)
  EXPECT_EQ(p[0].row[1], 29);  // floor((0.7444 + 0.0629) * 36)
  EXPECT_NEAR(std::hypot(p[0].vx[0], p[0].vy[0]), 0.1, 1e-15);
}

TEST(MovingMnist, DigitsStayInsideAndBounceOffEdges) {
  MovingMnistOptions o;
  o.frames = 60;  // long enough that most digits hit an edge
  o.speed = 0.25;
  MovingMnist data = make(o, flat_images(4, 28, distinct));
  const int64_t free = o.canvas - 28;
  int64_t bounces = 0;
  for (int64_t index = 0; index < 50; ++index) {
    for (const DigitPath& p : data.paths(index)) {
      for (int64_t t = 0; t < o.frames; ++t) {
        ASSERT_TRUE(p.x[t] >= 0 && p.x[t] <= 1 && p.y[t] >= 0 && p.y[t] <= 1) << p.x[t] << ", " << p.y[t];
        ASSERT_TRUE(p.col[t] >= 0 && p.col[t] <= free && p.row[t] >= 0 && p.row[t] <= free)
            << p.row[t] << ", " << p.col[t];
        EXPECT_NEAR(std::hypot(p.vx[t], p.vy[t]), o.speed, 1e-12);  // constant speed
        if (t == 0) continue;
        // Either a free step (velocity unchanged, position moved by it) or a bounce: clamped to the
        // edge and that component reflected.
        for (auto [pos, prev, v, vprev] : {std::tuple{p.x[t], p.x[t - 1], p.vx[t], p.vx[t - 1]},
                                           std::tuple{p.y[t], p.y[t - 1], p.vy[t], p.vy[t - 1]}}) {
          if (v == vprev) {
            EXPECT_NEAR(pos, prev + v, 1e-12);
            EXPECT_TRUE(pos > 0 && pos < 1) << pos;
          } else {
            ++bounces;
            EXPECT_EQ(v, -vprev);
            EXPECT_TRUE(pos == 0.0 || pos == 1.0) << pos;
            EXPECT_TRUE(pos == 0.0 ? v >= 0 : v <= 0) << "after a bounce the digit moves inward";
          }
        }
      }
    }
  }
  EXPECT_GT(bounces, 50);
}

// Every frame is exactly the digits drawn at their path positions, combined by max (not by sum,
// not last-wins): checked by redrawing the frames here from the paths.
TEST(MovingMnist, FramesAreTheMaxOfTheDigits) {
  MovingMnistOptions o;
  o.canvas = 40;  // small free range: digits overlap often
  o.digits = 3;
  o.frames = 10;
  MovingMnist data = make(o, flat_images(3, 28, distinct));
  int64_t overlaps = 0;
  for (int64_t index = 0; index < 20; ++index) {
    auto seq = data.sequence(index);
    auto paths = data.paths(index);
    for (int64_t t = 0; t < o.frames; ++t) {
      auto expected = torch::zeros({o.canvas, o.canvas}, torch::kInt32);
      auto count = torch::zeros({o.canvas, o.canvas}, torch::kInt32);
      for (const auto& p : paths) {
        auto window = [&](torch::Tensor m) { return m.narrow(0, p.row[t], 28).narrow(1, p.col[t], 28); };
        window(expected).clamp_min_(distinct(p.image));
        window(count).add_(1);
      }
      ASSERT_TRUE(torch::equal(seq[t].to(torch::kInt32), expected)) << "sequence " << index << " frame " << t;
      overlaps += (count > 1).sum().item<int64_t>();
    }
  }
  EXPECT_GT(overlaps, 0) << "the test needs overlapping digits";
}

TEST(MovingMnist, RealDigitsFromTheTrainAndTestSplits) {
  auto test = moving_mnist_digits(default_data_dir(), "test");
  ASSERT_TRUE(test.ok()) << test.status().message();
  EXPECT_EQ(test->dims, (std::vector<int64_t>{10000, 28, 28}));
  MovingMnist data = make(MovingMnistOptions{}, std::move(test).value());
  auto frames = data.batch(0, 8);
  EXPECT_EQ(frames.sizes(), (std::vector<int64_t>{20, 8, 64, 64}));
  // Two MNIST digits cover roughly 2 x 19% of 28x28 out of 64x64: a few percent of pixels are on.
  double on = (frames > 0).to(torch::kFloat64).mean().item<double>();
  EXPECT_GT(on, 0.02);
  EXPECT_LT(on, 0.2);
  EXPECT_EQ(frames.max().item<int64_t>(), 255);
  auto input = frames_to_input(frames);  // (N, T, 1, H, W) float
  EXPECT_EQ(input.sizes(), (std::vector<int64_t>{8, 20, 1, 64, 64}));
  EXPECT_TRUE(torch::equal(input[2][7][0], frames[7][2].to(torch::kFloat32) / 255.0f));
  EXPECT_FALSE(moving_mnist_digits(default_data_dir(), "validation").ok());
}

// Every byte becomes x / 255 correctly rounded to float32 (the host's division), wherever the frames are:
// on a CUDA device too, where div_(255.0f) would multiply by the reciprocal and round 126 of the 256
// values to the next float (which made PredNet's CUDA runs start from other input bits than CPU runs).
TEST(MovingMnist, PixelsAreTheHostsQuotientsOnEveryDevice) {
  std::vector<torch::Device> devices = {torch::kCPU};
  if (torch::cuda::is_available()) devices.push_back(torch::kCUDA);
  const torch::Tensor bytes = torch::arange(256, torch::kInt64).to(torch::kUInt8).view({1, 256, 1, 1});
  for (const torch::Device& device : devices) {
    SCOPED_TRACE(device.str());
    const torch::Tensor x = frames_to_input(bytes.to(device), pixel_values().to(device)).cpu().flatten();
    ASSERT_EQ(x.numel(), 256);
    for (int k = 0; k < 256; ++k) EXPECT_EQ(x[k].item<float>(), static_cast<float>(k) / 255.0f) << k;
  }
}

TEST(MovingMnist, NpyExportIsTheCommonLayout) {
  testing::TempDir dir;
  MovingMnistOptions o;
  o.frames = 6;
  MovingMnist data = make(o, flat_images(5, 28, distinct));
  std::string path = dir.file("seq.npy");
  ASSERT_TRUE(write_moving_mnist_npy(data, 7, 3, path).ok());
  auto npy = store::read_npy(path);
  ASSERT_TRUE(npy.ok()) << npy.status().message();
  EXPECT_EQ(npy->dtype, store::Dtype::kUInt8);
  EXPECT_EQ(npy->shape, (std::vector<int64_t>{6, 3, 64, 64}));  // (T, N, H, W)
  auto back = torch::from_blob(npy->bytes.data(), {6, 3, 64, 64}, torch::kUInt8);
  EXPECT_TRUE(torch::equal(back, data.batch(7, 3)));
  EXPECT_TRUE(torch::equal(back.select(1, 1), data.sequence(8)));
  auto bad = write_moving_mnist_npy(data, 0, 0, dir.file("none.npy"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("count must be >= 1"), std::string::npos) << bad.message();
}

TEST(MovingMnist, BadOptionsNameTheOption) {
  auto error = [](MovingMnistOptions o, IdxArray images = flat_images(2, 28, distinct)) {
    auto r = MovingMnist::create(o, std::move(images));
    return r.ok() ? std::string("ok") : r.status().message();
  };
  MovingMnistOptions o;
  o.canvas = 27;
  EXPECT_EQ(error(o), "moving_mnist.canvas must be >= 28 (the digit side), got 27");
  o = {}, o.digits = 0;
  EXPECT_EQ(error(o), "moving_mnist.digits must be >= 1, got 0");
  o = {}, o.frames = 1;
  EXPECT_EQ(error(o), "moving_mnist.frames must be >= 2, got 1");
  o = {}, o.speed = 0;
  EXPECT_EQ(error(o), "moving_mnist.speed must be in (0, 1], got 0.000000");
  EXPECT_EQ(error({}, IdxArray{}),
            "moving_mnist: digit images must be a non-empty (N, side, side) uint8 array");
  EXPECT_EQ(error({}, flat_images(2, 28, distinct)), "ok");
  o = {}, o.canvas = 8;  // small digits on a small canvas are fine
  EXPECT_EQ(error(o, flat_images(2, 7, distinct)), "ok");
}

}  // namespace
}  // namespace saddlescope::trainer
