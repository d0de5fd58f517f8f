#include "saddlescope/trainer/invariance.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>

#include <unistd.h>

#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "saddlescope/base/progress.h"
#include "saddlescope/base/remove_tree.h"
#include "saddlescope/probes/op_taps.h"
#include "saddlescope/probes/op_trace.h"
#include "saddlescope/store/schema.h"
#include "saddlescope/store/table.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/execution.h"
#include "saddlescope/trainer/initial.h"
#include "shape_text.h"

namespace saddlescope::trainer {
namespace fs = std::filesystem;

Status check_invariance_options(const InvarianceOptions& o) {
  if (o.examples < 1) return Status::Error(fmt::format("--examples: {} is not a number of examples (at least 1)", o.examples));
  if (o.batch_sizes.empty()) return Status::Error("--batch-sizes: give at least one batch size");
  for (int64_t b : o.batch_sizes)
    if (b < 2) return Status::Error(fmt::format("--batch-sizes: {} is not a batch of several examples (at least 2)", b));
  if (o.positions.empty()) return Status::Error("--positions: give at least one of first, middle, last");
  for (const auto& p : o.positions)
    if (p != "first" && p != "middle" && p != "last")
      return Status::Error(fmt::format("--positions: '{}' is not first, middle or last", p));
  if (o.k < 0) return Status::Error(fmt::format("--k: {} samples per op must be 0 (no bound check) or more", o.k));
  if (o.repeats < 1) return Status::Error(fmt::format("--repeats: {} must be at least 1", o.repeats));
  return Status::Ok();
}

namespace {

// Two tensors' difference: bitwise equal, the largest distance in ULPs of their format (the count of
// representable values between them) and the largest relative difference.
struct Difference {
  bool equal = true;
  double max_ulp = 0, max_relative = 0;  // relative: max |a − b| over max |a|, the tensor's scale
  double max_abs = 0;
};

template <class Float, class Bits>
void compare_values(const at::Tensor& a, const at::Tensor& b, Difference* d) {
  const Float* x = a.data_ptr<Float>();
  const Float* y = b.data_ptr<Float>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    Bits bx, by;
    std::memcpy(&bx, &x[i], sizeof(Bits));
    std::memcpy(&by, &y[i], sizeof(Bits));
    if (bx == by) continue;
    d->equal = false;
    if (std::isnan(x[i]) || std::isnan(y[i])) {
      d->max_ulp = d->max_abs = std::numeric_limits<double>::infinity();
      continue;
    }
    // Sign and magnitude as one ordered integer: adjacent floats are adjacent integers.
    constexpr Bits sign = Bits(1) << (8 * sizeof(Bits) - 1);
    auto ordered = [&](Bits v) { return (v & sign) ? -static_cast<long double>(v & ~sign) : static_cast<long double>(v); };
    d->max_ulp = std::max(d->max_ulp, static_cast<double>(std::fabs(ordered(bx) - ordered(by))));
    d->max_abs = std::max(d->max_abs, std::fabs(double(x[i]) - double(y[i])));
  }
}

Difference difference(const at::Tensor& a, const at::Tensor& b) {
  SADDLESCOPE_CHECK(a.sizes() == b.sizes());
  const at::Tensor x = a.detach().cpu().contiguous(), y = b.detach().cpu().contiguous();
  const double inf = std::numeric_limits<double>::infinity();
  if (x.scalar_type() != y.scalar_type()) return {false, inf, inf, inf};
  Difference d;
  if (x.scalar_type() == at::kDouble) {
    compare_values<double, uint64_t>(x, y, &d);
  } else if (x.scalar_type() == at::kFloat) {
    compare_values<float, uint32_t>(x, y, &d);
  } else {  // half, bfloat16: bits through float32 (exact), ULPs counted in float32
    compare_values<float, uint32_t>(x.to(at::kFloat), y.to(at::kFloat), &d);
  }
  const double scale = x.numel() ? x.abs().max().to(at::kDouble).item<double>() : 0;
  if (!d.equal) d.max_relative = d.max_abs == inf ? inf : scale > 0 ? d.max_abs / scale : inf;
  return d;
}

int64_t row_of(const std::string& position, int64_t batch) {
  return position == "first" ? 0 : position == "middle" ? batch / 2 : batch - 1;
}

// The example's part of an op output of the batched evaluation, beside its output alone: the slice of
// the first dimension that grew `batch` times (rows `row`·n .. of n). Without such a dimension, equal
// shapes compare whole; other shapes do not correspond.
struct Parts {
  at::Tensor alone, batched;
  bool whole = false;
};
std::optional<Parts> example_parts(const at::Tensor& alone, const at::Tensor& batched, int64_t batch, int64_t row) {
  if (alone.dim() != batched.dim()) return std::nullopt;
  for (int64_t d = 0; d < alone.dim(); ++d) {
    const int64_t n = alone.size(d);
    if (n == 0 || batched.size(d) != batch * n) continue;
    bool rest_equal = true;
    for (int64_t e = 0; e < alone.dim(); ++e) rest_equal &= e == d || alone.size(e) == batched.size(e);
    if (rest_equal) return Parts{alone, batched.narrow(d, row * n, n), false};
  }
  if (alone.sizes() == batched.sizes()) return Parts{alone, batched, true};
  return std::nullopt;
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

class Checker {
 public:
  Checker(const InvarianceOptions& o, std::shared_ptr<Model> model, torch::Tensor rows)
      : o_(o), model_(std::move(model)), rows_(std::move(rows)), device_(rows_.device()),
        parameters_(named_parameters(*model_)) {}

  // The batch of `batch` rows with example `e` at `row`: the other rows follow the examples.
  torch::Tensor batch_of(int64_t e, int64_t batch, int64_t row) const {
    torch::Tensor b = rows_.narrow(0, o_.examples, batch).clone();
    b[row].copy_(rows_[e]);
    return b;
  }

  // The fixed upstream gradient of the rows `ids` (which data row each batch row is): one seeded draw
  // per row, made before any traced evaluation so that tracing sees only the model's ops.
  torch::Tensor upstream(const std::vector<int64_t>& ids) const {
    std::vector<torch::Tensor> g;
    for (int64_t id : ids) {
      auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(0x5eed0000 + id));
      g.push_back(torch::randn(row_shape_, gen, torch::TensorOptions().dtype(torch::kFloat64)));
    }
    return torch::stack(g).to(device_, rows_.scalar_type());
  }

  // One evaluation: the prediction, and with backward the gradient of the input under `grad` (upstream()).
  struct Evaluation {
    torch::Tensor prediction, input_grad;
  };
  Evaluation evaluate(const torch::Tensor& batch, const torch::Tensor& grad) {
    if (!o_.backward) {
      torch::NoGradGuard no_grad;
      return {model_->predict(batch), {}};
    }
    torch::Tensor x = batch.detach().clone().requires_grad_(true);
    torch::Tensor pred = model_->predict(x);
    if (pred.sizes() != grad.sizes()) return {pred.detach(), {}};  // run_case reports the shape
    torch::autograd::backward({pred}, {grad});
    model_->module().zero_grad();
    return {pred.detach(), x.grad().defined() ? x.grad().detach() : torch::Tensor()};
  }
  // Example e alone (batch 1) or at `row` of a batch, with its upstream gradient when backward.
  struct Input {
    torch::Tensor batch, grad;
  };
  Input input(int64_t e, int64_t batch, int64_t row) const {
    if (batch == 1) return {rows_.narrow(0, e, 1), o_.backward ? upstream({e}) : torch::Tensor()};
    return {batch_of(e, batch, row), o_.backward ? upstream(ids_of(e, batch, row)) : torch::Tensor()};
  }
  Evaluation evaluate(int64_t e, int64_t batch, int64_t row) {
    const Input in = input(e, batch, row);
    return evaluate(in.batch, in.grad);
  }

  std::vector<int64_t> ids_of(int64_t e, int64_t batch, int64_t row) const {
    std::vector<int64_t> ids(static_cast<size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) ids[i] = i == row ? e : o_.examples + i;
    return ids;
  }

  // The example's prediction, and its input's gradient (undefined without backward or when the input
  // gets none), alone against in the batch.
  std::pair<Difference, Difference> compare(const Evaluation& alone, const Evaluation& batched, int64_t row) const {
    Difference grad;
    if (alone.input_grad.defined() && batched.input_grad.defined())
      grad = difference(alone.input_grad[0], batched.input_grad[row]);
    return {difference(alone.prediction[0], batched.prediction[row]), grad};
  }

  std::vector<probes::TracedOp> trace(int64_t e, int64_t batch, int64_t row) {
    const Input in = input(e, batch, row);
    probes::OpTrace t(parameters_);
    t.start();
    (void)evaluate(in.batch, in.grad);
    t.stop();
    synchronize(device_);
    return t.ops();
  }

  // The first op of the example's traces that differs (InvarianceCase's fields). Returns the ATen ops
  // that ran inside it (bound_check's rows for an op that nothing names).
  std::vector<std::string> first_difference(int64_t e, InvarianceCase* c) {
    const int64_t row = c->row;
    const auto alone = trace(e, 1, 0);
    const auto batched = trace(e, c->batch, row);
    c->ops = static_cast<int64_t>(alone.size());
    const size_t n = std::min(alone.size(), batched.size());
    for (size_t i = 0; i < n; ++i) {
      const probes::TracedOp &a = alone[i], &b = batched[i];
      auto differs = [&](const std::string& how, const std::string& detail, double ulp) {
        c->first_op = a.name;
        c->phase = a.phase;
        c->how = how;
        c->detail = detail;
        c->op_index = static_cast<int64_t>(i);
        c->op_max_ulp = ulp;
        return a.inner;
      };
      if (a.name != b.name || a.outputs.size() != b.outputs.size())
        return differs("op sequence", "in the batch: " + b.name, 0);
      for (size_t j = 0; j < a.outputs.size(); ++j) {
        auto parts = example_parts(a.outputs[j], b.outputs[j], c->batch, row);
        if (!parts)
          return differs("shape", shape_text(a.outputs[j].sizes()) + " alone, " + shape_text(b.outputs[j].sizes()) +
                                      " in the batch", 0);
        if (parts->whole && a.phase == "bwd") continue;  // a weight gradient: a sum over the batch
        Difference d = difference(parts->alone, parts->batched);
        if (!d.equal)
          return differs("values", (parts->whole ? "whole output " : "") + shape_text(a.outputs[j].sizes()), d.max_ulp);
      }
    }
    if (alone.size() != batched.size()) {
      c->first_op = n < alone.size() ? alone[n].name : batched[n].name;
      c->phase = "fwd";
      c->how = "op sequence";
      c->detail = fmt::format("{} ops alone, {} in the batch", alone.size(), batched.size());
      c->op_index = static_cast<int64_t>(n);
    }
    return {};
  }

  // Op-tap samples of the first differing op's module in both evaluations against the exact reference.
  Status bound_check(int64_t e, const std::vector<std::string>& inner, InvarianceCase* c) {
    const std::string module = c->first_op.substr(0, c->first_op.find(':'));
    const bool named = c->first_op.find(':') != std::string::npos;
    // An unnamed op's rows carry its ATen name, or that of the op inside it that the taps evaluate
    // (conv2d's convolution, linear's mm).
    std::set<std::string> kernels(inner.begin(), inner.end());
    kernels.insert(named ? c->first_op.substr(c->first_op.find(':') + 1) : c->first_op);
    auto spec = probes::parse_probe_spec(fmt::format("ops:every=1,k={}{}", o_.k, o_.backward ? "" : ",wgrad=false"));
    SADDLESCOPE_CHECK(spec.ok());
    std::error_code ec;
    const fs::path dir = fs::temp_directory_path(ec) / fmt::format("saddlescope-invariance-{}", ::getpid());
    fs::create_directories(dir, ec);
    if (ec) return Status::Error("op taps: cannot create " + dir.string() + ": " + ec.message());
    struct Remove {
      fs::path p;
      ~Remove() { (void)remove_tree(p.string()); }
    } remove{dir};
    for (int64_t step : {0, 1}) {  // alone, then in the batch
      auto taps = probes::OpTaps::create({*spec}, {}, dir.string(), -1, /*generic=*/true);
      if (!taps) return taps.status();
      (*taps)->name_parameters(parameters_);
      const Input in = step == 0 ? input(e, 1, 0) : input(e, c->batch, c->row);
      (*taps)->arm(step);
      (void)evaluate(in.batch, in.grad);
      SADDLESCOPE_RETURN_IF_ERROR((*taps)->record(step));
    }
    auto rows = store::read_table<store::OpRow>(dir.string(), store::kOps);
    if (!rows) return rows.status();
    bool evaluated = false;
    for (const store::OpRow& r : *rows) {
      if (r.flag == "not_evaluated") continue;
      const bool same = named ? r.op.rfind(module + ":", 0) == 0 || r.op == module : kernels.count(r.kernel) || kernels.count(r.op);
      if (!same || (c->phase == "fwd") != (r.phase == "fwd")) continue;
      evaluated = true;
      ++c->samples;
      c->bound_ratio = std::max(c->bound_ratio, r.bound_ratio);
    }
    c->bound = !evaluated ? "not evaluated" : c->bound_ratio <= 1 ? "within" : "beyond";
    return Status::Ok();
  }

  Result<InvarianceCase> run_case(int64_t batch, const std::string& position,
                                  const std::vector<Evaluation>& alone) {
    InvarianceCase c;
    c.batch = batch;
    c.position = position;
    c.row = row_of(position, batch);
    c.examples = o_.examples;
    double worst = -1;
    for (int64_t e = 0; e < o_.examples; ++e) {
      const Evaluation b = evaluate(e, batch, c.row);
      if (b.prediction.dim() == 0 || b.prediction.size(0) != batch)
        return Status::Error(fmt::format("the prediction of a batch of {} rows has shape {}: its rows must be the batch's",
                                         batch, shape_text(b.prediction.sizes())));
      const auto [d, g] = compare(alone[static_cast<size_t>(e)], b, c.row);
      c.equal += d.equal && g.equal;
      c.max_ulp = std::max(c.max_ulp, d.max_ulp);
      c.max_relative = std::max(c.max_relative, d.max_relative);
      c.grad_max_ulp = std::max(c.grad_max_ulp, g.max_ulp);
      c.grad_max_relative = std::max(c.grad_max_relative, g.max_relative);
      const double size = d.max_relative + g.max_relative;  // which example differs most
      if (!(d.equal && g.equal) && size > worst) worst = size, c.example = e;
    }
    if (c.example >= 0) {  // the example that differs most, op by op
      const std::vector<std::string> inner = first_difference(c.example, &c);
      if (o_.k > 0 && !c.first_op.empty() && c.how == "values")
        SADDLESCOPE_RETURN_IF_ERROR(bound_check(c.example, inner, &c));
    }
    return c;
  }

  // One evaluation of the first `batch` rows, as the cases run it (forward, and backward with it).
  InvarianceTiming time_evaluation(int64_t batch) {
    std::vector<int64_t> ids(static_cast<size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) ids[i] = i;
    const Input in{rows_.narrow(0, 0, batch), o_.backward ? upstream(ids) : torch::Tensor()};
    (void)evaluate(in.batch, in.grad);
    synchronize(device_);
    std::vector<double> s;
    for (int64_t i = 0; i < o_.repeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)evaluate(in.batch, in.grad);
      synchronize(device_);
      s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(s.begin(), s.end());
    return {batch, s.front(), s[s.size() / 2], s.back()};
  }

  Result<InvarianceResult> run(std::FILE* progress) {
    InvarianceResult r;
    r.options = o_;
    std::vector<Evaluation> alone;
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor p = model_->predict(rows_.narrow(0, 0, 1));
      if (p.dim() == 0 || p.size(0) != 1)
        return Status::Error(fmt::format("the prediction of one row has shape {}: its rows must be the batch's",
                                         shape_text(p.sizes())));
      row_shape_ = p[0].sizes().vec();
    }
    for (int64_t e = 0; e < o_.examples; ++e) alone.push_back(evaluate(e, 1, 0));
    const int64_t total = static_cast<int64_t>(o_.batch_sizes.size() * o_.positions.size());
    std::optional<Progress> bar;
    if (progress) bar.emplace("invariance", total, "cases", progress);
    int64_t done = 0;
    for (int64_t batch : o_.batch_sizes)
      for (const auto& position : o_.positions) {
        auto c = run_case(batch, position, alone);
        if (!c) return c.status();
        r.invariant &= c->equal == c->examples;
        r.cases.push_back(std::move(*c));
        if (bar) bar->update(++done, fmt::format("batch {} {}", batch, position));
      }
    if (bar) bar->finish(done, r.invariant ? "invariant" : "not invariant");
    std::set<int64_t> sizes(o_.batch_sizes.begin(), o_.batch_sizes.end());
    sizes.insert(1);
    for (int64_t b : sizes) r.timings.push_back(time_evaluation(b));
    return r;
  }

 private:
  InvarianceOptions o_;
  std::shared_ptr<Model> model_;
  torch::Tensor rows_;
  torch::Device device_;
  std::vector<std::pair<std::string, at::Tensor>> parameters_;
  std::vector<int64_t> row_shape_;  // one row's prediction
};

}  // namespace

Result<InvarianceResult> check_invariance(const RunConfig& cfg, const InvarianceOptions& o, std::FILE* progress) {
  SADDLESCOPE_RETURN_IF_ERROR(check_invariance_options(o));
  auto applied = apply_execution(cfg.execution);
  if (!applied) return applied.status();
  auto data = load_dataset(cfg);
  if (!data) return data.status();
  const int64_t largest = *std::max_element(o.batch_sizes.begin(), o.batch_sizes.end());
  const torch::Tensor& eval = data->eval;
  if (eval.size(0) < o.examples + largest)
    return Status::Error(fmt::format("--batch-sizes: a batch of {} beside {} examples needs {} evaluation rows; data {} "
                                     "has {} ({} split)", largest, o.examples, o.examples + largest, cfg.data,
                                     eval.size(0), data->eval_split));
  Perturber none{Perturbation{}};
  nlohmann::json unused;
  auto model = initial_model(cfg, *data, none, &unused);
  if (!model) return model.status();
  torch::Device device(cfg.execution.device.name());
  torch::Tensor rows = eval.narrow(0, 0, o.examples + largest).to(device, dtype_of(cfg));
  Checker checker(o, *model, rows);
  auto r = checker.run(progress);
  if (!r) return r;
  r->execution = *applied;
  r->model = model_name(cfg.model);
  r->device = cfg.execution.device.name();
  r->dtype = dtype_name(cfg.execution.dtype);
  return r;
}

nlohmann::json to_json(const InvarianceResult& r) {
  nlohmann::json j;
  j["model"] = r.model;
  j["device"] = r.device;
  j["dtype"] = r.dtype;
  j["execution"] = r.execution;
  j["examples"] = r.options.examples;
  j["backward"] = r.options.backward;
  j["k"] = r.options.k;
  j["invariant"] = r.invariant;
  j["cases"] = nlohmann::json::array();
  for (const auto& c : r.cases) {
    nlohmann::json x = {{"batch", c.batch},       {"position", c.position},         {"row", c.row},
                        {"examples", c.examples}, {"equal", c.equal},               {"max_ulp", c.max_ulp},
                        {"max_relative", c.max_relative}};
    if (r.options.backward) x["input_grad"] = {{"max_ulp", c.grad_max_ulp}, {"max_relative", c.grad_max_relative}};
    if (!c.first_op.empty())
      x["first_op"] = {{"example", c.example},   {"op", c.first_op},    {"phase", c.phase},
                       {"how", c.how},           {"detail", c.detail},  {"index", c.op_index},
                       {"ops", c.ops},           {"max_ulp", c.op_max_ulp}, {"bound", c.bound},
                       {"bound_ratio", c.bound_ratio}, {"samples", c.samples}};
    j["cases"].push_back(x);
  }
  j["timed"] = r.options.backward ? "forward and backward" : "forward";
  j["seconds"] = nlohmann::json::array();
  for (const auto& t : r.timings)
    j["seconds"].push_back({{"batch", t.batch}, {"min", t.min_s}, {"median", t.median_s}, {"max", t.max_s}});
  return j;
}

}  // namespace saddlescope::trainer
