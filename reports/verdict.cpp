// The report's verdict: each comparison in words — whether the final loss, the time in saddle and the
// escape differ at the Holm-adjusted level, what the tests could have detected, and what the attribution
// found as the cause of the first difference between paired runs — and the headline over all of them.
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "model.h"
#include "saddlescope/analysis/stats.h"

namespace saddlescope::reports {
namespace {

using nlohmann::json;

using analysis::AttributionResult;
using analysis::Comparison;
using analysis::SampleTest;

// The words of a test's outcome at level alpha: differs, no difference found, or not testable. `d`: the
// analysis's detectable effect after Holm (absent in analyses written before it: then Mann–Whitney's
// at alpha from the group sizes `n`, when known).
std::string finding(bool defined, double p_holm, const std::optional<analysis::Detectable>& d,
                    std::optional<std::pair<int64_t, int64_t>> n, double alpha) {
  if (!defined || std::isnan(p_holm)) return "not testable";
  if (p_holm < alpha) return "differs";
  // A test that could not reach significance with any data says nothing: not "no difference".
  if (d) return d->can_be_significant ? "no difference found" : "too few runs to tell";
  if (n && analysis::mann_whitney_detectable(n->first, n->second, alpha).min_p > alpha) return "too few runs to tell";
  return "no difference found";
}
std::string finding(const SampleTest& t, double alpha) {
  return finding(t.defined, t.p_holm, t.detectable, std::make_pair(t.n_a, t.n_b), alpha);
}
std::string finding(const analysis::LogRank& t, double alpha) {
  return finding(t.defined, t.p_holm, std::nullopt, std::nullopt, alpha);
}

// What the test could have seen: the analysis's own `detectable` (at the α/m its Holm correction
// applies, by simulation) when the analysis wrote one, else Noether's approximation at alpha for
// analyses written before it.
TestPower power_of(const SampleTest& test, double alpha) {
  TestPower p;
  p.n_a = test.n_a;
  p.n_b = test.n_b;
  if (const auto& d = test.detectable) {
    if (test.test == "wilcoxon_signed_rank" && test.paired) p.pairs = test.paired->n_pairs;
    p.alpha = d->alpha;
    p.after_holm = true;
    p.power = d->power;
    p.min_p = d->min_p;
    p.n_needed = d->n_needed;
    p.detectable_cliffs_delta = d->cliffs_delta.value_or(NAN);
    p.detectable_shift_sd = d->shift_sd;
    p.sd_unit = d->sd_unit;
    p.detectable_shift = d->shift;
    return p;
  }
  const auto e = analysis::mann_whitney_detectable(test.n_a, test.n_b, alpha, 0.8);
  p.alpha = alpha;
  p.power = 0.8;
  p.min_p = e.min_p;
  p.detectable_cliffs_delta = e.cliffs_delta;
  p.detectable_shift_sd = e.shift_sd;
  p.sd_unit = "SD";
  p.detectable_shift = NAN;
  return p;
}

// One comparison's sentence-ready record: the analysis's numbers, the findings and the power.
ComparisonModel comparison_model(const Comparison& c, const std::vector<AttributionResult>& attribution, double alpha) {
  ComparisonModel m;
  m.a = c.a;
  m.b = c.b;
  m.p_holm = c.p_holm;
  m.escape = c.escape;
  m.logrank = c.logrank;
  m.final_loss = c.final_loss;
  m.time_in_saddle = c.time_in_saddle;
  m.findings = {finding(c.final_loss, alpha), finding(c.time_in_saddle, alpha), finding(c.logrank, alpha),
                "not examined"};
  const SampleTest& fl = c.final_loss;
  m.difference = fl.paired ? Difference{"paired mean", fl.paired->mean_difference, fl.paired->t_ci_low, fl.paired->t_ci_high}
                           : Difference{"median", fl.median_difference.value_or(NAN), fl.ci_low.value_or(NAN),
                                        fl.ci_high.value_or(NAN)};
  m.power = {power_of(c.final_loss, alpha), power_of(c.time_in_saddle, alpha)};
  for (const AttributionResult& a : attribution)
    if (a.a == c.a && a.b == c.b) {
      m.attribution = a;
      m.attribution->ops.reset();
      m.findings.cause = a.verdict;
    }
  return m;
}

// An estimate a defined test always has. Absent (a hand-edited analysis.json), it throws as the read of
// a missing JSON key does, which write_report turns into one line naming analysis.json and the key.
const std::optional<double>& required(const std::optional<double>& v, const char* key) {
  if (!v) throw json::out_of_range::create(403, fmt::format("key '{}' not found", key), nullptr);
  return v;
}

std::string comparison_sentence(const ComparisonModel& c) {
  const Findings& f = c.findings;
  std::string s = fmt::format("{} vs {}: ", c.a, c.b);
  const SampleTest& fl = c.final_loss;
  if (f.final_loss == "not testable") {
    s += "final loss not testable";
  } else {
    if (const auto& paired = fl.paired)
      s += fmt::format("final loss {} (paired over {} seeds: mean difference {} [{}, {}], relative {} [{}, {}]; "
                       "Wilcoxon signed-rank Holm p {}; unpaired Cliff's δ {})",
                       f.final_loss, show(paired->n_pairs), show(paired->mean_difference), show(paired->t_ci_low),
                       show(paired->t_ci_high), show_percent(paired->relative_mean_difference),
                       show_percent(paired->relative_t_ci_low), show_percent(paired->relative_t_ci_high),
                       show_p(fl.p_holm), show(required(fl.cliffs_delta, "cliffs_delta")));
    else
      s += fmt::format("final loss {} (median difference {} [{}, {}], Cliff's δ {}, Holm p {})", f.final_loss,
                       show(required(fl.median_difference, "median_difference")),
                       show(required(fl.ci_low, "ci_low")), show(required(fl.ci_high, "ci_high")),
                       show(required(fl.cliffs_delta, "cliffs_delta")), show_p(fl.p_holm));
    const TestPower& pw = c.power.final_loss;
    if (f.final_loss != "differs") {
      const std::string sizes = pw.pairs ? fmt::format("{} pairs", show(*pw.pairs))
                                         : fmt::format("{} vs {} runs", show(pw.n_a), show(pw.n_b));
      const std::string level = pw.after_holm ? fmt::format("α = {} (Holm's threshold for the smallest p)", show(pw.alpha))
                                              : fmt::format("α = {}", show(pw.alpha));
      if (std::isfinite(pw.detectable_shift_sd))
        s += fmt::format(", though with {} only a shift of {} {}{} was detectable at power {} and {}", sizes,
                         show(pw.detectable_shift_sd), pw.sd_unit,
                         std::isfinite(pw.detectable_shift) ? " (" + show(pw.detectable_shift) + " in loss)" : "",
                         show(pw.power), level);
      else
        s += fmt::format(", and with {} no effect could have reached {} (smallest possible p {}{})", sizes, level,
                         show_p(pw.min_p),
                         pw.n_needed ? "; needs " + show(*pw.n_needed) + (pw.pairs ? " pairs" : " runs per group") : "");
    }
  }
  if (f.escape == "not testable") s += "; escape not testable (no escape times to compare)";
  else s += fmt::format("; escape {} (log-rank Holm p {})", f.escape, show_p(c.logrank.p_holm));
  if (const auto& at = c.attribution) {
    const std::string& v = at->verdict;
    const std::string step = show(at->step);
    if (v == "identical") s += "; the paired runs are bitwise identical";
    else if (v == "rounding")
      s += fmt::format("; their runs differ only within float32's rounding bound (first at {} {}, step {})",
                       at->op.value_or("?"), at->phase.value_or(""), step);
    else if (v == "code")
      s += fmt::format("; their runs differ by a code-path difference at {} {} in {} (step {}), beyond rounding",
                       at->op.value_or("?"), at->phase.value_or(""), at->config.value_or("?"), step);
    else if (v == "undetermined")
      s += "; their runs differ, but every sampled op agrees on identical inputs (the cause lies outside the sampled ops)";
    else s += "; what makes their runs differ could not be examined";
  }
  return s + ".";
}

}  // namespace

VerdictModel verdict_model(const StudyData& study, double alpha) {
  VerdictModel v;
  int64_t differ = 0, too_few = 0;
  for (const Comparison& c : study.analysis.comparisons) {
    ComparisonModel m = comparison_model(c, study.analysis.attribution, alpha);
    const Findings& f = m.findings;
    if (f.final_loss == "differs" || f.escape == "differs" || f.time_in_saddle == "differs") ++differ;
    else if (f.final_loss == "too few runs to tell") ++too_few;
    ++v.counts.causes[f.cause];
    m.sentence = comparison_sentence(m);
    v.sentences.push_back(m.sentence);
    v.comparisons.push_back(std::move(m));
  }
  const size_t n = v.comparisons.size();
  auto& causes = v.counts.causes;
  if (n == 0) {
    v.headline = "No comparison: the analysis found fewer than two groups of analysable runs.";
  } else {
    v.headline = fmt::format("{} of {} comparison{} show{} a difference in final loss, time in saddle or escape at "
                             "Holm-adjusted α = {}",
                             differ, n, n == 1 ? "" : "s", differ == 1 ? "s" : "", show(alpha));
    if (too_few > 0)
      v.headline += fmt::format("; {} of the others had too few runs for any difference to reach significance", too_few);
    std::string why;
    for (const char* k : {"code", "rounding", "undetermined", "identical", "not examined", "none"})
      if (causes.count(k))
        why += fmt::format("{}{} {}", why.empty() ? "" : ", ", causes[k],
                           std::string(k) == "code"        ? "by a code-path difference"
                           : std::string(k) == "rounding"  ? "within the rounding bound only"
                           : std::string(k) == "identical" ? "bitwise identical"
                           : std::string(k) == "undetermined" ? "differing for a cause outside the sampled ops"
                                                               : "not examined");
    v.headline += ". Paired runs of the compared configs: " + why + ".";
  }
  v.counts.comparisons = static_cast<int64_t>(n);
  v.counts.differ = differ;
  v.counts.too_few_runs = too_few;
  return v;
}

}  // namespace saddlescope::reports
