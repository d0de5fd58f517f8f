#include "saddlescope/analysis/divergence.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "saddlescope/store/csv.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"

namespace saddlescope::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Maps a float's bits to an integer that is monotone in the float's value (so that the difference of
// two such integers counts the representable values between them).
template <class Float, class Int, class UInt>
Int ordered(Float x) {
  UInt u;
  std::memcpy(&u, &x, sizeof u);
  Int i = static_cast<Int>(u & (~UInt(0) >> 1));
  return (u >> (sizeof(UInt) * 8 - 1)) ? -i : i;
}

// Element i of a float32/float64 array as double.
double element(const store::NpyArray& a, int64_t i) {
  return a.dtype == store::Dtype::kFloat64 ? a.data<double>()[i] : a.data<float>()[i];
}

// Compares parameter `name` of two snapshots (a and b), adding to `out` and the sums.
Status compare_param(const std::string& name, const store::NpyArray* a, const store::NpyArray* b,
                     SnapshotDivergence* out, double* diff_sq, double* norm_sq, bool* same_format) {
  if (a->shape != b->shape) return Status::Error(name + ": shapes differ between the runs");
  for (const auto* x : {a, b})
    if (x->dtype == store::Dtype::kUInt8) return Status::Error(name + ": parameters must be float32 or float64");
  bool both64 = a->dtype == store::Dtype::kFloat64 && b->dtype == store::Dtype::kFloat64;
  bool same = a->dtype == b->dtype;
  *same_format = *same_format && same;
  int64_t n = a->numel();
  for (int64_t i = 0; i < n; ++i) {
    double x = element(*a, i), y = element(*b, i);
    bool differ = same ? std::memcmp(a->bytes.data() + i * store::dtype_size(a->dtype),
                                     b->bytes.data() + i * store::dtype_size(b->dtype), store::dtype_size(a->dtype)) != 0
                       : !(x == y);
    if (!differ) continue;
    ++out->differing;
    double ulp = both64 ? ulp_distance(x, y) : ulp_distance(static_cast<float>(x), static_cast<float>(y));
    out->max_ulp_distance = std::max(out->max_ulp_distance, ulp);
    *diff_sq += (x - y) * (x - y);
  }
  for (int64_t i = 0; i < n; ++i) *norm_sq += element(*a, i) * element(*a, i);
  out->elements += n;
  return Status::Ok();
}

// (step, loss) from a run's metrics.csv rows, by step (the last row of a repeated step). A sorted vector,
// not a map: a study's analysis compares thousands of pairs of 10⁴-step runs.
using Losses = std::vector<std::pair<int64_t, double>>;
Losses losses(const std::vector<store::MetricsRow>& rows) {
  Losses v;
  v.reserve(rows.size());
  for (const auto& r : rows) v.emplace_back(r.step, r.loss);
  std::stable_sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  Losses unique;
  unique.reserve(v.size());
  for (const auto& x : v) {
    if (!unique.empty() && unique.back().first == x.first) unique.back() = x;
    else unique.push_back(x);
  }
  return unique;
}

double loss_at(const Losses& v, int64_t step) {
  auto it = std::lower_bound(v.begin(), v.end(), step, [](const auto& x, int64_t s) { return x.first < s; });
  return it != v.end() && it->first == step ? it->second : kNaN;
}

}  // namespace

double ulp_distance(float x, float y) {
  if (std::isnan(x) || std::isnan(y)) return INFINITY;
  return std::fabs(static_cast<double>(ordered<float, int64_t, uint32_t>(x) - ordered<float, int64_t, uint32_t>(y)));
}

double ulp_distance(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return INFINITY;
  // Differences of the ordered 64-bit integers can exceed int64: subtract in long double.
  return std::fabs(static_cast<long double>(ordered<double, int64_t, uint64_t>(x)) -
                   static_cast<long double>(ordered<double, int64_t, uint64_t>(y)));
}

Result<Divergence> diverge(const store::RunDir& a, const store::RunDir& b) {
  auto metrics_a = a.metrics();
  if (!metrics_a) return metrics_a.status();
  auto metrics_b = b.metrics();
  if (!metrics_b) return metrics_b.status();
  return diverge(a, *metrics_a, b, *metrics_b);
}

Result<Divergence> diverge(const store::RunDir& a, const std::vector<store::MetricsRow>& metrics_a,
                           const store::RunDir& b, const std::vector<store::MetricsRow>& metrics_b) {
  for (const auto* r : {&a, &b})
    if (r->snapshot_steps().empty())
      return Status::Error(r->path() + ": has no snapshots (status " + store::status_name(r->state()) + ")");
  const auto loss_a = losses(metrics_a), loss_b = losses(metrics_b);

  Divergence d;
  for (size_t i = 0, j = 0; i < loss_a.size() && j < loss_b.size();) {  // merge by step
    if (loss_a[i].first < loss_b[j].first) {
      ++i;
    } else if (loss_b[j].first < loss_a[i].first) {
      ++j;
    } else {
      ++d.loss_steps;
      if (!d.first_loss_step && std::memcmp(&loss_a[i].second, &loss_b[j].second, sizeof(double)) != 0)
        d.first_loss_step = loss_a[i].first;
      ++i, ++j;
    }
  }

  std::vector<int64_t> steps_b = b.snapshot_steps();
  for (int64_t step : a.snapshot_steps()) {
    if (!std::binary_search(steps_b.begin(), steps_b.end(), step)) continue;
    auto snap_a = a.snapshot(step);
    if (!snap_a) return snap_a.status();
    auto snap_b = b.snapshot(step);
    if (!snap_b) return snap_b.status();
    std::vector<std::string> names_a, names_b;
    for (const auto& [name, arr] : *snap_a) names_a.push_back(name);
    for (const auto& [name, arr] : *snap_b) names_b.push_back(name);
    if (names_a != names_b)
      return Status::Error(fmt::format("{} and {}: step {} snapshots hold different parameters (different models?)",
                                       a.path(), b.path(), step));
    SnapshotDivergence s;
    s.step = step;
    double diff_sq = 0, norm_sq = 0;
    for (const auto& name : names_a) {
      int64_t before = s.differing;
      Status st = compare_param(name, &snap_a->at(name), &snap_b->at(name), &s, &diff_sq, &norm_sq, &d.same_format);
      if (!st.ok()) return Status::Error(fmt::format("{} and {}, step {}: {}", a.path(), b.path(), step, st.message()));
      if (s.first_param.empty() && s.differing > before) s.first_param = name;
    }
    s.rel_l2 = norm_sq > 0 ? std::sqrt(diff_sq / norm_sq) : (diff_sq > 0 ? INFINITY : 0.0);
    s.loss_a = loss_at(loss_a, step);
    s.loss_b = loss_at(loss_b, step);
    if (!d.first_param_step && s.differing > 0) d.first_param_step = step;
    d.snapshots.push_back(s);
  }
  if (d.snapshots.empty()) return Status::Error(a.path() + " and " + b.path() + " have no snapshot step in common");
  return d;
}

Result<Divergence> diverge(const std::string& a, const std::string& b) {
  auto run_a = store::RunDir::open(a);
  if (!run_a) return run_a.status();
  auto run_b = store::RunDir::open(b);
  if (!run_b) return run_b.status();
  return diverge(*run_a, *run_b);
}

std::string summarize(const Divergence& d, const std::string& a, const std::string& b) {
  const SnapshotDivergence& first = d.snapshots.front();
  const SnapshotDivergence& last = d.snapshots.back();
  std::string s = fmt::format("A = {}\nB = {}\n", a, b);
  if (first.differing == 0)
    s += fmt::format("At step {} the parameters are identical {}. ", first.step,
                     d.same_format ? "bit for bit" : "in value (one run stores them in float64)");
  else
    s += fmt::format("At step {} already {} of {} parameters differ (max {} ULP, first in {}). ", first.step,
                     first.differing, first.elements, first.max_ulp_distance, first.first_param);
  if (d.first_loss_step)
    s += fmt::format("Their losses first differ at step {} (of {} steps compared)", *d.first_loss_step, d.loss_steps);
  else
    s += fmt::format("Their losses are bitwise identical over all {} steps compared", d.loss_steps);
  if (d.first_param_step)
    s += fmt::format("; parameters first differ at snapshot step {}. ", *d.first_param_step);
  else
    s += fmt::format(" and every common snapshot is bitwise identical. ");
  s += fmt::format("At the last common snapshot (step {}): ‖θa−θb‖/‖θa‖ = {:.3g}, {} of {} elements differ, max "
                   "distance {} ULP",
                   last.step, last.rel_l2, last.differing, last.elements, last.max_ulp_distance);
  if (!std::isnan(last.loss_a)) s += fmt::format(", loss {:.6g} vs {:.6g}", last.loss_a, last.loss_b);
  return s + ".\n";
}

std::string to_csv(const Divergence& d) {
  std::string out = "step,rel_l2,max_ulp_distance,differing,elements,first_param,loss_a,loss_b,loss_diff\n";
  for (const auto& s : d.snapshots)
    out += fmt::format("{},{},{},{},{},{},{},{},{}\n", s.step, store::format_double(s.rel_l2),
                       store::format_double(s.max_ulp_distance), s.differing, s.elements, s.first_param,
                       store::format_double(s.loss_a), store::format_double(s.loss_b),
                       store::format_double(s.loss_b - s.loss_a));
  return out;
}

}  // namespace saddlescope::analysis
