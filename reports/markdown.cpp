// report.md: the report model for terminals and code review — the verdict, the tables that carry the
// numbers, and the figures linked as PNG (GitHub and most viewers show them inline).
#include <fmt/format.h>

#include <cmath>

#include "model.h"

namespace saddlescope::reports {
namespace {

using nlohmann::json;

// A table cell: pipes and newlines would break the row.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}
std::string cell(const json& v) { return cell(show(v)); }
std::string cell(double v) { return cell(show(v)); }
std::string cell(int64_t v) { return cell(show(v)); }
template <class T>
std::string cell(const std::optional<T>& v) {  // "—" when empty
  return v ? cell(*v) : cell(json());
}

std::string table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows) {
  std::string s = "|";
  for (const auto& h : head) s += " " + h + " |";
  s += "\n|";
  for (size_t i = 0; i < head.size(); ++i) s += "---|";
  s += "\n";
  for (const auto& r : rows) {
    s += "|";
    for (const auto& c : r) s += " " + c + " |";
    s += "\n";
  }
  return s + "\n";
}

std::string figures(const ReportModel& m, const std::string& section) {
  std::string s;
  for (const FigureEntry& f : m.figures)
    if (f.section == section)
      s += fmt::format(
          "![Figure {}. {}](figures/{}.png)\n\n*Figure {}. {}.* {} ([SVG](figures/{}.svg), "
          "[data](figures/{}))\n\n",
          show(f.number), f.title, f.name, show(f.number), f.title, f.caption, f.name, f.files.at(3));
  return s;
}

}  // namespace

std::string render_markdown(const ReportModel& m) {
  std::string s = fmt::format(
      "# Saddle-point report: {}\n\n{} runs ({} not in the statistics), generated {} from "
      "`{}/analysis/analysis.json`; α = {}. The full report: `index.html`; every number: "
      "`report.json`.\n\n",
      m.study, show(m.n_runs), show(m.n_skipped), m.generated, m.study_dir, show(m.alpha));
  const VerdictModel& v = m.verdict;
  s += "## 1. Verdict\n\n**" + v.headline + "**\n\n";
  if (!m.warnings.empty()) {
    s += "Partial or changed since the analysis:\n\n";
    for (const auto& w : m.warnings) s += "- " + w + "\n";
    s += "\n";
  }
  for (const auto& t : v.sentences) s += "- " + t + "\n";
  s += "\n";
  std::vector<std::vector<std::string>> rows;
  for (const ComparisonModel& c : v.comparisons) {
    const analysis::SampleTest& fl = c.final_loss;
    const Difference& d = c.difference;
    const TestPower& pw = c.power.final_loss;
    rows.push_back({cell(c.a) + " vs " + cell(c.b), cell(c.findings.final_loss),
                    cell(d.estimate) + " (" + cell(d.kind) + ")", "[" + cell(d.low) + ", " + cell(d.high) + "]",
                    cell(fl.cliffs_delta), cell(show_p(fl.p_holm)),
                    std::isfinite(pw.detectable_shift_sd) ? cell(pw.detectable_shift_sd) + " SD"
                                                          : "none (min p " + cell(show_p(pw.min_p)) + ")",
                    cell(c.findings.escape), cell(show_p(c.logrank.p_holm)), cell(c.findings.cause)});
  }
  if (!rows.empty())
    s += table({"a vs b", "final loss", "a − b", "95% CI", "Cliff's δ", "Holm p", "detectable shift", "escape",
                "log-rank Holm p", "cause"},
               rows);

  const SetupModel& st = m.setup;
  s += "## 2. Setup\n\n";
  rows.clear();
  for (const SetupRun& r : st.runs)
    rows.push_back({cell(r.group), cell(r.seed), cell(r.status), r.analysed ? "yes" : "no", cell(r.note)});
  for (const NotRun& r : st.not_run) rows.push_back({cell(r.group), cell(r.seed), cell(r.state), "no", cell(r.note)});
  s += table({"config", "seed", "status", "analysed", "note"}, rows);
  int n = 0;
  for (const Machine& mc : st.machines) s += fmt::format("Machine {} ({} runs): {}.\n\n", ++n, show(mc.runs), mc.summary);

  s += "## 3. Loss\n\n";
  rows.clear();
  for (const LossGroup& g : m.loss.groups) {
    const analysis::Summary& f = g.final_loss;
    rows.push_back({cell(g.name), cell(f.n), cell(f.median), cell(f.q1), cell(f.q3)});
  }
  s += table({"config", "runs", "median final loss", "q1", "q3"}, rows);
  for (const NotLearning& r : m.loss.not_learning)
    s += fmt::format("- **does not learn:** {} seed {}: evaluation MSE {} against the baseline's {}\n",
                     show(r.group), show(r.seed), show(r.eval_mse), show(r.baseline_mse));
  s += figures(m, "loss");

  s += "## 4. Saddle episodes\n\n";
  rows.clear();
  for (const analysis::GroupResult& g : m.saddles.groups)
    rows.push_back({cell(g.name), cell(g.n_runs), cell(g.n_with_episode), cell(g.n_escaped), cell(g.n_censored),
                    cell(g.median_escape_steps),
                    "[" + cell(g.median_escape_lower) + ", " + cell(g.median_escape_upper) + "]"});
  s += table({"config", "runs", "with an episode", "escaped", "censored", "median escape (steps)", "CI"}, rows);
  s += figures(m, "saddles");

  s += "## 5. Rounding\n\n";
  for (const auto& c : m.rounding.zero_term_callouts) s += "- **" + c + "**\n";
  for (const RoundingGroup& g : m.rounding.groups) {
    rows.clear();
    for (const analysis::OpSummary& o : g.ops) {
      const bool beyond = o.beyond > 0;
      rows.push_back({(beyond ? "**" : "") + cell(o.op) + (beyond ? "**" : ""), cell(o.phase), cell(o.samples),
                      cell(o.median_abs_ulp), cell(o.max_abs_ulp), cell(o.beyond), cell(o.max_bound_ratio)});
    }
    s += "### " + g.name + "\n\n" +
         table({"op", "phase", "samples", "median \\|ULP\\|", "max \\|ULP\\|", "beyond bound", "max error/bound"}, rows);
  }
  if (m.rounding.groups.empty()) s += "No op taps recorded.\n\n";
  s += figures(m, "rounding");

  s += "## 6. Divergence and attribution\n\n";
  rows.clear();
  for (const analysis::AttributionResult& a : m.divergence.attribution)
    rows.push_back({cell(a.a) + " vs " + cell(a.b), cell(a.seed), cell(a.verdict), cell(a.step), cell(a.op),
                    cell(a.phase), cell(a.config), cell(a.evidence)});
  if (!rows.empty()) s += table({"pair", "seed", "verdict", "step", "op", "phase", "beyond in", "evidence"}, rows);
  s += figures(m, "divergence");

  s += "## 7. Symmetry\n\n";
  rows.clear();
  for (const SymmetryRun& r : m.symmetry.runs)
    for (const SymmetryLayer& l : r.layers)
      rows.push_back({cell(r.group), cell(r.seed), cell(l.layer), cell(l.identical_pairs_start), cell(l.identical_pairs_end),
                      l.broke_at_step ? cell(*l.broke_at_step) : "never"});
  s += rows.empty() ? "Not probed.\n\n"
                    : table({"config", "seed", "layer", "identical pairs at start", "at end", "broke at step"}, rows);
  s += figures(m, "symmetry");

  s += "## 8. Batch invariance\n\n";
  rows.clear();
  for (const auto& r : m.invariance.at("rows"))
    rows.push_back({cell(r.at("model")), cell(r.at("device")), cell(r.at("config")), r.at("invariant") ? "yes" : "no",
                    cell(r.at("cases_equal")) + "/" + cell(r.at("cases")), cell(r.at("max_ulp")),
                    cell(r.at("max_relative")), cell(r.at("input_grad_max_relative")),
                    r.at("first_ops").get<std::string>().empty() ? "—" : cell(r.at("first_ops").get<std::string>()),
                    cell(r.at("batch")) + ": " + cell(r.at("ms").at("median")), cell(r.at("time_ratio"))});
  s += rows.empty() ? "Not measured: `saddlescope invariance ... --json STUDY/invariance/MODEL-DEVICE-CONFIG.json` "
                      "puts a model's result here.\n"
                    : table({"model", "device", "config", "batch-invariant", "cases equal", "max ULP", "max relative",
                             "input gradient max relative", "first op that differs (cases)",
                             "ms per evaluation at batch", "time vs first config"},
                            rows);

  s += "\n## 9. Noise budget\n\n";
  rows.clear();
  const NoiseModel& noise = m.noise_budget;
  for (const analysis::NoiseBudgetGroup& g : noise.groups)
    rows.push_back({cell(g.group), cell(g.rows), cell(g.ratio.median), cell(g.ratio.min) + " – " + cell(g.ratio.max),
                    cell(g.ratio_vmin.median), cell(g.rounding_relative.median), cell(g.escape_steps_rounding.median),
                    cell(g.escape_steps_sampling.median), cell(g.verdict)});
  if (rows.empty()) return s + "Not measured (the noise probe).\n";
  s += "Rounding is negligible where rounding / sampling noise stays below " + cell(noise.negligible_ratio) + ".\n\n";
  s += table({"config", "probe steps", "rounding / sampling (median)", "range", "along v_min (median)",
              "rounding ‖δg‖/‖g‖ (median)",
              "escape steps from rounding", "from sampling", "rounding is"},
             rows);
  for (const analysis::NoiseBudgetGroup& g : noise.groups) s += cell(g.group) + ": " + cell(g.evidence) + "\n\n";
  return s + figures(m, "noise");
}

}  // namespace saddlescope::reports
