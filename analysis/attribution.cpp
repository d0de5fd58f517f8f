#include "saddlescope/analysis/attribution.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace saddlescope::analysis {
namespace {

// A value that rounding does not explain: beyond the bound, or non-finite where the exact value is not.
bool unexplained(const store::OpRow& r) {
  return r.flag == "beyond" || r.flag == "nonfinite_observed" || r.flag == "nonfinite_input_mismatch";
}

bool same_bits(double x, double y) { return x == y ? std::signbit(x) == std::signbit(y) : std::isnan(x) && std::isnan(y); }

std::string key(const store::OpRow& r) { return r.op + '\n' + r.phase + '\n' + std::to_string(r.call) + '\n' + r.index; }

// The smallest step present in both, or -1.
int64_t common_step(const std::vector<store::OpRow>& a, const std::vector<store::OpRow>& b) {
  std::set<int64_t> steps;
  for (const auto& r : a) steps.insert(r.step);
  int64_t best = -1;
  for (const auto& r : b)
    if (steps.count(r.step) && (best < 0 || r.step < best)) best = r.step;
  return best;
}

void note_side(const store::OpRow& r, int64_t* beyond, double* max_ratio, double* max_ulp) {
  if (r.flag != "within" && r.flag != "beyond") return;
  if (r.flag == "beyond") ++*beyond;
  *max_ratio = std::max(*max_ratio, r.bound_ratio);
  *max_ulp = std::max(*max_ulp, std::fabs(r.ulp_error));
}

// Where (op, phase) runs in a step: forward ops first, then the loss's gradient, then weight gradients
// from the last layer back. `first` is its first appearance in ops.csv (the model's forward order).
int rank_of(const std::string& phase, size_t first, size_t count) {
  if (phase == "fwd") return static_cast<int>(first);
  if (phase == "dgrad") return static_cast<int>(count + first);
  return static_cast<int>(3 * count - first);
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kIdentical: return "identical";
    case Verdict::kRounding: return "rounding";
    case Verdict::kCode: return "code";
  }
  return "?";
}

OpAttribution attribute_ops(const std::vector<store::OpRow>& a, const std::vector<store::OpRow>& b) {
  OpAttribution out;
  out.step = common_step(a, b);
  if (out.step < 0) {
    out.unmatched = static_cast<int64_t>(a.size() + b.size());
    return out;
  }
  std::map<std::string, const store::OpRow*> by_key;
  for (const auto& r : b)
    if (r.step == out.step) by_key[key(r)] = &r;

  std::vector<std::pair<std::string, std::string>> order;  // (op, phase) by first appearance in a
  std::map<std::pair<std::string, std::string>, OpVerdict> ops;
  std::map<std::pair<std::string, std::string>, std::pair<bool, bool>> bad;  // differing rows unexplained per side
  std::map<std::string, size_t> first_of_op;
  int64_t matched = 0;
  for (const auto& ra : a) {
    if (ra.step != out.step) continue;
    auto it = by_key.find(key(ra));
    if (it == by_key.end()) {
      ++out.unmatched;
      continue;
    }
    ++matched;
    const store::OpRow& rb = *it->second;
    const auto id = std::make_pair(ra.op, ra.phase);
    if (!ops.count(id)) {
      order.push_back(id);
      first_of_op.emplace(ra.op, first_of_op.size());
      ops[id].op = ra.op;
      ops[id].phase = ra.phase;
    }
    OpVerdict& v = ops[id];
    ++v.compared;
    note_side(ra, &v.beyond_a, &v.max_ratio_a, &v.max_abs_ulp_a);
    note_side(rb, &v.beyond_b, &v.max_ratio_b, &v.max_abs_ulp_b);
    if (same_bits(ra.observed, rb.observed)) continue;
    ++v.differing;
    bad[id].first |= unexplained(ra);
    bad[id].second |= unexplained(rb);
  }
  for (const auto& r : b)
    if (r.step == out.step) ++out.unmatched;
  out.unmatched -= matched;

  for (auto& [id, v] : ops) {
    if (v.differing == 0) continue;
    const auto [ua, ub] = bad[id];
    v.verdict = ua || ub ? Verdict::kCode : Verdict::kRounding;
    if (v.verdict == Verdict::kCode) v.config = ua && ub ? "both" : ua ? "a" : "b";
  }
  std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
    const size_t n = first_of_op.size();
    return rank_of(x.second, first_of_op[x.first], n) < rank_of(y.second, first_of_op[y.first], n);
  });
  for (const auto& id : order) {
    const OpVerdict& v = ops[id];
    out.ops.push_back(v);
    if (v.verdict > out.verdict) {
      out.verdict = v.verdict;
      out.op = v.op;
      out.phase = v.phase;
      out.config = v.config;
    }
  }
  return out;
}

}  // namespace saddlescope::analysis
