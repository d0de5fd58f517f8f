// report.md: the report model for terminals and code review — the verdict, the tables that carry the
// numbers, and the figures linked as PNG (GitHub and most viewers show them inline).
#include <fmt/format.h>

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

std::string figures(const json& m, const std::string& section) {
  std::string s;
  for (const auto& f : m["figures"])
    if (f["section"] == section)
      s += fmt::format("![Figure {}. {}](figures/{}.png)\n\n*Figure {}. {}.* {} ([SVG](figures/{}.svg), "
                       "[data](figures/{}))\n\n",
                       show(f["number"]), f["title"].get<std::string>(), f["name"].get<std::string>(), show(f["number"]),
                       f["title"].get<std::string>(), f["caption"].get<std::string>(), f["name"].get<std::string>(),
                       f["files"][3].get<std::string>());
  return s;
}

}  // namespace

std::string render_markdown(const json& m) {
  std::string s = fmt::format("# Saddle-point report: {}\n\n{} runs ({} not in the statistics), generated {} from "
                              "`{}/analysis/analysis.json`; α = {}. The full report: `index.html`; every number: "
                              "`report.json`.\n\n",
                              m["study"].get<std::string>(), show(m["n_runs"]), show(m["n_skipped"]),
                              m["generated"].get<std::string>(), m["study_dir"].get<std::string>(), show(m["alpha"]));
  const json& v = m["verdict"];
  s += "## 1. Verdict\n\n**" + v["headline"].get<std::string>() + "**\n\n";
  if (!m["warnings"].empty()) {
    s += "Partial or changed since the analysis:\n\n";
    for (const auto& w : m["warnings"]) s += "- " + w.get<std::string>() + "\n";
    s += "\n";
  }
  for (const auto& t : v["sentences"]) s += "- " + t.get<std::string>() + "\n";
  s += "\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : v["comparisons"]) {
    const json& fl = c["final_loss"];
    rows.push_back({cell(c["a"]) + " vs " + cell(c["b"]), cell(c["findings"]["final_loss"]), cell(fl["median_difference"]),
                    "[" + cell(fl["ci_low"]) + ", " + cell(fl["ci_high"]) + "]", cell(fl["cliffs_delta"]),
                    cell(show_p(fl["p_holm"])), cell(c["power"]["final_loss"]["detectable_cliffs_delta"]),
                    cell(c["findings"]["escape"]), cell(show_p(c["logrank"]["p_holm"])), cell(c["findings"]["cause"])});
  }
  if (!rows.empty())
    s += table({"a vs b", "final loss", "median a − b", "CI", "Cliff's δ", "Holm p", "detectable \\|δ\\|", "escape",
                "log-rank Holm p", "cause"},
               rows);

  const json& st = m["setup"];
  s += "## 2. Setup\n\n";
  rows.clear();
  for (const auto& r : st["runs"])
    rows.push_back({cell(r["group"]), cell(r["seed"]), cell(r["status"]), r["analysed"].get<bool>() ? "yes" : "no",
                    cell(r["note"].get<std::string>())});
  for (const auto& r : st["not_run"])
    rows.push_back({cell(r["group"]), cell(r["seed"]), cell(r["state"]), "no", cell(r["note"].get<std::string>())});
  s += table({"config", "seed", "status", "analysed", "note"}, rows);
  int n = 0;
  for (const auto& mc : st["machines"])
    s += fmt::format("Machine {} ({} runs): {}.\n\n", ++n, show(mc["runs"]), mc["summary"].get<std::string>());

  s += "## 3. Loss\n\n";
  rows.clear();
  for (const auto& g : m["loss"]["groups"]) {
    const json& f = g["final_loss"];
    rows.push_back({cell(g["name"]), cell(f.value("n", json())), cell(f.value("median", json())),
                    cell(f.value("q1", json())), cell(f.value("q3", json()))});
  }
  s += table({"config", "runs", "median final loss", "q1", "q3"}, rows);
  for (const auto& r : m["loss"]["not_learning"])
    s += fmt::format("- **does not learn:** {} seed {}: evaluation MSE {} against the baseline's {}\n", show(r["group"]),
                     show(r["seed"]), show(r["eval_mse"]), show(r["baseline_mse"]));
  s += figures(m, "loss");

  s += "## 4. Saddle episodes\n\n";
  rows.clear();
  for (const auto& g : m["saddles"]["groups"])
    rows.push_back({cell(g["name"]), cell(g["n_runs"]), cell(g["n_with_episode"]), cell(g["n_escaped"]),
                    cell(g["n_censored"]), cell(g["median_escape_steps"]),
                    "[" + cell(g["median_escape_lower"]) + ", " + cell(g["median_escape_upper"]) + "]"});
  s += table({"config", "runs", "with an episode", "escaped", "censored", "median escape (steps)", "CI"}, rows);
  s += figures(m, "saddles");

  s += "## 5. Rounding\n\n";
  for (const auto& c : m["rounding"]["zero_term_callouts"]) s += "- **" + c.get<std::string>() + "**\n";
  for (const auto& g : m["rounding"]["groups"]) {
    rows.clear();
    for (const auto& o : g["ops"]) {
      const bool beyond = o["beyond"].get<int64_t>() > 0;
      rows.push_back({(beyond ? "**" : "") + cell(o["op"]) + (beyond ? "**" : ""), cell(o["phase"]), cell(o["samples"]),
                      cell(o["median_abs_ulp"]), cell(o["max_abs_ulp"]), cell(o["beyond"]), cell(o["max_bound_ratio"])});
    }
    s += "### " + g["name"].get<std::string>() + "\n\n" +
         table({"op", "phase", "samples", "median \\|ULP\\|", "max \\|ULP\\|", "beyond bound", "max error/bound"}, rows);
  }
  if (m["rounding"]["groups"].empty()) s += "No op taps recorded.\n\n";
  s += figures(m, "rounding");

  s += "## 6. Divergence and attribution\n\n";
  rows.clear();
  for (const auto& a : m["divergence"]["attribution"])
    rows.push_back({cell(a["a"]) + " vs " + cell(a["b"]), cell(a["seed"]), cell(a["verdict"]), cell(a["step"]),
                    cell(a["op"]), cell(a["phase"]), cell(a["config"]), cell(a["evidence"])});
  if (!rows.empty()) s += table({"pair", "seed", "verdict", "step", "op", "phase", "beyond in", "evidence"}, rows);
  s += figures(m, "divergence");

  s += "## 7. Symmetry\n\n";
  rows.clear();
  for (const auto& r : m["symmetry"]["runs"])
    for (const auto& l : r["layers"])
      rows.push_back({cell(r["group"]), cell(r["seed"]), cell(l["layer"]), cell(l["identical_pairs_start"]),
                      cell(l["identical_pairs_end"]), l["broke_at_step"].is_null() ? "never" : cell(l["broke_at_step"])});
  s += rows.empty() ? "Not probed.\n\n"
                    : table({"config", "seed", "layer", "identical pairs at start", "at end", "broke at step"}, rows);
  s += figures(m, "symmetry");
  return s;
}

}  // namespace saddlescope::reports
