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
                    fl.cliffs_delta ? cell(*fl.cliffs_delta) : cell(json()), cell(show_p(fl.p_holm)),
                    std::isfinite(pw.detectable_shift_sd) ? cell(pw.detectable_shift_sd) + " SD"
                                                          : "none (min p " + cell(show_p(pw.min_p)) + ")",
                    cell(c.findings.escape), cell(show_p(c.logrank.p_holm)), cell(c.findings.cause)});
  }
  if (!rows.empty())
    s += table({"a vs b", "final loss", "a − b", "95% CI", "Cliff's δ", "Holm p", "detectable shift", "escape",
                "log-rank Holm p", "cause"},
               rows);

  const json& st = m.setup;
  s += "## 2. Setup\n\n";
  rows.clear();
  for (const auto& r : st.at("runs"))
    rows.push_back({cell(r.at("group")), cell(r.at("seed")), cell(r.at("status")),
                    r.at("analysed").get<bool>() ? "yes" : "no", cell(r.at("note").get<std::string>())});
  for (const auto& r : st.at("not_run"))
    rows.push_back(
        {cell(r.at("group")), cell(r.at("seed")), cell(r.at("state")), "no", cell(r.at("note").get<std::string>())});
  s += table({"config", "seed", "status", "analysed", "note"}, rows);
  int n = 0;
  for (const auto& mc : st.at("machines"))
    s += fmt::format("Machine {} ({} runs): {}.\n\n", ++n, show(mc.at("runs")), mc.at("summary").get<std::string>());

  s += "## 3. Loss\n\n";
  rows.clear();
  for (const auto& g : m.loss.at("groups")) {
    const json& f = g.at("final_loss");
    rows.push_back({cell(g.at("name")), cell(f.value("n", json())), cell(f.value("median", json())),
                    cell(f.value("q1", json())), cell(f.value("q3", json()))});
  }
  s += table({"config", "runs", "median final loss", "q1", "q3"}, rows);
  for (const auto& r : m.loss.at("not_learning"))
    s += fmt::format("- **does not learn:** {} seed {}: evaluation MSE {} against the baseline's {}\n",
                     show(r.at("group")), show(r.at("seed")), show(r.at("eval_mse")), show(r.at("baseline_mse")));
  s += figures(m, "loss");

  s += "## 4. Saddle episodes\n\n";
  rows.clear();
  for (const auto& g : m.saddles.at("groups"))
    rows.push_back({cell(g.at("name")), cell(g.at("n_runs")), cell(g.at("n_with_episode")), cell(g.at("n_escaped")),
                    cell(g.at("n_censored")), cell(g.at("median_escape_steps")),
                    "[" + cell(g.at("median_escape_lower")) + ", " + cell(g.at("median_escape_upper")) + "]"});
  s += table({"config", "runs", "with an episode", "escaped", "censored", "median escape (steps)", "CI"}, rows);
  s += figures(m, "saddles");

  s += "## 5. Rounding\n\n";
  for (const auto& c : m.rounding.at("zero_term_callouts")) s += "- **" + c.get<std::string>() + "**\n";
  for (const auto& g : m.rounding.at("groups")) {
    rows.clear();
    for (const auto& o : g.at("ops")) {
      const bool beyond = o.at("beyond").get<int64_t>() > 0;
      rows.push_back({(beyond ? "**" : "") + cell(o.at("op")) + (beyond ? "**" : ""), cell(o.at("phase")),
                      cell(o.at("samples")), cell(o.at("median_abs_ulp")), cell(o.at("max_abs_ulp")),
                      cell(o.at("beyond")), cell(o.at("max_bound_ratio"))});
    }
    s += "### " + g.at("name").get<std::string>() + "\n\n" +
         table({"op", "phase", "samples", "median \\|ULP\\|", "max \\|ULP\\|", "beyond bound", "max error/bound"}, rows);
  }
  if (m.rounding.at("groups").empty()) s += "No op taps recorded.\n\n";
  s += figures(m, "rounding");

  s += "## 6. Divergence and attribution\n\n";
  rows.clear();
  for (const auto& a : m.divergence.at("attribution"))
    rows.push_back({cell(a.at("a")) + " vs " + cell(a.at("b")), cell(a.at("seed")), cell(a.at("verdict")),
                    cell(a.at("step")), cell(a.at("op")), cell(a.at("phase")), cell(a.at("config")),
                    cell(a.at("evidence"))});
  if (!rows.empty()) s += table({"pair", "seed", "verdict", "step", "op", "phase", "beyond in", "evidence"}, rows);
  s += figures(m, "divergence");

  s += "## 7. Symmetry\n\n";
  rows.clear();
  for (const auto& r : m.symmetry.at("runs"))
    for (const auto& l : r.at("layers"))
      rows.push_back({cell(r.at("group")), cell(r.at("seed")), cell(l.at("layer")), cell(l.at("identical_pairs_start")),
                      cell(l.at("identical_pairs_end")),
                      l.at("broke_at_step").is_null() ? "never" : cell(l.at("broke_at_step"))});
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
  const json& noise = m.noise_budget;
  for (const auto& g : noise.at("groups"))
    rows.push_back({cell(g.at("group")), cell(g.at("rows")), cell(g.at("ratio").at("median")),
                    cell(g.at("ratio").at("min")) + " – " + cell(g.at("ratio").at("max")),
                    cell(g.at("ratio_vmin").at("median")), cell(g.at("rounding_relative").at("median")), cell(g.at("escape_steps_rounding").at("median")),
                    cell(g.at("escape_steps_sampling").at("median")), cell(g.at("verdict"))});
  if (rows.empty()) return s + "Not measured (the noise probe).\n";
  s += "Rounding is negligible where rounding / sampling noise stays below " + cell(noise.at("negligible_ratio")) +
       ".\n\n";
  s += table({"config", "probe steps", "rounding / sampling (median)", "range", "along v_min (median)",
              "rounding ‖δg‖/‖g‖ (median)",
              "escape steps from rounding", "from sampling", "rounding is"},
             rows);
  for (const auto& g : noise.at("groups")) s += cell(g.at("group")) + ": " + cell(g.at("evidence")) + "\n\n";
  return s + figures(m, "noise");
}

}  // namespace saddlescope::reports
