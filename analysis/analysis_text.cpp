// analysis.json as text, as CSV tables and as the short verdict `saddlescope analyze` prints.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "saddlescope/analysis/analysis_result.h"
#include "saddlescope/analysis/study_analysis.h"
#include "saddlescope/store/csv.h"
#include "saddlescope/store/json_input.h"

namespace saddlescope::analysis {
namespace {

using nlohmann::json;

// A JSON value as one CSV field: numbers in round-trip form, null as empty, strings quoted when needed.
std::string field(const json& v) {
  if (v.is_null()) return "";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return store::format_double(v.get<double>());
  const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// Looks up a path "a.b.c" in `v` (null when absent).
const json& at(const json& v, const std::string& path) {
  static const json null;
  const json* p = &v;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!p->is_object() || !p->contains(key)) return null;
    p = &(*p)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return *p;
}

// A table: one header of column paths (dots become underscores), one line per row.
std::string table(const std::vector<json>& rows, const std::vector<std::string>& columns) {
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) {
    std::string name = columns[i];
    for (char& c : name) if (c == '.') c = '_';
    out += (i ? "," : "") + name;
  }
  out += '\n';
  for (const auto& r : rows) {
    for (size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + field(at(r, columns[i]));
    out += '\n';
  }
  return out;
}

std::vector<json> items(const json& v) {
  std::vector<json> out;
  if (v.is_array()) for (const auto& x : v) out.push_back(x);
  return out;
}

std::string p_text(double p) {
  if (std::isnan(p)) return "n/a";
  return p < 1e-4 ? fmt::format("{:.1e}", p) : fmt::format("{:.4f}", p);
}

std::string g(double v) { return std::isnan(v) ? "n/a" : fmt::format("{:.4g}", v); }
std::string g(const std::optional<double>& v) { return v ? g(*v) : "n/a"; }

std::string percent(double v) { return std::isnan(v) ? "n/a" : fmt::format("{:+.3g}%", 100 * v); }

// What the test the verdict applies could have seen after Holm's correction.
std::string power_text(const std::optional<Detectable>& d, bool paired) {
  if (!d) return "";
  const std::string family = fmt::format("after Holm (α/m = {} over {} tests)", g(d->alpha), d->tests_in_family);
  if (!d->can_be_significant)
    return fmt::format("  power:       {} no effect of any size can be significant: the smallest p {} gives is {} (needs ≥ {} {})\n",
                       family, paired ? "the signed-rank test" : "Mann–Whitney", g(d->min_p), d->n_needed.value_or(-1),
                       paired ? "pairs" : "runs per group");
  return fmt::format("  power:       {} detects a shift of ≥ {} {} (≥ {} in loss) with probability {}\n", family,
                     g(d->shift_sd), d->sd_unit, g(d->shift), g(d->power));
}

// The final-loss lines of the verdict: the design's test, the other design's as a check, and the power.
std::string final_loss_text(const SampleTest& f) {
  if (!f.defined) return "  final loss:  no test (" + f.note.value_or("no values") + ")\n";
  const std::string unpaired = fmt::format("median difference {} [{}, {}], Cliff's delta {} ({}), Mann–Whitney p {}",
                                           g(f.median_difference), g(f.ci_low), g(f.ci_high), g(f.cliffs_delta),
                                           f.magnitude.value_or("n/a"), p_text(f.mwu_p.value_or(std::nan(""))));
  if (!f.paired)
    return fmt::format("  final loss:  independent, n {} vs {}: {} (Holm {})\n", f.n_a, f.n_b, unpaired,
                       p_text(f.p_holm)) +
           power_text(f.detectable, false);
  const PairedTest& p = *f.paired;
  return fmt::format("  final loss:  paired, {} seeds: mean difference {} [{}, {}] (relative {} [{}, {}]), median difference {} "
                     "[{}, {}], Wilcoxon signed-rank p {} (Holm {})\n",
                     p.n_pairs, g(p.mean_difference), g(p.t_ci_low), g(p.t_ci_high), percent(p.relative_mean_difference),
                     percent(p.relative_t_ci_low), percent(p.relative_t_ci_high), g(p.median_difference), g(p.ci_low),
                     g(p.ci_high), p_text(p.p), p_text(f.p_holm)) +
         "  unpaired:    " + unpaired + " (a check, not in the Holm family)\n" + power_text(f.detectable, true);
}

}  // namespace

std::string analysis_json(const json& analysis) {
  return analysis.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::vector<std::pair<std::string, std::string>> analysis_tables(const json& a) {
  std::vector<json> episodes, km, theory;
  for (const auto& r : items(a["runs"]))
    for (auto e : items(r["episodes"])) {
      e["run_id"] = r["run_id"];
      e["group"] = r["group"];
      e["seed"] = r["seed"];
      episodes.push_back(e);
    }
  for (const auto& grp : items(a["groups"]))
    for (auto s : items(grp["km"])) {
      s["group"] = grp["name"];
      km.push_back(s);
    }
  return {
      {"runs.csv", table(items(a["runs"]), {"run_id", "group", "seed", "status", "skipped", "optimizer", "final_loss",
                                            "eval_mse", "baseline_mse", "learns", "probe_count", "probe_interval",
                                            "gradient_scale", "time_in_saddle", "negative_probes", "significant_probes",
                                            "flat_probes", "first_flat_step", "episodes_note"})},
      {"episodes.csv", table(episodes, {"run_id", "group", "seed", "entry_step", "entry_resolution", "exit_step",
                                        "exit_resolution", "censored", "exit_rule", "kind", "symmetry_broken_step",
                                        "escape_steps", "probe_steps", "proximity_entry",
                                        "loss_entry", "loss_exit", "grad_norm_entry", "lambda_min_entry",
                                        "lambda_max_entry", "negative_mass_entry", "lr_entry", "theory.r0", "theory.R",
                                        "theory.predicted_escape_steps"})},
      {"km.csv", table(km, {"group", "step", "at_risk", "events", "censored", "survival", "lower", "upper"})},
      {"groups.csv", table(items(a["groups"]), {"name", "n_runs", "probes", "probes_negative", "probes_significant",
                                                "n_flat", "n_with_episode", "n_escaped", "n_censored",
                                                "median_escape_steps", "median_escape_lower", "median_escape_upper",
                                                "final_loss.median", "final_loss.q1", "final_loss.q3",
                                                "time_in_saddle.median"})},
      {"comparisons.csv",
       table(items(a["comparisons"]),
             {"a", "b", "design", "escape.n_a", "escape.n_b", "logrank.chi2", "logrank.p", "logrank.p_holm",
              "final_loss.n_a", "final_loss.n_b", "final_loss.test", "final_loss.p", "final_loss.p_method",
              "final_loss.p_holm", "final_loss.mwu_u", "final_loss.mwu_p", "final_loss.permutation_p",
              "final_loss.median_difference", "final_loss.ci_low", "final_loss.ci_high", "final_loss.cliffs_delta",
              "final_loss.magnitude", "final_loss.paired.n_pairs", "final_loss.paired.mean_difference",
              "final_loss.paired.t_ci_low", "final_loss.paired.t_ci_high", "final_loss.paired.relative_mean_difference",
              "final_loss.paired.relative_t_ci_low", "final_loss.paired.relative_t_ci_high",
              "final_loss.paired.median_difference", "final_loss.paired.ci_low", "final_loss.paired.ci_high",
              "final_loss.paired.wilcoxon_w_plus", "final_loss.paired.p", "final_loss.paired.permutation_p",
              "final_loss.detectable.alpha", "final_loss.detectable.min_p", "final_loss.detectable.can_be_significant",
              "final_loss.detectable.shift_sd", "final_loss.detectable.shift", "time_in_saddle.test",
              "time_in_saddle.p", "time_in_saddle.p_holm", "time_in_saddle.cliffs_delta", "p_holm"})},
      {"divergence.csv", table(items(a["divergence"]), {"a", "b", "seed", "run_a", "run_b", "first_loss_step",
                                                        "first_param_step", "final_rel_l2", "growth.rate_per_step",
                                                        "growth.rate_std_error", "growth.from_step", "growth.to_step",
                                                        "growth.n", "growth.r2", "error"})},
      {"attribution.csv", table(items(a["attribution"]), {"a", "b", "seed", "run_a", "run_b", "verdict", "step", "op",
                                                          "phase", "config", "evidence", "reason"})},
      {"theory.csv", table(items(a["theory"]["points"]), {"run_id", "entry_step", "predicted", "observed", "residual",
                                                          "optimizer", "exit_rule", "kind", "perturbation"})},
      {"noise.csv", table(items(store::field(a, "noise_budget")["rows"]),
                          {"run_id", "group", "step", "batch", "examples", "lr", "grad_norm", "rounding_norm",
                           "rounding_relative", "sampling_norm", "ratio", "perturbation_norm", "lambda_min",
                           "rounding_vmin", "sampling_vmin", "ratio_vmin", "escape_steps_rounding",
                           "escape_steps_sampling"})},
  };
}

std::string analysis_verdict(const AnalysisResult& a) {
  std::string out = fmt::format("{} runs analysed in {} groups", a.n_runs - a.n_skipped, a.groups.size());
  if (a.n_skipped > 0) out += fmt::format(" ({} skipped: see analysis.json runs[].skipped)", a.n_skipped);
  out += "\n";
  std::map<std::pair<std::string, std::string>, const AttributionResult*> attribution;
  for (const auto& x : a.attribution) attribution[{x.a, x.b}] = &x;
  for (const Comparison& c : a.comparisons) {
    out += c.a + " vs " + c.b + "\n";
    if (c.logrank.defined)
      out += fmt::format("  escape:      log-rank chi2 {} p {} (Holm {}), episodes {} vs {}\n", g(c.logrank.chi2),
                         p_text(c.logrank.p), p_text(c.logrank.p_holm), c.escape.n_a, c.escape.n_b);
    else
      out += fmt::format("  escape:      log-rank undefined (episodes {} vs {}: no escape time with variance to test)\n",
                         c.escape.n_a, c.escape.n_b);
    out += final_loss_text(c.final_loss);
    auto it = attribution.find({c.a, c.b});
    if (it != attribution.end()) {
      const AttributionResult& x = *it->second;
      std::string where = x.op ? fmt::format(" at {} {}", *x.op, x.phase.value_or("")) : "";
      if (x.config) where += " (" + *x.config + ")";
      const std::string step = x.step ? fmt::format(", step {}", *x.step) : "";
      const std::string verdict = x.verdict == "rounding" ? "within rounding bound" : x.verdict;
      out += fmt::format("  difference:  {}{} — {}, seed {}{}\n", verdict, where, x.evidence, x.seed, step);
      if (x.detection && x.detection->fewest_compared) {
        const Detection& d = *x.detection;
        out += fmt::format("  sampled:     {} elements of the least-sampled op: an anomaly in {}% of an op's elements shows "
                           "with probability {} ({}% needs {})\n",
                           *d.fewest_compared, g(100 * d.fraction), g(d.probability), g(100 * d.needed_for), d.needed);
      }
    }
  }
  const Theory& t = a.theory;
  if (t.n > 0)
    out += fmt::format("theory: observed ≈ {} + {} × predicted escape steps, R² {}, n {}; slope − 1 = {} standard errors\n",
                       g(t.intercept), g(t.slope), g(t.r2), t.n, g(t.slope_minus_one_se));
  for (const NoiseLevelFit& l : t.by_noise.value_or(std::vector<NoiseLevelFit>{}))
    if (l.slope)
      out += fmt::format("theory, within perturbation {}: slope {} (± {}), R² {}, n {}\n", l.perturbation, g(l.slope),
                         g(l.slope_std_error), g(l.r2), l.n);
  for (const auto& [optimizer, d] : t.departures.value_or(std::map<std::string, Departure>{}))
    out += fmt::format("theory, {} (not fitted): observed / predicted median {} [{}, {}], n {}\n", optimizer,
                       g(d.median_observed_over_predicted), g(d.min), g(d.max), d.n);
  if (a.noise_budget)
    for (const NoiseBudgetGroup& n : a.noise_budget->groups)
      out += fmt::format("noise budget, {}: rounding {} — {}\n", n.group, n.verdict, n.evidence);
  return out;
}

}  // namespace saddlescope::analysis
