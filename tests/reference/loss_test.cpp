// The cross-entropy loss and nll_loss's input gradient: correct rounding against MPFR at 600 bits
// computed here from the definition, a float32 kernel of PyTorch's form within the stated allowance,
// wrong values beyond it, closed forms, non-finite inputs and bad inputs.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "saddlescope/reference/normalization.h"
#include "saddlescope/reference/ops.h"
#include "nearest.h"

namespace saddlescope::reference {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The mean (or sum) over rows of log Σ_j e^{x_j} − x_t at 600 bits (far past any rounding these logits
// can be near), without the max subtracted.
class HighPrecisionLoss {
 public:
  template <class T>
  HighPrecisionLoss(const std::vector<T>& x, int64_t classes, const std::vector<int64_t>& t, bool mean) {
    mpfr_inits2(600, v_, s_, e_, static_cast<mpfr_ptr>(nullptr));
    mpfr_set_ui(v_, 0, MPFR_RNDN);
    const int64_t rows = static_cast<int64_t>(t.size());
    for (int64_t r = 0; r < rows; ++r) {
      mpfr_set_ui(s_, 0, MPFR_RNDN);
      for (int64_t j = 0; j < classes; ++j) {
        mpfr_set_d(e_, static_cast<double>(x[r * classes + j]), MPFR_RNDN);
        mpfr_exp(e_, e_, MPFR_RNDN);
        mpfr_add(s_, s_, e_, MPFR_RNDN);
      }
      mpfr_log(s_, s_, MPFR_RNDN);
      mpfr_add(v_, v_, s_, MPFR_RNDN);
      mpfr_sub_d(v_, v_, static_cast<double>(x[r * classes + t[r]]), MPFR_RNDN);
    }
    if (mean) mpfr_div_si(v_, v_, static_cast<long>(rows), MPFR_RNDN);
  }
  ~HighPrecisionLoss() { mpfr_clears(v_, s_, e_, static_cast<mpfr_ptr>(nullptr)); }
  // `rounded` is strictly nearer to the value than both its neighbours.
  template <class T>
  void expect_nearest(T rounded) const {
    testing::expect_nearest(v_, rounded);
  }

 private:
  mutable mpfr_t v_, s_, e_;
};

struct Batch {
  std::vector<float> x;
  std::vector<int64_t> t;
  int64_t classes;
};

// Logits of scale `scale`; with `confident`, each row's target 12 above the rest (a loss near 0).
Batch random_batch(std::mt19937_64& rng, int64_t rows, int64_t classes, double scale, bool confident) {
  std::normal_distribution<double> normal(0.0, scale);
  std::uniform_int_distribution<int64_t> pick(0, classes - 1);
  Batch b{{}, {}, classes};
  for (int64_t r = 0; r < rows; ++r) {
    b.t.push_back(pick(rng));
    for (int64_t j = 0; j < classes; ++j)
      b.x.push_back(static_cast<float>(normal(rng) + (confident && j == b.t.back() ? 12.0 : 0.0)));
  }
  return b;
}

// PyTorch's form in float32: log_softmax per row (max subtracted, log of the sum), the picked values
// summed in row order, negated and divided by the row count.
float kernel_loss(const Batch& b, bool mean) {
  const int64_t rows = static_cast<int64_t>(b.t.size());
  float total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = b.x.data() + r * b.classes;
    float m = -INFINITY, s = 0;
    for (int64_t j = 0; j < b.classes; ++j) m = std::max(m, x[j]);
    for (int64_t j = 0; j < b.classes; ++j) s += std::exp(x[j] - m);
    total += (x[b.t[r]] - m) - std::log(s);
  }
  return mean ? -total / static_cast<float>(rows) : -total;
}

TEST(CrossEntropy, CorrectlyRoundedAndAKernelWithinTheAllowance) {
  std::mt19937_64 rng(51);
  int checked = 0;
  double worst = 0;
  for (int64_t rows : {1, 3, 40}) {
    for (int64_t classes : {2, 10, 100}) {
      for (double scale : {0.5, 4.0}) {
        for (bool confident : {false, true}) {
          const Batch b = random_batch(rng, rows, classes, scale, confident);
          for (bool mean : {true, false}) {
            auto e = evaluate_cross_entropy(b.x.data(), rows, classes, b.t.data(), mean);
            ASSERT_TRUE(e.ok()) << e.status().message();
            EXPECT_EQ(e->op, Op::kCrossEntropy);
            EXPECT_EQ(e->rounding_steps, std::max(rows, classes));
            const HighPrecisionLoss hp(b.x, classes, b.t, mean);
            hp.expect_nearest(e->f64);
            hp.expect_nearest(e->f32);
            const ErrorReport r = assess(*e, kernel_loss(b, mean));
            EXPECT_TRUE(r.matches) << rows << "x" << classes << " scale " << scale << ": ratio " << r.bound_ratio;
            worst = std::max(worst, r.bound_ratio);
            ++checked;
          }
        }
      }
    }
  }
  // The same from float64 logits.
  std::vector<double> x64 = {0.25, -3.5, 1e-3, 7.0, 2.0, 2.0};
  std::vector<int64_t> t64 = {2, 0};
  auto e = evaluate_cross_entropy(x64.data(), 2, 3, t64.data(), true);
  ASSERT_TRUE(e.ok());
  HighPrecisionLoss(x64, 3, t64, true).expect_nearest(e->f64);
  std::printf("%d cross entropies correctly rounded; a float32 kernel's largest error/bound %.3g\n", checked, worst);
}

TEST(CrossEntropy, WrongValuesAreBeyondTheAllowance) {
  std::mt19937_64 rng(52);
  const Batch b = random_batch(rng, 32, 10, 1.0, false);
  auto e = evaluate_cross_entropy(b.x.data(), 32, 10, b.t.data(), true);
  ASSERT_TRUE(e.ok());
  const float v = e->f32;
  EXPECT_TRUE(assess(*e, v).matches);
  const ErrorReport off = assess(*e, v + 1000 * (std::nextafter(v, INFINITY) - v));
  EXPECT_FALSE(off.matches) << off.bound_ratio;
  // The loss against the wrong targets (every row's next class): far beyond.
  std::vector<int64_t> shifted = b.t;
  for (auto& t : shifted) t = (t + 1) % 10;
  Batch wrong = b;
  wrong.t = shifted;
  EXPECT_FALSE(assess(*e, kernel_loss(wrong, true)).matches);
}

TEST(CrossEntropy, ClosedFormsAndNonFiniteInputs) {
  // One class: log 1 − x = 0 exactly, whatever x. A target that is the only finite logit: 0 exactly.
  const std::vector<float> one = {3.5f, -2.0f};
  const std::vector<int64_t> zeros = {0, 0};
  auto e = evaluate_cross_entropy(one.data(), 2, 1, zeros.data(), true);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->exact_is_exact);
  EXPECT_EQ(e->f64, 0.0);
  const std::vector<float> masked = {1.5f, -INFINITY, -INFINITY};
  e = evaluate_cross_entropy(masked.data(), 1, 3, zeros.data(), true);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind, Kind::kFinite);
  EXPECT_EQ(e->f64, 0.0);
  // Two equal logits: log 2, irrational, correctly rounded.
  const std::vector<double> even = {0.75, 0.75};
  e = evaluate_cross_entropy(even.data(), 1, 2, zeros.data(), false);
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->exact_is_exact);
  EXPECT_EQ(e->f64, std::log(2.0));
  // NaN anywhere, +inf in a row, or a row of only −inf: NaN; a −inf target logit: +inf.
  const std::vector<int64_t> t1 = {1};
  for (const std::vector<float>& row : {std::vector<float>{0.f, NAN}, std::vector<float>{INFINITY, 0.f},
                                        std::vector<float>{-INFINITY, -INFINITY}}) {
    e = evaluate_cross_entropy(row.data(), 1, 2, t1.data(), true);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->kind, Kind::kNaN);
  }
  const std::vector<float> target_masked = {0.5f, -INFINITY};
  e = evaluate_cross_entropy(target_masked.data(), 1, 2, t1.data(), true);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind, Kind::kPlusInf);
  EXPECT_EQ(e->first_nonfinite, 1);
  EXPECT_EQ(e->bound(Format::kFloat32), kInf);
}

TEST(CrossEntropy, BadInputsAreOneLineErrors) {
  const std::vector<float> x = {1, 2, 3, 4};
  const std::vector<int64_t> t = {0, 2};
  auto expect_error = [](const Result<Evaluation>& r, const char* want) {
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  };
  expect_error(evaluate_cross_entropy(x.data(), 0, 2, t.data(), true), "cross_entropy: needs at least one row and one class");
  expect_error(evaluate_cross_entropy(x.data(), 2, 2, t.data(), true), "cross_entropy: target 2 of row 1 is outside [0, 2)");
  expect_error(evaluate_cross_entropy(x.data(), 2, 2, static_cast<const int64_t*>(nullptr), true),
               "cross_entropy: targets is null");
}

TEST(NllLossGrad, MinusTheArrivingGradientOverTheRowsCorrectlyRounded) {
  // −1/3: a rational, correctly rounded in each format; −g/4 exactly.
  auto e = evaluate_nll_loss_grad(1.0f, 3);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->op, Op::kNllLossGrad);
  EXPECT_EQ(e->f32, -1.0f / 3.0f);
  EXPECT_EQ(e->f64, -1.0 / 3.0);
  EXPECT_EQ(e->divisor, 3);
  EXPECT_EQ(evaluate_nll_loss_grad(0.75, 4)->f64, -0.1875);
  EXPECT_EQ(evaluate_nll_loss_grad(0.75, 4)->divisor, 1);
  // Two roundings allowed (−g, then a reciprocal's product): γ_2·|value|.
  const float g = 0.3f;
  const int64_t n = 2048 + 7;
  e = evaluate_nll_loss_grad(g, n);
  ASSERT_TRUE(e.ok());
  EXPECT_DOUBLE_EQ(e->bound(Format::kFloat32), gamma_n(2, Format::kFloat32) * std::fabs(e->f64));
  EXPECT_TRUE(assess(*e, -g * (1.0f / static_cast<float>(n))).matches);
  EXPECT_TRUE(assess(*e, -g / static_cast<float>(n)).matches);
  const float v = e->f32;
  EXPECT_FALSE(assess(*e, v + 4 * (std::nextafter(v, INFINITY) - v)).matches);
  // The gradient of a mean over another count (the ignored rows counted): beyond.
  EXPECT_FALSE(assess(*e, -g / static_cast<float>(n + 1)).matches);
  // Non-finite g: its IEEE outcome; n < 1: an error.
  EXPECT_EQ(evaluate_nll_loss_grad(INFINITY, 2)->kind, Kind::kMinusInf);
  EXPECT_EQ(evaluate_nll_loss_grad(NAN, 2)->kind, Kind::kNaN);
  auto bad = evaluate_nll_loss_grad(1.0, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "nll_loss_grad: the mean must be over >= 1 row, got 0");
}

}  // namespace
}  // namespace saddlescope::reference
