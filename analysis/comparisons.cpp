#include "comparisons.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

namespace saddlescope::analysis::detail {
namespace {

using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool all_equal(const std::vector<double>& a, const std::vector<double>& b) {
  for (const auto* v : {&a, &b})
    for (double x : *v)
      if (x != a.front()) return false;
  return true;
}

double sample_sd(const std::vector<double>& v) {
  if (v.size() < 2) return kNaN;
  double mean = 0, ss = 0;
  for (double x : v) mean += x / static_cast<double>(v.size());
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

// The independent-samples tests of a − b: Mann–Whitney U, a permutation test and a bootstrap CI of the
// difference in medians, Cliff's delta; and the pooled SD that scales the detectable shift.
void independent(json& j, const std::vector<double>& a, const std::vector<double>& b, const AnalysisOptions& o) {
  MannWhitneyResult mw = mann_whitney(a, b);
  PermutationOptions po;
  po.permutations = o.permutations;
  po.seed = o.seed;
  PermutationResult perm = permutation_test(a, b, po);
  BootstrapOptions bo;
  bo.resamples = o.resamples;
  bo.level = o.level;
  bo.seed = o.seed;
  bo.bca = false;
  BootstrapInterval ci = bootstrap_median_difference(a, b, bo);
  const double delta = cliffs_delta(a, b);
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double sa = a.size() > 1 ? sample_sd(a) : 0, sb = b.size() > 1 ? sample_sd(b) : 0;
  j["mwu_u"] = num(mw.u);
  j["mwu_p"] = num(mw.p_value);
  j["mwu_p_method"] = mw.exact ? "exact" : "normal";
  j["permutation_p"] = num(perm.p_value);
  j["median_difference"] = num(ci.estimate);
  j["ci_low"] = num(ci.lower);
  j["ci_high"] = num(ci.upper);
  j["cliffs_delta"] = num(delta);
  j["magnitude"] = cliffs_delta_magnitude(delta);
  j["pooled_sd"] = na + nb > 2 ? num(std::sqrt(((na - 1) * sa * sa + (nb - 1) * sb * sb) / (na + nb - 2))) : json(nullptr);
}

// The paired tests of d_i = a_i − b_i over the seeds the groups share: the mean difference with its t
// interval (also relative to a, the baseline), bootstrap intervals of the mean and the median, the
// Wilcoxon signed-rank test and a sign-flip permutation test of the mean.
json paired(const std::vector<int64_t>& seeds, const std::vector<double>& a, const std::vector<double>& b,
            const AnalysisOptions& o) {
  std::vector<double> d, relative;
  for (size_t i = 0; i < a.size(); ++i) {
    d.push_back(a[i] - b[i]);
    if (a[i] != 0) relative.push_back((a[i] - b[i]) / std::fabs(a[i]));
  }
  const Interval t = t_interval(d, o.level);
  BootstrapOptions bo;
  bo.resamples = o.resamples;
  bo.level = o.level;
  bo.seed = o.seed;
  const Interval mean = bootstrap_paired(d, Location::kMean, bo), median = bootstrap_paired(d, Location::kMedian, bo);
  const WilcoxonResult w = wilcoxon_signed_rank(d);
  PermutationOptions po;
  po.statistic = Location::kMean;
  po.permutations = o.permutations;
  po.seed = o.seed;
  const PermutationResult flip = paired_permutation_test(d, po);
  json j = {{"n_pairs", d.size()},
            {"seeds", seeds},
            {"mean_difference", num(t.estimate)},
            {"t_ci_low", num(t.lower)},
            {"t_ci_high", num(t.upper)},
            {"bootstrap_mean_ci_low", num(mean.lower)},
            {"bootstrap_mean_ci_high", num(mean.upper)},
            {"median_difference", num(median.estimate)},
            {"ci_low", num(median.lower)},
            {"ci_high", num(median.upper)},
            {"sd_difference", num(d.size() > 1 ? sample_sd(d) : kNaN)},
            {"wilcoxon_w_plus", num(w.w_plus)},
            {"n_nonzero", w.n_nonzero},
            {"p", num(w.p_value)},
            {"p_method", w.exact ? "exact" : w.n_nonzero == 0 ? "none differ" : "normal"},
            {"permutation_p", num(flip.p_value)}};
  if (relative.size() == d.size()) {
    const Interval r = t_interval(relative, o.level);
    j["relative_mean_difference"] = num(r.estimate);
    j["relative_t_ci_low"] = num(r.lower);
    j["relative_t_ci_high"] = num(r.upper);
  } else {
    // A baseline value of 0: no relative scale.
    j["relative_mean_difference"] = j["relative_t_ci_low"] = j["relative_t_ci_high"] = nullptr;
  }
  return j;
}

// The seeds a paired design pairs on: those both groups ran with the same data order (first run of each).
std::vector<int64_t> shared_seeds(const GroupSample& a, const GroupSample& b) {
  std::map<int64_t, int64_t> data_a;
  for (const Member& m : a.members) data_a.emplace(m.seed, m.data_seed);
  std::set<int64_t> seeds;
  for (const Member& m : b.members) {
    auto it = data_a.find(m.seed);
    if (it != data_a.end() && it->second == m.data_seed) seeds.insert(m.seed);
  }
  return {seeds.begin(), seeds.end()};
}

const Member* member(const GroupSample& g, int64_t seed) {
  for (const Member& m : g.members)
    if (m.seed == seed) return &m;
  return nullptr;
}

// One sample comparison (final loss or time in saddle): `value` picks it from a member.
template <class Value>
json sample_test(const GroupSample& ga, const GroupSample& gb, bool is_paired, const std::vector<int64_t>& seeds,
                 Value value, const AnalysisOptions& o) {
  std::vector<double> a, b;
  for (const Member& m : ga.members)
    if (auto v = value(m)) a.push_back(*v);
  for (const Member& m : gb.members)
    if (auto v = value(m)) b.push_back(*v);
  json j = {{"n_a", a.size()}, {"n_b", b.size()}, {"p", nullptr}};
  if (a.empty() || b.empty()) {
    j["defined"] = false;
    j["note"] = "a group has no value";
    return j;
  }
  independent(j, a, b, o);
  if (all_equal(a, b)) {  // a constant is no sample: it would only weaken Holm's correction of the rest
    j["defined"] = false;
    j["note"] = "every value of both groups is equal: nothing to test";
    return j;
  }
  j["defined"] = true;
  std::vector<int64_t> used;
  std::vector<double> pa, pb;
  for (int64_t s : seeds) {
    auto va = value(*member(ga, s)), vb = value(*member(gb, s));
    if (!va || !vb) continue;
    used.push_back(s);
    pa.push_back(*va);
    pb.push_back(*vb);
  }
  if (is_paired && used.size() >= 2) {
    j["paired"] = paired(used, pa, pb, o);
    j["test"] = "wilcoxon_signed_rank";
    j["p"] = j["paired"]["p"];
    j["p_method"] = j["paired"]["p_method"];
  } else {
    j["test"] = "mann_whitney";
    j["p"] = j["mwu_p"];
    j["p_method"] = j["mwu_p_method"];
  }
  return j;
}

}  // namespace

json compare_groups(const GroupSample& a, const GroupSample& b, const AnalysisOptions& o) {
  std::vector<Observation> escapes_a, escapes_b;
  for (const Member& m : a.members)
    if (m.escape) escapes_a.push_back(*m.escape);
  for (const Member& m : b.members)
    if (m.escape) escapes_b.push_back(*m.escape);
  LogRankResult lr = log_rank({escapes_a, escapes_b});

  const std::vector<int64_t> seeds = shared_seeds(a, b);
  // kAuto: paired when every run of the smaller group has its partner (same seed, same data order) in
  // the other: a run that failed in one group leaves its partner out, and the rest stay paired.
  const bool full = seeds.size() >= 2 && seeds.size() == std::min(a.members.size(), b.members.size());
  const bool is_paired = o.pairing == AnalysisOptions::Pairing::kOn ? seeds.size() >= 2
                         : o.pairing == AnalysisOptions::Pairing::kAuto ? full
                                                                         : false;
  std::string design_note;
  if (is_paired)
    design_note = fmt::format("paired: {} seeds with the same seed and data order in both groups", seeds.size());
  else if (o.pairing == AnalysisOptions::Pairing::kOff)
    design_note = "independent: --paired off";
  else
    design_note = fmt::format("independent: the groups share {} of their {} and {} runs' seeds and data orders",
                              seeds.size(), a.members.size(), b.members.size());
  auto final_loss = [](const Member& m) { return m.final_loss; };
  auto time_in_saddle = [](const Member& m) { return m.time_in_saddle; };
  return {{"a", a.name},
          {"b", b.name},
          {"design", is_paired ? "paired" : "independent"},
          {"design_note", design_note},
          {"escape", {{"n_a", escapes_a.size()}, {"n_b", escapes_b.size()}}},
          {"logrank", {{"defined", lr.defined}, {"chi2", num(lr.chi_square)}, {"df", lr.df}, {"p", num(lr.p_value)}}},
          {"final_loss", sample_test(a, b, is_paired, seeds, final_loss, o)},
          {"time_in_saddle", sample_test(a, b, is_paired, seeds, time_in_saddle, o)}};
}

namespace {

// detectable_by_simulation, remembered for the process: the tests of one study share kinds and sizes,
// and a process that analyses many studies (the fuzzer, the test suites) meets the same ones again.
DetectableEffect detectable(bool is_paired, int64_t n1, int64_t n2, double alpha, double power, uint64_t seed) {
  static std::mutex mutex;
  static std::map<std::tuple<bool, int64_t, int64_t, double, double, uint64_t>, DetectableEffect> known;
  const auto key = std::make_tuple(is_paired, n1, n2, alpha, power, seed);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  const DetectableEffect e = detectable_by_simulation(
      is_paired ? RankTest::kWilcoxonSignedRank : RankTest::kMannWhitney, n1, n2, alpha, power, 2000, seed);
  std::lock_guard<std::mutex> lock(mutex);
  known.emplace(key, e);
  return e;
}

// The smallest n (pairs, or runs per group of equal size) at which the test's smallest p reaches alpha.
int64_t size_needed(bool is_paired, double alpha) {
  for (int64_t n = 1; n < 1000; ++n) {
    if (smallest_p(is_paired ? RankTest::kWilcoxonSignedRank : RankTest::kMannWhitney, n, n) <= alpha) return n;
  }
  return -1;
}

}  // namespace

void apply_holm(json& comparisons, const AnalysisOptions& o) {
  std::vector<json*> tests;
  std::vector<double> p;
  for (auto& c : comparisons) {
    for (json* t : {&c["logrank"], &c["final_loss"], &c["time_in_saddle"]}) {
      tests.push_back(t);
      p.push_back((*t)["p"].is_number() ? (*t)["p"].get<double>() : kNaN);
    }
  }
  std::vector<double> adjusted = holm_adjust(p);
  const int64_t m = std::count_if(p.begin(), p.end(), [](double x) { return !std::isnan(x); });
  const double alpha = (1 - o.level) / static_cast<double>(std::max<int64_t>(m, 1));
  for (size_t i = 0; i < tests.size(); ++i) {
    json& t = *tests[i];
    t["p_holm"] = num(adjusted[i]);
    if (std::isnan(p[i]) || !t.contains("test")) continue;  // log-rank: not simulated
    const bool is_paired = t["test"] == "wilcoxon_signed_rank";
    const int64_t n1 = is_paired ? t["paired"]["n_pairs"].get<int64_t>() : t["n_a"].get<int64_t>();
    const int64_t n2 = is_paired ? 0 : t["n_b"].get<int64_t>();
    const DetectableEffect e = detectable(is_paired, n1, n2, alpha, o.power, o.seed);
    const json& sd = is_paired ? t["paired"]["sd_difference"] : t["pooled_sd"];
    json d = {{"alpha", alpha},
              {"tests_in_family", m},
              {"power", o.power},
              {"min_p", num(e.min_p)},
              {"can_be_significant", e.min_p <= alpha},
              {"shift_sd", num(e.shift_sd)},
              {"sd_unit", is_paired ? "SD of the per-seed differences" : "pooled SD of the two groups"},
              {"shift", sd.is_number() ? num(e.shift_sd * sd.get<double>()) : json(nullptr)}};
    if (!is_paired) d["cliffs_delta"] = num(e.cliffs_delta);
    if (!(e.min_p <= alpha)) d["n_needed"] = size_needed(is_paired, alpha);
    t["detectable"] = d;
  }
  for (auto& c : comparisons) {
    double best = kNaN;
    for (const json* t : {&c["logrank"], &c["final_loss"], &c["time_in_saddle"]})
      if ((*t)["p_holm"].is_number() && !(best <= (*t)["p_holm"].get<double>())) best = (*t)["p_holm"].get<double>();
    c["p_holm"] = num(best);
  }
}

}  // namespace saddlescope::analysis::detail
