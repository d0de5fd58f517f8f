// Op taps on known ops on the CPU: the exact values are reference/'s, computed here directly from the
// same operands; errors of correct kernels are within the bound, corrupted values are flagged, NaN/Inf
// inputs are reported as such, and bad specs are clear errors.
#include "saddlescope/probes/op_taps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include <torch/torch.h>

#include "saddlescope/base/text.h"
#include "saddlescope/analysis/op_summary.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/schema.h"
#include "saddlescope/reference/evaluation.h"
#include "saddlescope/reference/ops.h"
#include "saddlescope/store/csv.h"
#include "temp_dir.h"

namespace saddlescope::probes {
namespace {

using analysis::ops_comparison_markdown;
using analysis::ops_markdown;
using analysis::summarize_ops;

// An ops.csv row with the fields the summary reads.
store::OpRow op_row(int64_t step, const char* op, const char* phase, const char* kernel, const char* dtype,
                    const char* flag, double ulp_error, double bound_ratio) {
  store::OpRow r;
  r.step = step;
  r.op = op;
  r.phase = phase;
  r.kernel = kernel;
  r.dtype = dtype;
  r.flag = flag;
  r.ulp_error = ulp_error;
  r.bound_ratio = bound_ratio;
  return r;
}

ProbeSpec spec(const std::string& text) {
  auto s = parse_probe_spec(text);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

store::CsvText ops_csv(const std::string& dir) {
  auto t = store::read_csv_text(dir + "/ops.csv");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : store::CsvText{};
}

// The value of column `name` in row `r`.
std::string at(const store::CsvText& t, const std::vector<std::string>& r, const std::string& name) {
  int i = t.column(name);
  EXPECT_GE(i, 0) << name;
  return i >= 0 ? r[static_cast<size_t>(i)] : "";
}
double number(const store::CsvText& t, const std::vector<std::string>& r, const std::string& name) {
  return std::strtod(at(t, r, name).c_str(), nullptr);
}
std::vector<int64_t> coordinates(const std::string& index) {
  std::vector<int64_t> c;
  for (const auto& part : split(index, ':')) c.push_back(std::stoll(part));
  return c;
}

template <class T>
reference::Evaluation evaluation(Result<reference::Evaluation> e) {
  EXPECT_TRUE(e.ok()) << e.status().message();
  return *e;
}

// A linear layer, a sigmoid and an MSE loss: forward through the taps, backward, record.
struct LinearRun {
  torch::Tensor x, w, b, y, a, target, gy, ga;
};

// overwrite_target: the loss reads its target through an alias (invisible to autograd's version checks)
// of a buffer that is overwritten between forward and backward — the planted alias-target fault.
LinearRun linear_run(OpTaps& taps, torch::Dtype dtype, bool corrupt_output = false, bool corrupt_grad = false,
                     bool overwrite_target = false) {
  auto gen = at::detail::createCPUGenerator(11);
  auto opts = torch::TensorOptions().dtype(dtype);
  LinearRun r;
  r.x = torch::randn({6, 20}, gen, opts);
  r.w = (torch::randn({5, 20}, gen, opts) * 0.3).requires_grad_();
  r.b = torch::randn({5}, gen, opts).requires_grad_();
  r.target = torch::rand({6, 5}, gen, opts);
  taps.arm(0);
  r.y = torch::nn::functional::linear(r.x, r.w, r.b);
  if (corrupt_output) r.y = r.y * (1 + 1e-3);  // what a wrong kernel might return
  r.y.register_hook([&r](const torch::Tensor& g) { r.gy = g.clone(); });
  taps.linear("fc", r.x, r.w, r.b, r.y);
  r.a = torch::sigmoid(r.y);
  r.a.register_hook([&r](const torch::Tensor& g) { r.ga = g.clone(); });
  taps.elementwise("fc.sigmoid", r.y, r.a);
  torch::Tensor target = r.target;
  if (overwrite_target) target = torch::from_blob(r.target.data_ptr(), r.target.sizes(), r.target.options());
  torch::Tensor loss = torch::mse_loss(r.a, target);
  taps.mse_loss("loss", r.a, target, loss);
  if (overwrite_target) {
    torch::NoGradGuard no_grad;
    r.target.add_(0.25);  // the next batch's target lands in the buffer
  }
  loss.backward();
  if (corrupt_grad) {
    torch::NoGradGuard no_grad;
    r.w.grad().mul_(1.01);
  }
  EXPECT_TRUE(taps.record(0).ok());
  return r;
}

const std::vector<TapOp> kLinearOps = {
    {"fc", "linear", 30, 100, 1}, {"fc.sigmoid", "sigmoid", 30, 0, 1}, {"loss", "mse_loss", 1, 0, 1}};

template <class T>
void check_linear(torch::Dtype dtype, const char* name) {
  testing::TempDir dir;
  auto taps = OpTaps::create({spec("ops:every=1,k=7")}, kLinearOps, dir.path());
  ASSERT_TRUE(taps.ok()) << taps.status().message();
  LinearRun run = linear_run(**taps, dtype);
  store::CsvText t = ops_csv(dir.path());
  EXPECT_EQ(t.columns, store::kOps.names());
  ASSERT_EQ(t.rows.size(), 7u + 7u + 7u + 1u + 7u) << "fc fwd, fc wgrad, sigmoid, loss fwd, loss dgrad";
  double worst = 0;
  for (const auto& r : t.rows) {
    EXPECT_EQ(at(t, r, "flag"), "within") << at(t, r, "op") << " " << at(t, r, "index");
    EXPECT_EQ(at(t, r, "dtype"), name);
    std::vector<int64_t> c = coordinates(at(t, r, "index"));
    reference::Evaluation e;
    T observed = 0;
    if (at(t, r, "op") == "fc" && at(t, r, "phase") == "fwd") {  // y[b][j] = x[b] · w[j] + bias[j]
      std::vector<T> lhs(run.x[c[0]].data_ptr<T>(), run.x[c[0]].data_ptr<T>() + 20);
      std::vector<T> rhs(run.w[c[1]].data_ptr<T>(), run.w[c[1]].data_ptr<T>() + 20);
      lhs.push_back(run.b[c[1]].template item<T>());
      rhs.push_back(T(1));
      e = evaluation<T>(reference::evaluate_dot(lhs.data(), 21, rhs.data(), 21));
      observed = run.y[c[0]][c[1]].template item<T>();
      EXPECT_EQ(number(t, r, "terms"), 21);
    } else if (at(t, r, "op") == "fc") {  // dW[j][i] = sum_b gy[b][j] x[b][i]
      torch::Tensor g = run.gy.select(1, c[0]).contiguous(), xi = run.x.select(1, c[1]).contiguous();
      e = evaluation<T>(reference::evaluate_dot(g.data_ptr<T>(), 6, xi.data_ptr<T>(), 6));
      observed = run.w.grad()[c[0]][c[1]].template item<T>();
      EXPECT_EQ(at(t, r, "call"), "-1");
    } else if (at(t, r, "op") == "loss" && at(t, r, "phase") == "dgrad") {  // 2 (a - t) / 30
      e = evaluation<T>(reference::evaluate_mse_loss_grad(run.a[c[0]][c[1]].template item<T>(),
                                                          run.target[c[0]][c[1]].template item<T>(), T(1), 30));
      observed = run.ga[c[0]][c[1]].template item<T>();
      EXPECT_EQ(number(t, r, "terms"), 1);
    } else {
      continue;
    }
    EXPECT_EQ(number(t, r, "exact"), e.f64) << "the exact value is reference/'s";
    EXPECT_EQ(number(t, r, "observed"), static_cast<double>(observed));
    EXPECT_EQ(number(t, r, "ulp_error"), reference::assess(e, observed).ulp_error);
    worst = std::max(worst, number(t, r, "bound_ratio"));
  }
  std::printf("[ max diff ] %s linear: largest error/bound %.3g\n", name, worst);
  auto rows = store::read_table(dir.path(), store::kOps);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(summarize_ops(*rows).size(), 5u) << "fc fwd, fc wgrad, fc.sigmoid fwd, loss fwd, loss dgrad";
}

TEST(OpTaps, LinearFloat32WithinTheBoundAndExactAsTheReference) { check_linear<float>(torch::kFloat32, "float32"); }
TEST(OpTaps, LinearFloat64WithinTheBoundAndExactAsTheReference) { check_linear<double>(torch::kFloat64, "float64"); }

// A conv applied three times (as PredNet applies one per frame): forward elements against the full
// input (so the copied patch leaves out exactly the padding), dW against every call's planes.
void check_conv(const ConvOptions& o) {
  testing::TempDir dir;
  auto gen = at::detail::createCPUGenerator(3);
  auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  const int64_t calls = 3, n = 2, c = 3, h = 7, w = 6, out = 4, k = 3;
  torch::Tensor weight = torch::randn({out, c, k, k}, gen, opts).requires_grad_();
  torch::Tensor bias = torch::randn({out}, gen, opts).requires_grad_();
  std::vector<torch::Tensor> xs, ys, gys(calls);
  for (int64_t t = 0; t < calls; ++t) xs.push_back(torch::randn({n, c, h, w}, gen, opts));
  auto conv = [&](const torch::Tensor& x) {
    return torch::conv2d(x, weight, bias, {o.stride, o.stride}, {o.padding, o.padding}, {o.dilation, o.dilation});
  };
  const torch::Tensor probe = conv(xs[0]);
  const int64_t oh = probe.size(2), ow = probe.size(3);
  std::vector<TapOp> ops = {{"conv", "conv2d", calls * n * out * oh * ow, out * c * k * k, calls}};
  auto taps = OpTaps::create({spec("ops:every=1,k=40,seed=5")}, ops, dir.path());
  ASSERT_TRUE(taps.ok()) << taps.status().message();
  (*taps)->arm(0);
  torch::Tensor loss = torch::zeros({}, opts);
  for (int64_t t = 0; t < calls; ++t) {
    ys.push_back(conv(xs[t]));
    ys[t].register_hook([&gys, t](const torch::Tensor& g) { gys[t] = g.clone(); });
    (*taps)->conv2d("conv", xs[t], weight, bias, o, ys[t]);
    loss = loss + (ys[t] * ys[t]).sum() * 0.01 * (t + 1);
  }
  loss.backward();
  ASSERT_TRUE((*taps)->record(0).ok());
  reference::Conv2dGeometry g{c, h, w, k, k, o.stride, o.stride, o.padding, o.padding, o.dilation, o.dilation};
  store::CsvText table = ops_csv(dir.path());
  ASSERT_EQ(table.rows.size(), 80u);
  for (const auto& r : table.rows) {
    EXPECT_EQ(at(table, r, "flag"), "within");
    std::vector<int64_t> i = coordinates(at(table, r, "index"));
    reference::Evaluation e;
    double observed;
    if (at(table, r, "phase") == "fwd") {
      const int64_t t = std::stoll(at(table, r, "call"));
      torch::Tensor x = xs[t][i[0]].contiguous(), f = weight[i[1]].detach().contiguous();
      const double bias_value = bias[i[1]].item<double>();
      e = evaluation<double>(reference::evaluate_conv2d_element(x.data_ptr<double>(), x.numel(), f.data_ptr<double>(),
                                                                f.numel(), &bias_value, g, i[2], i[3]));
      observed = ys[t][i[0]][i[1]][i[2]][i[3]].item<double>();
    } else {
      std::vector<torch::Tensor> in, gr;
      for (int64_t t = 0; t < calls; ++t) {
        in.push_back(xs[t].select(1, i[1]));
        gr.push_back(gys[t].select(1, i[0]));
      }
      torch::Tensor planes = torch::cat(in).contiguous(), grads = torch::cat(gr).contiguous();
      e = evaluation<double>(reference::evaluate_conv2d_weight_grad(planes.data_ptr<double>(), planes.numel(),
                                                                    grads.data_ptr<double>(), grads.numel(), calls * n,
                                                                    g, i[2], i[3]));
      observed = weight.grad()[i[0]][i[1]][i[2]][i[3]].item<double>();
    }
    EXPECT_EQ(number(table, r, "exact"), e.f64) << at(table, r, "phase") << " " << at(table, r, "index");
    EXPECT_EQ(number(table, r, "terms"), e.n);
    EXPECT_EQ(number(table, r, "observed"), observed);
  }
}

TEST(OpTaps, Conv2dOverSeveralCallsMatchesTheReference) {
  check_conv({1, 1, 1});
  check_conv({2, 1, 1});
  check_conv({1, 2, 2});
}

TEST(OpTaps, CorruptedValuesAreFlaggedBeyondTheBound) {
  testing::TempDir dir;
  auto taps = OpTaps::create({spec("ops:every=1,k=5,only=fc")}, kLinearOps, dir.path());
  ASSERT_TRUE(taps.ok());
  linear_run(**taps, torch::kFloat32, /*corrupt_output=*/true, /*corrupt_grad=*/true);
  store::CsvText t = ops_csv(dir.path());
  ASSERT_EQ(t.rows.size(), 10u) << "only=fc: fc's fwd and wgrad rows";
  for (const auto& r : t.rows) {
    EXPECT_EQ(at(t, r, "flag"), "beyond") << at(t, r, "phase") << " " << at(t, r, "index");
    EXPECT_GT(number(t, r, "bound_ratio"), 1);
  }
  auto rows = store::read_table(dir.path(), store::kOps);
  ASSERT_TRUE(rows.ok());
  for (const auto& s : summarize_ops(*rows)) {
    EXPECT_EQ(s.fraction_beyond, 1.0) << s.op << " " << s.phase;
    EXPECT_GT(s.max_abs_ulp, 100);
  }
}

// The loss's gradient computed against a target overwritten after the forward (DESIGN.md's aliasing
// story): the forward rows and the loss itself are right, the loss's dgrad rows lie far beyond the bound.
TEST(OpTaps, GradientAgainstAnOverwrittenTargetIsBeyondTheBound) {
  testing::TempDir dir;
  auto taps = OpTaps::create({spec("ops:every=1,k=5,only=fc+loss")}, kLinearOps, dir.path());
  ASSERT_TRUE(taps.ok());
  linear_run(**taps, torch::kFloat32, false, false, /*overwrite_target=*/true);
  store::CsvText t = ops_csv(dir.path());
  ASSERT_EQ(t.rows.size(), 5u + 5u + 1u + 5u);
  for (const auto& r : t.rows) {
    const bool dgrad = at(t, r, "phase") == "dgrad";
    EXPECT_EQ(at(t, r, "flag"), dgrad ? "beyond" : "within") << at(t, r, "op") << " " << at(t, r, "phase");
    if (dgrad) EXPECT_GT(number(t, r, "bound_ratio"), 1e4);
  }
}

// A beyond row whose terms are all exactly zero (bound 0, ratio infinite) is counted apart: rounding
// of a sum of zeros gives zero, so such a result says the kernel is not computing that sum.
TEST(OpTaps, ResultsFromAllZeroTermsAreCountedApart) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<store::OpRow> rows = {op_row(0, "conv", "wgrad", "conv2d", "float32", "within", 0.5, 0.01),
                                    op_row(0, "conv", "wgrad", "conv2d", "float32", "beyond", 12.0, 3.0),
                                    op_row(0, "conv", "wgrad", "conv2d", "float32", "beyond", 5e28, inf),
                                    op_row(2, "conv", "wgrad", "conv2d", "float32", "within", 0.0, 0.0)};
  auto s = summarize_ops(rows);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].beyond, 2);
  EXPECT_EQ(s[0].zero_terms, 1);
  EXPECT_NE(ops_markdown(s).find("| 2 (50%) | 1 |"), std::string::npos) << ops_markdown(s);
  EXPECT_NE(ops_comparison_markdown({"cuda"}, {s}).find("(50%; 1 with all terms 0)"), std::string::npos)
      << ops_comparison_markdown({"cuda"}, {s});
}

TEST(OpTaps, NonFiniteInputsAreReportedAsSuch) {
  testing::TempDir dir;
  std::vector<TapOp> ops = {{"fc", "linear", 6, 6, 1}, {"fc.relu", "relu", 6, 0, 1}};
  auto taps = OpTaps::create({spec("ops:every=1,k=6")}, ops, dir.path());
  ASSERT_TRUE(taps.ok());
  torch::Tensor x = torch::ones({2, 3});
  // Every output and every weight-gradient element meets a NaN or an infinity.
  x[0][0] = std::numeric_limits<float>::quiet_NaN();
  x[1][1] = std::numeric_limits<float>::infinity();
  x[1][2] = -std::numeric_limits<float>::infinity();
  torch::Tensor w = torch::ones({3, 3}).requires_grad_(), b = torch::zeros({3}).requires_grad_();
  (*taps)->arm(0);
  torch::Tensor y = torch::nn::functional::linear(x, w, b);
  (*taps)->linear("fc", x, w, b, y);
  torch::Tensor a = torch::relu(y);
  (*taps)->elementwise("fc.relu", y, a);
  a.sum().backward();
  ASSERT_TRUE((*taps)->record(0).ok());
  store::CsvText t = ops_csv(dir.path());
  ASSERT_EQ(t.rows.size(), 6u + 6u + 6u);
  for (const auto& r : t.rows) {
    EXPECT_EQ(at(t, r, "flag"), "nonfinite_input") << at(t, r, "op") << " " << at(t, r, "phase") << " " << at(t, r, "index");
    EXPECT_TRUE(std::isnan(number(t, r, "ulp_error"))) << "no huge number posing as an error";
    EXPECT_TRUE(std::isnan(number(t, r, "bound_ratio")));
  }
  auto rows = store::read_table(dir.path(), store::kOps);
  ASSERT_TRUE(rows.ok());
  for (const auto& s : summarize_ops(*rows)) {
    EXPECT_EQ(s.nonfinite, 6) << s.op;
    EXPECT_EQ(s.measured, 0);
    EXPECT_TRUE(std::isnan(s.median_abs_ulp));
  }
  EXPECT_NE(ops_markdown(summarize_ops(*rows)).find("| fc | wgrad | float32 | 6 | — | — | 0 (—) | 0 | — | 6 |"),
            std::string::npos)
      << ops_markdown(summarize_ops(*rows));
}

// Generic taps (through the op observer) on softmax, log_softmax (a masked row among them), layer_norm
// and batch_norm in training mode: k samples of each, every one within its allowance and a few ULPs off;
// batch norm in eval mode (running statistics) stays listed as not evaluated.
void check_row_ops(torch::Dtype dtype) {
  testing::TempDir dir;
  auto taps = OpTaps::create({spec("ops:every=1,k=5")}, {}, dir.path(), -1, /*generic=*/true);
  ASSERT_TRUE(taps.ok()) << taps.status().message();
  auto gen = at::detail::createCPUGenerator(17);
  auto opts = torch::TensorOptions().dtype(dtype);
  torch::Tensor x = (torch::randn({4, 3, 5, 6}, gen, opts) * 3).requires_grad_();
  torch::Tensor w = torch::randn({6}, gen, opts).requires_grad_(), b = torch::randn({6}, gen, opts).requires_grad_();
  torch::Tensor bw = torch::randn({3}, gen, opts).requires_grad_(), bb = torch::randn({3}, gen, opts).requires_grad_();
  torch::Tensor mean = torch::zeros({3}, opts), var = torch::ones({3}, opts);
  (*taps)->name_parameters({{"ln.weight", w}, {"ln.bias", b}, {"bn.weight", bw}, {"bn.bias", bb}});
  (*taps)->arm(0);
  const torch::Tensor causal = torch::ones({5, 6}, torch::kBool).triu(1);  // a mask as attention writes it
  torch::Tensor loss = torch::softmax(x.masked_fill(causal, -INFINITY), -1).sum() + torch::log_softmax(x, 1).sum() +
                       torch::layer_norm(x, {6}, w, b, 1e-5).sum() +
                       torch::batch_norm(x, bw, bb, mean, var, /*training=*/true, 0.1, 1e-5, false).sum();
  {
    torch::NoGradGuard no_grad;
    torch::batch_norm(x, bw, bb, mean, var, /*training=*/false, 0.1, 1e-5, false);
  }
  loss.backward();
  ASSERT_TRUE((*taps)->record(0).ok());
  auto rows = store::read_table(dir.path(), store::kOps);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  std::map<std::string, int> measured;
  std::map<std::string, double> ulps, ratio;
  bool eval_listed = false;
  for (const auto& r : *rows) {
    if (r.flag == "not_evaluated") {
      eval_listed |= r.kernel == "batch_norm" && r.phase == "fwd";
      continue;
    }
    if (r.kernel != "softmax" && r.kernel != "log_softmax" && r.kernel != "layer_norm" && r.kernel != "batch_norm") continue;
    EXPECT_EQ(r.flag, "within") << r.op << " " << r.index << ": " << r.bound_ratio;
    EXPECT_EQ(r.phase, "fwd");
    // A few ULPs away from 0 (the errors are absolute: near 0, where log_softmax's largest entries and
    // normalised values cross, their ULPs grow without saying anything).
    if (std::fabs(r.exact) >= 0.25) EXPECT_LT(std::fabs(r.ulp_error), 16) << r.op << " " << r.index;
    ++measured[r.kernel];
    ulps[r.kernel] = std::max(ulps[r.kernel], std::fabs(r.ulp_error));
    ratio[r.kernel] = std::max(ratio[r.kernel], r.bound_ratio);
  }
  for (const char* k : {"softmax", "log_softmax", "layer_norm", "batch_norm"}) {
    EXPECT_EQ(measured[k], 5) << k;
    std::printf("%s %s: max |ULP| %.3g, max error/bound %.3g\n", c10::toString(dtype), k, ulps[k], ratio[k]);
  }
  EXPECT_TRUE(eval_listed);
}

TEST(OpTaps, GenericTapsMeasureSoftmaxLayerNormAndBatchNormFloat32) { check_row_ops(torch::kFloat32); }
TEST(OpTaps, GenericTapsMeasureSoftmaxLayerNormAndBatchNormFloat64) { check_row_ops(torch::kFloat64); }

// softmax's and log_softmax's backward (aten::_softmax_backward_data, _log_softmax_backward_data, run by
// their autograd nodes): dgrad rows named by the forward op, within γ_{n+2} / the allowance; a gradient
// of ones (from a plain sum) and weighted ones, along an inner and the last dim.
void check_softmax_backward(torch::Dtype dtype) {
  testing::TempDir dir;
  auto taps = OpTaps::create({spec("ops:every=1,k=6")}, {}, dir.path(), -1, /*generic=*/true);
  ASSERT_TRUE(taps.ok()) << taps.status().message();
  auto gen = at::detail::createCPUGenerator(23);
  auto opts = torch::TensorOptions().dtype(dtype);
  torch::Tensor x = (torch::randn({4, 7, 5}, gen, opts) * 2).requires_grad_();
  torch::Tensor v = torch::randn({4, 7, 5}, gen, opts);
  (*taps)->arm(0);
  const torch::Tensor h = x * 0.5;  // an activation: the gradient of a leaf x would be a wgrad
  torch::Tensor loss = (torch::softmax(h, 1) * v).sum() + torch::softmax(h, -1).sum() +
                       (torch::log_softmax(h, 2) * v).sum();
  loss.backward();
  ASSERT_TRUE((*taps)->record(0).ok());
  auto rows = store::read_table(dir.path(), store::kOps);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  int measured = 0;
  std::map<std::string, int> measured_by;
  double ulps = 0, ratio = 0;
  for (const auto& r : *rows) {
    const bool log = r.kernel == "_log_softmax_backward_data";
    EXPECT_FALSE((log || r.kernel == "_softmax_backward_data") && r.flag == "not_evaluated") << r.op;
    if (!log && r.kernel != "_softmax_backward_data") continue;
    EXPECT_EQ(r.flag, "within") << r.op << " " << r.index << ": " << r.bound_ratio;
    EXPECT_EQ(r.phase, "dgrad") << r.op;
    EXPECT_EQ(r.op, log ? "log_softmax" : "softmax") << r.kernel;
    ++measured_by[r.kernel];
    ++measured;
    ulps = std::max(ulps, std::fabs(r.ulp_error));
    ratio = std::max(ratio, r.bound_ratio);
  }
  EXPECT_EQ(measured, 18);
  EXPECT_EQ(measured_by["_log_softmax_backward_data"], 6);
  std::printf("%s _softmax_backward_data, _log_softmax_backward_data: max |ULP| %.3g, max error/bound %.3g\n",
              c10::toString(dtype), ulps, ratio);
}

TEST(OpTaps, GenericTapsMeasureSoftmaxBackwardFloat32) { check_softmax_backward(torch::kFloat32); }
TEST(OpTaps, GenericTapsMeasureSoftmaxBackwardFloat64) { check_softmax_backward(torch::kFloat64); }

// GELU forward and backward, both forms (aten::gelu's approximate = 'none' and 'tanh'), on values where
// 1 + erf cancels among them: every sampled element within its allowance, forward and backward.
void check_gelu(torch::Dtype dtype) {
  testing::TempDir dir;
  auto taps = OpTaps::create({spec("ops:every=1,k=8")}, {}, dir.path(), -1, /*generic=*/true);
  ASSERT_TRUE(taps.ok()) << taps.status().message();
  auto gen = at::detail::createCPUGenerator(29);
  auto opts = torch::TensorOptions().dtype(dtype);
  torch::Tensor x = (torch::randn({6, 40}, gen, opts) * 4).requires_grad_();
  (*taps)->arm(0);
  torch::Tensor loss = (torch::gelu(x) * torch::gelu(x, "tanh")).sum();  // gradients other than 1 arrive
  loss.backward();
  ASSERT_TRUE((*taps)->record(0).ok());
  auto rows = store::read_table(dir.path(), store::kOps);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  std::map<std::string, int> measured;
  double ulps = 0, ratio = 0, backward_ratio = 0;
  for (const auto& r : *rows) {
    EXPECT_FALSE(r.flag == "not_evaluated" && r.kernel.rfind("gelu", 0) == 0) << r.kernel << " listed";
    if (r.kernel != "gelu" && r.kernel != "gelu_backward") continue;
    EXPECT_EQ(r.flag, "within") << r.op << " " << r.kernel << " " << r.index << ": " << r.bound_ratio;
    EXPECT_EQ(r.phase, r.kernel == "gelu" ? "fwd" : "wgrad");  // x is a leaf that needs its gradient, as a weight
    ++measured[r.kernel];
    if (r.kernel == "gelu" && r.exact > 0.5) ulps = std::max(ulps, std::fabs(r.ulp_error));
    (r.kernel == "gelu" ? ratio : backward_ratio) = std::max(r.kernel == "gelu" ? ratio : backward_ratio, r.bound_ratio);
  }
  EXPECT_EQ(measured["gelu"], 16);
  EXPECT_EQ(measured["gelu_backward"], 16);
  std::printf("%s gelu: max |ULP| (values > 0.5) %.3g, max error/bound %.3g; gelu_backward max error/bound %.3g\n",
              c10::toString(dtype), ulps, ratio, backward_ratio);
}

// layer_norm's and batch_norm's backward: the bias gradient, a plain sum of grad_output, is measured
// (exact, within γ_n); the input and weight gradients are listed, not evaluated.
TEST(OpTaps, GenericTapsMeasureNormalisationBiasGradientsAndListTheRest) {
  testing::TempDir dir;
  auto taps = OpTaps::create({spec("ops:every=1,k=4")}, {}, dir.path(), -1, /*generic=*/true);
  ASSERT_TRUE(taps.ok()) << taps.status().message();
  auto gen = at::detail::createCPUGenerator(31);
  torch::Tensor x = torch::randn({5, 3, 4, 4}, gen).requires_grad_();
  torch::Tensor w = torch::rand({3}, gen).requires_grad_(), b = torch::randn({3}, gen).requires_grad_();
  torch::Tensor lw = torch::rand({16}, gen).requires_grad_(), lb = torch::randn({16}, gen).requires_grad_();
  (*taps)->arm(0);
  torch::Tensor y = torch::batch_norm(x, w, b, {}, {}, /*training=*/true, 0.1, 1e-5, false);
  torch::Tensor z = torch::layer_norm(y.reshape({5, 3, 16}), {16}, lw, lb);
  (z * z).sum().backward();
  ASSERT_TRUE((*taps)->record(0).ok());
  auto rows = store::read_table(dir.path(), store::kOps);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  std::map<std::string, int> measured;
  std::set<std::string> listed;
  for (const auto& r : *rows) {
    if (r.flag == "not_evaluated") {
      listed.insert(r.kernel + " " + r.phase);
      continue;
    }
    if (r.kernel.find("norm_backward") == std::string::npos) continue;
    EXPECT_EQ(r.flag, "within") << r.op << " " << r.kernel << " " << r.index << ": " << r.bound_ratio;
    EXPECT_EQ(r.phase, "wgrad");
    ++measured[r.kernel];
  }
  EXPECT_EQ(measured["native_batch_norm_backward.grad_bias"], 3);  // k = 4 clamped to the 3 channels
  EXPECT_EQ(measured["native_layer_norm_backward.grad_bias"], 4);
  for (const char* want : {"native_batch_norm_backward dgrad", "native_batch_norm_backward wgrad",
                           "native_layer_norm_backward dgrad", "native_layer_norm_backward wgrad"})
    EXPECT_EQ(listed.count(want), 1u) << want << " among " << ::testing::PrintToString(listed);
}

TEST(OpTaps, GenericTapsMeasureGeluFloat32) { check_gelu(torch::kFloat32); }
TEST(OpTaps, GenericTapsMeasureGeluFloat64) { check_gelu(torch::kFloat64); }

TEST(OpTaps, BadSpecsAreClearErrors) {
  auto error = [](const std::string& text, const std::vector<TapOp>& ops) {
    Status s = check_op_taps(spec(text), ops);
    return s.ok() ? std::string("ok") : s.message();
  };
  EXPECT_EQ(error("ops:k=31", kLinearOps),
            "probe 'ops:k=31': k = 31 exceeds the 30 output elements of fc (at this batch size)");
  EXPECT_EQ(error("ops:k=30", kLinearOps), "ok") << "the one-element loss is tapped whole";
  std::vector<TapOp> small = {{"conv", "conv2d", 400, 9, 2}};
  EXPECT_EQ(error("ops:k=10", small),
            "probe 'ops:k=10': k = 10 exceeds the 9 weight elements of conv (leave it out with only=, or wgrad=false)");
  EXPECT_EQ(error("ops:k=10,wgrad=false", small), "ok");
  // aten: every ATen op observed (trainer/initial.h); left out of the resolved spec unless given, so the
  // run ids of runs that never name it stay as they were.
  EXPECT_EQ(spec("ops:k=4").resolved(), "ops:every=1000,k=4,seed=0,wgrad=true");
  EXPECT_EQ(spec("ops:k=4,aten=true").resolved(), "ops:aten=true,every=1000,k=4,seed=0,wgrad=true");
  EXPECT_NE(parse_probe_spec("ops:aten=yes").status().message().find("aten must be true or false"), std::string::npos)
      << parse_probe_spec("ops:aten=yes").status().message();
  // clamp: k at most, an op with fewer elements sampled whole (the analysis's replays of any model).
  EXPECT_EQ(error("ops:k=10,clamp=true", small), "ok");
  EXPECT_EQ(error("ops:k=31,clamp=true", kLinearOps), "ok");
  EXPECT_EQ(error("ops:only=nope,clamp=true", kLinearOps),
            "probe 'ops:only=nope,clamp=true': no op is named 'nope' in this model (its ops: fc, fc.sigmoid, loss)");
  EXPECT_EQ(error("ops:only=fc+fc.relu", kLinearOps),
            "probe 'ops:only=fc+fc.relu': no op is named 'fc.relu' in this model (its ops: fc, fc.sigmoid, loss)");
  EXPECT_EQ(error("ops:only=enc*", kLinearOps),
            "probe 'ops:only=enc*': no op matches 'enc*' in this model (its ops: fc, fc.sigmoid, loss)");
  EXPECT_EQ(error("ops:only=fc*", kLinearOps), "ok");
  auto every0 = parse_probe_spec("ops:every=0");
  ASSERT_FALSE(every0.ok());
  EXPECT_EQ(every0.status().message(), "probe 'ops:every=0': every must be >= 1 (or give steps with at=), got 0");
  auto empty = parse_probe_spec("ops:only=fc++loss");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "probe 'ops:only=fc++loss': only must be names joined by '+', got 'fc++loss'");
  testing::TempDir dir;
  auto created = OpTaps::create({spec("ops:k=31")}, kLinearOps, dir.path());
  ASSERT_FALSE(created.ok());
  auto none = OpTaps::create({spec("symmetry")}, kLinearOps, dir.path());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE((*none)->due(0)) << "no ops spec: never due";
}

}  // namespace
}  // namespace saddlescope::probes
