// index.html: the report model as one self-contained page — CSS inline, each figure's SVG inline (its
// ids prefixed, so that several figures' markers do not collide), no script and no external reference,
// so that it opens offline, prints, and can be mailed as one file.
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "model.h"

namespace saddlescope::reports {
namespace {

using nlohmann::json;

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}
std::string esc(const json& v) { return esc(show(v)); }
std::string esc(double v) { return esc(show(v)); }
std::string esc(int64_t v) { return esc(show(v)); }
template <class T>
std::string esc(const std::optional<T>& v) {  // "—" when empty
  return v ? esc(*v) : esc(json());
}
// A config value as the tables show it: a string as it is, anything else as JSON.
std::string esc_value(const json& v) { return esc(v.is_string() ? v.get<std::string>() : v.dump()); }

// Markdown's `code` spans of an escaped text as <code> elements.
std::string code_spans(const std::string& s) {
  std::string out;
  bool open = false;
  for (char c : s) {
    if (c != '`') out += c;
    else out += (open = !open) ? "<code>" : "</code>";
  }
  return open ? out + "</code>" : out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// gnuplot's SVG document as an element of the page: the XML declaration dropped, ids made unique.
std::string inline_svg(const std::string& svg, const std::string& name) {
  const size_t at = svg.find("<svg");
  std::string s = at == std::string::npos ? svg : svg.substr(at);
  const std::string p = "fig-" + name + "-";
  for (const char* q : {"'", "\""}) {
    s = replace_all(s, std::string(" id=") + q, std::string(" id=") + q + p);
    s = replace_all(s, std::string("href=") + q + "#", std::string("href=") + q + "#" + p);
  }
  s = replace_all(s, "url(#", "url(#" + p);
  // gnuplot gives a plot's key entry and its curve the same group id (gnuplot_plot_N): number repeats.
  std::map<std::string, int> seen;
  for (size_t at = s.find(" id="); at != std::string::npos; at = s.find(" id=", at + 1)) {
    const size_t open = at + 4, close = s.find(s[open], open + 1);
    if (close == std::string::npos) break;
    const int n = seen[s.substr(open + 1, close - open - 1)]++;
    if (n > 0) s.insert(close, "-" + std::to_string(n + 1));
  }
  s = replace_all(s, "<svg ", "<svg role=\"img\" ");
  return s;
}

const char* kCss = R"(
:root { --ink:#1a1a1a; --muted:#5b5b5b; --rule:#d0d0d0; --bad:#fbe3d6; --warn:#fff4d1; --good:#e4f2ea; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--ink);
       max-width: 1040px; margin: 0 auto; padding: 1.5rem 1.25rem 4rem; }
h1 { font-size: 1.7rem; margin: 0 0 .25rem; } h2 { font-size: 1.3rem; margin-top: 2.5rem; border-bottom: 2px solid var(--ink); }
h3 { font-size: 1.05rem; margin-top: 1.5rem; }
.meta, figcaption, .note { color: var(--muted); font-size: .9rem; }
nav { margin: .75rem 0 1rem; font-size: .92rem; } nav a { margin-right: .9rem; }
a { color: #0b5394; }
.headline { font-size: 1.1rem; font-weight: 600; padding: .75rem 1rem; border-left: 5px solid var(--ink); background: #f3f3f3; }
.warnings { background: var(--warn); padding: .5rem 1rem; border-left: 5px solid #c79100; }
.warnings li, .callouts li { margin: .2rem 0; }
.callouts { background: var(--bad); padding: .5rem 1rem; border-left: 5px solid #b0440f; }
table { border-collapse: collapse; margin: .75rem 0; font-size: .86rem; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--rule); padding: .25rem .55rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; white-space: nowrap; }
tr.beyond td { background: var(--bad); } tr.failed td { background: var(--warn); }
.differs { font-weight: 700; } .code { color: #b0440f; font-weight: 700; }
figure { margin: 1.25rem 0; page-break-inside: avoid; break-inside: avoid; }
figure svg { width: 100%; max-width: 860px; height: auto; display: block; border: 1px solid var(--rule); }
details summary { cursor: pointer; color: var(--muted); }
.wide { overflow-x: auto; }
@media print { body { max-width: none; font-size: 11pt; } nav { display: none; } h2 { page-break-before: auto; }
  a { color: inherit; text-decoration: none; } details > *:not(summary) { display: block; } }
)";

struct Page {
  const ReportModel& m;
  const std::map<std::string, std::string>& svgs;
  std::string out;

  void add(const std::string& s) { out += s; }
  void p(const std::string& s, const char* cls = nullptr) {
    add(cls ? fmt::format("<p class=\"{}\">{}</p>\n", cls, s) : "<p>" + s + "</p>\n");
  }

  // A table: `head` cells, then rows of already-escaped cells; numeric columns right-aligned.
  void table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
             const std::vector<std::string>& row_classes = {}) {
    add("<div class=\"wide\"><table>\n<thead><tr>");
    for (const auto& h : head) add("<th>" + h + "</th>");
    add("</tr></thead>\n<tbody>\n");
    for (size_t r = 0; r < rows.size(); ++r) {
      const std::string cls = r < row_classes.size() && !row_classes[r].empty() ? " class=\"" + row_classes[r] + "\"" : "";
      add("<tr" + cls + ">");
      for (const auto& c : rows[r]) {
        const bool numeric = !c.empty() && (std::isdigit(static_cast<unsigned char>(c[0])) || c[0] == '-' || c == "—" ||
                                            c.rfind("&lt; ", 0) == 0);
        add(numeric ? "<td class=\"num\">" + c + "</td>" : "<td>" + c + "</td>");
      }
      add("</tr>\n");
    }
    add("</tbody></table></div>\n");
  }

  void figures(const std::string& section) {
    for (const FigureEntry& f : m.figures) {
      if (f.section != section) continue;
      const std::string& name = f.name;
      auto it = svgs.find(name);
      add(fmt::format("<figure id=\"fig-{}\">\n", name));
      if (it != svgs.end()) add(inline_svg(it->second, name));
      add(
          fmt::format("<figcaption><strong>Figure {}. {}.</strong> {} Files: <a href=\"figures/{}.svg\">SVG</a>, "
                      "<a href=\"figures/{}.png\">PNG</a>, <a href=\"figures/{}.gp\">gnuplot script</a>",
                      show(f.number), esc(f.title), esc(f.caption), name, name, name));
      for (size_t k = 3; k < f.files.size(); ++k)
        add(fmt::format(", <a href=\"figures/{}\">data ({})</a>", esc(f.files[k]), esc(f.files[k])));
      add(".</figcaption>\n</figure>\n");
    }
  }

  bool has_figure(const std::string& section) const {
    for (const FigureEntry& f : m.figures)
      if (f.section == section) return true;
    return false;
  }

  void verdict() {
    const VerdictModel& v = m.verdict;
    add("<section id=\"verdict\">\n<h2>1. Verdict</h2>\n");
    p(esc(v.headline), "headline");
    if (!m.warnings.empty()) {
      add("<div class=\"warnings\"><strong>This study is partial or has changed since its analysis:</strong><ul>\n");
      for (const auto& w : m.warnings) add("<li>" + esc(w) + "</li>\n");
      add("</ul></div>\n");
    }
    add("<ul>\n");
    for (const auto& s : v.sentences) add("<li>" + esc(s) + "</li>\n");
    add("</ul>\n");
    if (v.comparisons.empty()) return add("</section>\n");
    std::vector<std::vector<std::string>> rows;
    for (const ComparisonModel& c : v.comparisons) {
      const analysis::SampleTest& fl = c.final_loss;
      const TestPower& pw = c.power.final_loss;
      const auto& at = c.attribution;
      std::string cause = esc(c.findings.cause);
      if (at && at->op) cause += " at " + esc(*at->op) + " " + esc(at->phase.value_or("—")) + (at->config ? " (" + esc(*at->config) + ")" : "");
      if (c.findings.cause == "code") cause = "<span class=\"code\">" + cause + "</span>";
      auto word = [&](const std::string& w) { return w == "differs" ? "<span class=\"differs\">differs</span>" : esc(w); };
      const Difference& d = c.difference;
      rows.push_back({esc(c.a) + " vs " + esc(c.b), word(c.findings.final_loss),
                      esc(d.estimate) + " <span class=\"note\">(" + esc(d.kind) + ")</span>",
                      "[" + esc(d.low) + ", " + esc(d.high) + "]",
                      esc(fl.cliffs_delta) + " " + esc(fl.magnitude.value_or("—")),
                      esc(show_p(fl.p_holm)),
                      std::isfinite(pw.detectable_shift_sd) ? esc(pw.detectable_shift_sd) + " SD"
                                                            : "none <span class=\"note\">(min p " + esc(show_p(pw.min_p)) + ")</span>",
                      word(c.findings.escape), esc(show_p(c.logrank.p_holm)),
                      word(c.findings.time_in_saddle), esc(show_p(c.time_in_saddle.p_holm)),
                      cause + (at ? " <span class=\"note\">(" + esc(at->evidence) + ")</span>" : "")});
    }
    table({"a vs b", "final loss", "a − b", "95% CI", "Cliff's δ", "Holm p", "detectable shift", "escape",
           "log-rank Holm p", "time in saddle", "Holm p", "cause (evidence)"},
          rows);
    p(fmt::format("Final loss: Mann–Whitney U; CI: percentile bootstrap of the difference in medians at level {}; Holm "
                  "p: Holm–Bonferroni over every test of the study. <em>Detectable |δ|</em>: the smallest Cliff's δ "
                  "the final-loss test would find with power 0.8 at α = {} with these numbers of runs (Noether's "
                  "approximation; — when no outcome could reach α). Escape: log-rank test of the escape-time survival "
                  "curves. Cause: the attribution of the first difference between paired runs (section 6).",
                  esc(m.setup.definitions.level), esc(m.alpha)),
      "note");
    add("</section>\n");
  }

  void setup() {
    const SetupModel& s = m.setup;
    add("<section id=\"setup\">\n<h2>2. Setup</h2>\n<h3>Study matrix</h3>\n");
    std::vector<std::string> head = {"config (group)"};
    for (const auto& k : s.axes) head.push_back(esc(k));
    std::vector<std::vector<std::string>> rows;
    for (const SetupGroup& g : s.groups) {
      std::vector<std::string> r = {esc(g.name)};
      for (const auto& k : s.axes) {
        auto it = g.config.find(k);
        r.push_back(esc_value(it == g.config.end() ? json() : it->second));
      }
      rows.push_back(r);
    }
    table(head, rows);
    rows.clear();
    std::vector<std::string> classes;
    for (const SetupRun& r : s.runs) {
      rows.push_back({esc(r.group), esc(r.seed), esc(r.run_id), esc(r.status), r.analysed ? "yes" : "no",
                      esc(r.steps_completed), esc(r.note)});
      classes.push_back(r.analysed && r.note.empty() ? "" : "failed");
    }
    for (const NotRun& r : s.not_run) {
      rows.push_back({esc(r.group), esc(r.seed), esc(r.run_id), esc(r.state), "no", "—", esc(r.note)});
      classes.push_back("failed");
    }
    add("<h3>Runs</h3>\n");
    table({"config", "seed", "run", "status", "analysed", "steps", "note"}, rows, classes);
    if (!s.common.empty()) {
      add("<details><summary>Settings common to every config</summary>\n");
      rows.clear();
      for (const auto& [k, v] : s.common) rows.push_back({esc(k), esc_value(v)});
      table({"key", "value"}, rows);
      add("</details>\n");
    }
    add("<h3>Machines</h3>\n");
    if (s.machines.empty()) p("No run directory could be read: no fingerprint.", "note");
    int n = 0;
    for (const Machine& mc : s.machines) {
      std::string groups;
      for (const auto& g : mc.groups) groups += (groups.empty() ? "" : ", ") + esc(g);
      p(fmt::format("<strong>Machine {}</strong>: {} — {} runs ({})", ++n, esc(mc.summary), show(mc.runs), groups));
      rows.clear();
      for (const auto& [k, v] : mc.flat) rows.push_back({esc(k), esc(v)});
      add("<details><summary>Environment fingerprint</summary>\n");
      table({"key", "value"}, rows);
      add("</details>\n");
    }
    add("<details><summary>Definitions and options of the analysis</summary>\n");
    rows.clear();
    const json definitions = store::encode(s.definitions);
    for (const auto& [k, v] : definitions.items()) rows.push_back({esc(k), esc_value(v)});
    table({"definition", "value"}, rows);
    add("</details>\n</section>\n");
  }

  void loss() {
    const LossModel& l = m.loss;
    add("<section id=\"loss\">\n<h2>3. Loss</h2>\n");
    std::vector<std::vector<std::string>> rows;
    for (const LossGroup& g : l.groups) {
      const analysis::Summary& f = g.final_loss;
      rows.push_back({esc(g.name), esc(f.n), esc(f.median), esc(f.q1), esc(f.q3), esc(f.min), esc(f.max)});
    }
    table({"config", "runs", "median final loss", "q1", "q3", "min", "max"}, rows);
    if (!l.not_learning.empty()) {
      add("<div class=\"callouts\"><strong>Runs that do not learn</strong> (evaluation error not below the trivial "
          "baseline's; they are in the statistics, and flagged here):<ul>\n");
      for (const NotLearning& r : l.not_learning)
        add(fmt::format("<li>{} seed {} ({}): evaluation MSE {} against the baseline's {}</li>\n", esc(r.group),
                        esc(r.seed), esc(r.run_id), esc(r.eval_mse), esc(r.baseline_mse)));
      add("</ul></div>\n");
    }
    figures("loss");
    add("</section>\n");
  }

  void saddles() {
    const SaddlesModel& s = m.saddles;
    add("<section id=\"saddles\">\n<h2>4. Saddle episodes</h2>\n");
    std::vector<std::vector<std::string>> rows;
    for (const analysis::GroupResult& g : s.groups)
      rows.push_back({esc(g.name), esc(g.n_runs), esc(g.n_with_curvature), esc(g.n_with_episode), esc(g.n_escaped),
                      esc(g.n_censored), esc(g.median_escape_steps),
                      "[" + esc(g.median_escape_lower) + ", " + esc(g.median_escape_upper) + "]",
                      esc(g.time_in_saddle.median)});
    table({"config", "runs", "with curvature", "with an episode", "escaped", "censored", "median escape (steps)", "CI",
           "median time in saddle"},
          rows);
    if (s.n_episodes == 0)
      p("No saddle episode was found in any run at the curvature probe's cadence (see the definitions in section 2): "
        "there is no escape time to compare, and the escape tests are not testable.", "note");
    figures("saddles");
    const analysis::Theory& th = s.theory;
    p(!std::isnan(th.slope)
          ? fmt::format("Theory fit ({}): observed = {} + {} × predicted, slope standard error {}, R² {}, n = {}.",
                        esc(th.scope), esc(th.intercept), esc(th.slope), esc(th.slope_std_error), esc(th.r2), esc(th.n))
          : "Theory fit: " + esc(th.note.value_or("none")) + ".",
      "note");
    rows.clear();
    for (const SaddleRun& r : s.runs)
      if (r.episodes)
        for (const analysis::EpisodeResult& e : *r.episodes)
          rows.push_back({esc(r.group), esc(r.seed), esc(e.entry_step), esc(e.exit_step),
                          e.censored ? "censored" : esc(e.exit_rule), esc(e.escape_steps), esc(e.lambda_min_entry),
                          esc(e.lambda_max_entry), esc(e.grad_norm_entry), esc(e.theory.predicted_escape_steps)});
    if (!rows.empty()) {
      add("<details><summary>Every episode</summary>\n");
      table({"config", "seed", "entry", "exit", "exit rule", "escape steps", "λmin at entry", "λmax at entry", "‖g‖ at entry",
             "predicted escape"},
            rows);
      add("</details>\n");
    }
    add("</section>\n");
  }

  void rounding() {
    const RoundingModel& r = m.rounding;
    add("<section id=\"rounding\">\n<h2>5. Rounding</h2>\n");
    if (r.groups.empty()) {
      p("No run of this study recorded op taps (the ops probe): there are no per-op rounding errors to show.", "note");
      return add("</section>\n");
    }
    if (!r.zero_term_callouts.empty()) {
      add("<div class=\"callouts\"><strong>Nonzero results from all-zero terms:</strong><ul>\n");
      for (const auto& c : r.zero_term_callouts) add("<li>" + esc(c) + "</li>\n");
      add("</ul></div>\n");
    }
    for (const RoundingGroup& g : r.groups) {
      add(fmt::format("<h3>{} <span class=\"note\">({} runs with op taps)</span></h3>\n", esc(g.name),
                      show(g.runs_with_taps)));
      std::vector<std::vector<std::string>> rows;
      std::vector<std::string> classes;
      for (const analysis::OpSummary& o : g.ops) {
        rows.push_back({esc(o.op), esc(o.phase), esc(o.kernel), esc(o.dtype), esc(o.samples), esc(o.median_abs_ulp),
                        esc(o.max_abs_ulp), esc(o.beyond), esc(o.fraction_beyond), esc(o.max_bound_ratio),
                        esc(o.zero_terms), esc(o.nonfinite)});
        classes.push_back(o.beyond > 0 ? "beyond" : "");
      }
      table({"op", "phase", "kernel", "dtype", "samples", "median |ULP|", "max |ULP|", "beyond bound", "fraction beyond",
             "max error/bound", "all-zero terms", "non-finite"},
            rows, classes);
    }
    p("Highlighted rows have sampled elements beyond the a-priori rounding bound γ_n·Σ|terms|: rounding alone cannot "
      "explain them (another algorithm such as TF32 or a transform convolution, or another operand).", "note");
    figures("rounding");
    add("</section>\n");
  }

  void divergence() {
    const DivergenceModel& d = m.divergence;
    add("<section id=\"divergence\">\n<h2>6. Divergence and attribution</h2>\n");
    std::vector<std::vector<std::string>> rows;
    for (const analysis::DivergenceResult& pr : d.pairs)
      rows.push_back({esc(pr.a) + " vs " + esc(pr.b), esc(pr.seed), esc(pr.first_loss_step), esc(pr.first_param_step),
                      esc(pr.final_rel_l2), pr.growth ? esc(pr.growth->rate_per_step) : esc(json()), esc(pr.error)});
    if (rows.empty()) p("No two configs share a seed: no paired runs to compare.", "note");
    else table({"pair", "seed", "first differing loss step", "first differing parameter step", "final ‖θa − θb‖/‖θa‖",
                "growth rate per step", "error"},
               rows);
    figures("divergence");
    add("<h3>Attribution: rounding or code?</h3>\n");
    rows.clear();
    std::vector<std::string> classes;
    for (const analysis::AttributionResult& a : d.attribution) {
      rows.push_back({esc(a.a) + " vs " + esc(a.b), esc(a.seed), esc(a.verdict), esc(a.step), esc(a.op), esc(a.phase),
                      esc(a.config), esc(a.evidence), esc(a.reason)});
      classes.push_back(a.verdict == "code" ? "beyond" : "");
    }
    if (rows.empty()) p("No attribution: the analysis compared no pair of configs.", "note");
    else table({"pair", "seed", "verdict", "step", "op", "phase", "beyond in", "evidence", "reason"}, rows, classes);
    for (const analysis::AttributionResult& a : d.attribution) {
      if (!a.ops || a.ops->empty()) continue;
      add(fmt::format("<details><summary>Per-op evidence: {} vs {}, seed {}</summary>\n", esc(a.a), esc(a.b),
                      esc(a.seed)));
      rows.clear();
      classes.clear();
      for (const analysis::OpEvidence& o : *a.ops) {
        rows.push_back({esc(o.op), esc(o.phase), esc(o.verdict), esc(o.compared), esc(o.differing), esc(o.beyond_a),
                        esc(o.beyond_b), esc(o.max_ratio_a), esc(o.max_ratio_b), esc(o.max_abs_ulp_a),
                        esc(o.max_abs_ulp_b)});
        classes.push_back(o.verdict == "code" ? "beyond" : "");
      }
      table({"op", "phase", "verdict", "compared", "differing", "beyond (a)", "beyond (b)", "max error/bound (a)",
             "max error/bound (b)", "max |ULP| (a)", "max |ULP| (b)"},
            rows, classes);
      add("</details>\n");
    }
    add("</section>\n");
  }

  void symmetry() {
    const SymmetryModel& s = m.symmetry;
    add("<section id=\"symmetry\">\n<h2>7. Symmetry</h2>\n");
    if (s.runs.empty()) {
      p("No run of this study probed symmetry (the symmetry probe).", "note");
      return add("</section>\n");
    }
    std::vector<std::vector<std::string>> rows;
    for (const SymmetryRun& r : s.runs)
      for (const SymmetryLayer& l : r.layers)
        rows.push_back({esc(r.group), esc(r.seed), esc(l.layer), esc(l.units), esc(l.identical_pairs_start),
                        esc(l.identical_pairs_end), l.broke_at_step ? esc(*l.broke_at_step) : "never",
                        esc(l.min_relative_distance_end)});
    table({"config", "seed", "layer", "units", "identical pairs at start", "at end", "symmetry broke at step",
           "closest pair's distance at end"},
          rows);
    figures("symmetry");
    add("</section>\n");
  }

  void invariance() {
    const json& rows_in = m.invariance.at("rows");
    add("<section id=\"invariance\">\n<h2>8. Batch invariance</h2>\n");
    if (rows_in.empty()) {
      p("Not measured: <code>saddlescope invariance ... --json STUDY/invariance/MODEL-DEVICE-CONFIG.json</code> puts "
        "a model's result here (docs/batch-invariance.md).", "note");
      return add("</section>\n");
    }
    p("Each example predicted alone and inside batches of other examples: whether every example kept its bits in "
      "every case (batch size × position), the largest differences, the first op whose output differed and whether "
      "it stayed within its float32 rounding bound, and the time of one evaluation at the largest batch.");
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : rows_in)
      rows.push_back({esc(r.at("model")), esc(r.at("device")), esc(r.at("config")), r.at("invariant") ? "yes" : "no",
                      esc(r.at("cases_equal")) + "/" + esc(r.at("cases")), esc(r.at("max_ulp")), esc(r.at("max_relative")),
                      esc(r.at("input_grad_max_relative")),
                      r.at("first_ops").get<std::string>().empty() ? "—" : code_spans(esc(r.at("first_ops").get<std::string>())),
                      esc(r.at("batch")) + ": " + esc(r.at("ms").at("median")), esc(r.at("time_ratio"))});
    table({"model", "device", "config", "batch-invariant", "cases equal", "max ULP", "max relative",
           "input gradient max relative", "first op that differs (cases)", "ms per evaluation at batch",
           "time vs first config"},
          rows);
    add("</section>\n");
  }

  void noise_budget() {
    const NoiseModel& n = m.noise_budget;
    add("<section id=\"noise\">\n<h2>9. Noise budget</h2>\n");
    if (n.groups.empty()) {
      p("Not measured: the noise probe (<code>--probe noise</code>) measures, at its steps, the rounding of the "
        "gradient against SGD's own sampling noise (docs/analysis.md).", "note");
      return add("</section>\n");
    }
    p("At each noise probe step: the run's gradient against the float64 gradient from the same parameters (the "
      "rounding), against the spread SGD's mini-batches give the gradient at the run's batch size (the sampling "
      "noise). Rounding is negligible where their ratio stays below " + show(n.negligible_ratio) +
      ". Escape steps: how long one step's kick along v_min, from each source, takes to grow into an escape.");
    std::vector<std::vector<std::string>> rows;
    for (const analysis::NoiseBudgetGroup& g : n.groups)
      rows.push_back({esc(g.group), esc(g.runs), esc(g.rows), esc(g.ratio.median),
                      esc(g.ratio.min) + " – " + esc(g.ratio.max), esc(g.ratio_vmin.median),
                      esc(g.rounding_relative.median), esc(g.sampling_norm.median), esc(g.escape_steps_rounding.median),
                      esc(g.escape_steps_sampling.median), "<strong>" + esc(g.verdict) + "</strong>"});
    table({"config", "runs", "probe steps", "rounding / sampling (median)", "range", "along v_min (median)",
           "rounding ‖δg‖/‖g‖ (median)",
           "sampling noise ‖·‖ (median)", "escape steps from rounding (median)", "from sampling (median)", "rounding is"},
          rows);
    for (const analysis::NoiseBudgetGroup& g : n.groups) p(esc(g.group) + ": " + esc(g.evidence));
    figures("noise");
    add("</section>\n");
  }
};

}  // namespace

std::string render_html(const ReportModel& m, const std::map<std::string, std::string>& svgs) {
  Page page{m, svgs, {}};
  const std::string name = esc(m.study);
  page.add(fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
                       "content=\"width=device-width, initial-scale=1\">\n<title>Saddle-point report: {}</title>\n"
                       "<style>{}</style>\n</head>\n<body>\n<header>\n<h1>Saddle-point report: {}</h1>\n",
                       name, kCss, name));
  page.p(fmt::format("{} runs ({} not in the statistics) · generated {} by saddlescope report from "
                     "<code>{}/analysis/analysis.json</code> · α = {} · also as <a href=\"report.md\">Markdown</a> "
                     "and <a href=\"report.json\">JSON</a>, every figure in <a href=\"figures/\">figures/</a>",
                     show(m.n_runs), show(m.n_skipped), esc(m.generated), esc(m.study_dir), show(m.alpha)),
         "meta");
  page.add("<nav><a href=\"#verdict\">1 Verdict</a><a href=\"#setup\">2 Setup</a><a href=\"#loss\">3 Loss</a>"
           "<a href=\"#saddles\">4 Saddles</a><a href=\"#rounding\">5 Rounding</a><a href=\"#divergence\">6 Divergence</a>"
           "<a href=\"#symmetry\">7 Symmetry</a><a href=\"#invariance\">8 Invariance</a><a href=\"#noise\">9 Noise</a></nav>\n</header>\n<main>\n");
  page.verdict();
  page.setup();
  page.loss();
  page.saddles();
  page.rounding();
  page.divergence();
  page.symmetry();
  page.invariance();
  page.noise_budget();
  page.add("</main>\n</body>\n</html>\n");
  return page.out;
}

}  // namespace saddlescope::reports
