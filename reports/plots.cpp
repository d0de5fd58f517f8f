// The report's figures: for each, the CSV tables behind it (computed here from analysis.json and the
// run directories) and the gnuplot commands that draw them. Series i is the i-th group of the analysis
// in every figure, so a group keeps its colour, dash and marker throughout the report.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model.h"
#include "saddlescope/analysis/op_summary.h"
#include "saddlescope/analysis/stats.h"
#include "saddlescope/store/csv.h"

namespace saddlescope::reports {
namespace {

using nlohmann::json;

constexpr size_t kMaxCurvePoints = 300;  // per group: enough for a smooth curve in print

std::string num(double v) { return std::isfinite(v) ? store::format_double(v) : "NaN"; }
std::string num(const json& v) { return v.is_number() ? num(v.get<double>()) : "NaN"; }
json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
// A text field, last in its row: quoted, so that a comma in a group name stays in its field.
std::string text(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return out + "\"";
}

struct Csv {
  std::string body;
  explicit Csv(const std::vector<std::string>& columns) {
    for (size_t i = 0; i < columns.size(); ++i) body += (i ? "," : "") + columns[i];
    body += "\n";
  }
  void row(const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) body += (i ? "," : "") + fields[i];
    body += "\n";
  }
  void gap() { body += "\n"; }  // a blank line: gnuplot breaks the line there (one run ends)
};

// Lines drawn one per run (and layer), thinned to what a screen shows while the CSV keeps every point:
// a line whose drawn points repeat an earlier line of its series exactly is written with `drawn` 0 and not
// drawn again (64 runs whose copies never broke draw one line at 0, not 64), and past kMarkerLimit drawn
// points the lines lose their markers, which a screen can no longer tell apart (the symmetric-saddle
// reports were 6-8 MB of SVG markers). Columns: series, drawn, then the caller's.
class RunLines {
 public:
  static constexpr size_t kMarkerLimit = 1000;

  explicit RunLines(const std::vector<std::string>& columns) : csv_(with_drawn(columns)) {}

  // A point of the current line: (x, y) as the figure draws them, `rest` the row's other fields.
  void point(int series, const std::string& x, const std::string& y, const std::vector<std::string>& rest) {
    series_ = series;
    key_ += x + ":" + y + ";";
    line_.push_back(rest);
  }
  // Ends the current line (a gap in the CSV, where gnuplot breaks the line).
  void end_line() {
    if (line_.empty()) return;
    const bool drawn = seen_.insert(std::to_string(series_) + "|" + key_).second;
    if (drawn) drawn_points_ += line_.size();
    for (auto& fields : line_) {
      fields.insert(fields.begin(), {std::to_string(series_), drawn ? "1" : "0"});
      csv_.row(fields);
    }
    csv_.gap();
    line_.clear();
    key_.clear();
  }
  const std::string& body() const { return csv_.body; }
  std::string style() const { return drawn_points_ > kMarkerLimit ? "lines" : "linespoints ps 0.5"; }

 private:
  static std::vector<std::string> with_drawn(std::vector<std::string> columns) {
    columns.insert(columns.begin(), {"series", "drawn"});
    return columns;
  }
  Csv csv_;
  std::set<std::string> seen_;
  std::vector<std::vector<std::string>> line_;
  std::string key_;
  int series_ = 0;
  size_t drawn_points_ = 0;
};

// Whether positive values spanning more than `decades` decades call for a log axis.
bool spans_decades(const std::vector<double>& v, double decades = 1.7) {
  double lo = INFINITY, hi = 0;
  for (double x : v)
    if (std::isfinite(x)) {
      if (x <= 0) return false;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  return hi > 0 && std::log10(hi / lo) > decades;
}

// "plot for each group" clauses: `clause(i, title)` for series i = 1..n, joined with ", \\\n".
template <class F>
std::string per_group(const std::vector<std::string>& groups, F clause) {
  std::string s;
  for (size_t i = 0; i < groups.size(); ++i) {
    std::string c = clause(static_cast<int>(i + 1), gp_string(groups[i]));
    if (c.empty()) continue;
    s += (s.empty() ? "" : ", \\\n  ") + c;
  }
  return s;
}

// One curve per series present: column `y` against column `x` of ARG3, the rows of series i only (and,
// for RunLines' tables, only the rows it marks drawn).
std::string series_curves(const std::vector<std::string>& titles, const std::set<int>& present, const std::string& x,
                          const std::string& y, const std::string& style, bool drawn_only = false) {
  const std::string drawn = drawn_only ? " && column('drawn')==1" : "";
  return per_group(titles, [&](int i, const std::string& title) {
    return present.count(i) ? fmt::format("ARG3 using '{}':(column('series')=={}{} ? column('{}') : NaN) with {} lt {} "
                                          "title {}", x, i, drawn, y, style, i, title)
                            : std::string();
  });
}

// One shaded band per series present: between columns `low` and `high` of ARG3, the rows of series i.
std::string series_bands(const std::vector<std::string>& titles, const std::set<int>& present, const std::string& x,
                         const std::string& low, const std::string& high) {
  return per_group(titles, [&](int i, const std::string&) {
    return present.count(i) ? fmt::format("ARG3 using '{}':(column('series')=={} ? column('{}') : NaN):'{}' with "
                                          "filledcurves lt {} notitle", x, i, low, high, i)
                            : std::string();
  });
}

// The figure series of a group: its place in the analysis's groups, from 1 (0: none).
int series_of(const StudyData& s, const std::optional<std::string>& group) {
  if (!group) return 0;
  auto it = std::find(s.group_names.begin(), s.group_names.end(), *group);
  return it == s.group_names.end() ? 0 : static_cast<int>(it - s.group_names.begin()) + 1;
}

bool analysed(const RunData& r) { return !r.entry.skipped; }


// ---- Loss ------------------------------------------------------------------------------------------

std::optional<Figure> loss_figure(const StudyData& s, int64_t window) {
  Csv csv({"series", "step", "n", "median", "q1", "q3", "group"});
  std::vector<double> medians;
  std::set<int> present;
  for (size_t gi = 0; gi < s.group_names.size(); ++gi) {
    // Each run's trailing mean at every step it logged.
    std::vector<std::vector<std::pair<int64_t, double>>> curves;
    int64_t last = -1;
    for (const auto& r : s.runs) {
      if (!analysed(r) || series_of(s, r.entry.group) != static_cast<int>(gi + 1) || r.metrics.empty()) continue;
      std::vector<std::pair<int64_t, double>> c;
      double sum = 0;
      for (size_t k = 0; k < r.metrics.size(); ++k) {
        sum += r.metrics[k].loss;
        if (k >= static_cast<size_t>(window)) sum -= r.metrics[k - window].loss;
        const double n = static_cast<double>(std::min<size_t>(k + 1, window));
        c.emplace_back(r.metrics[k].step, sum / n);
      }
      last = std::max(last, c.back().first);
      curves.push_back(std::move(c));
    }
    if (curves.empty()) continue;
    present.insert(static_cast<int>(gi + 1));
    std::set<int64_t> grid;
    for (size_t k = 0; k < kMaxCurvePoints; ++k)
      grid.insert(static_cast<int64_t>(std::llround(static_cast<double>(last) * k / (kMaxCurvePoints - 1))));
    for (int64_t step : grid) {
      std::vector<double> v;
      for (const auto& c : curves) {
        auto it = std::lower_bound(c.begin(), c.end(), std::make_pair(step, -static_cast<double>(INFINITY)));
        if (it != c.end() && it->first == step && std::isfinite(it->second)) v.push_back(it->second);
      }
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      const double med = analysis::quantile_sorted(v, 0.5);
      medians.push_back(med);
      csv.row({std::to_string(gi + 1), std::to_string(step), std::to_string(v.size()), num(med),
               num(analysis::quantile_sorted(v, 0.25)), num(analysis::quantile_sorted(v, 0.75)), text(s.group_names[gi])});
    }
  }
  if (present.empty()) return std::nullopt;
  Figure f;
  f.name = "loss";
  f.section = "loss";
  f.title = "Training loss per execution config";
  f.caption = fmt::format(
      "Median over seeds (line) and inter-quartile band (shaded) of each run's training loss, as a trailing mean "
      "over {} steps (the analysis's loss window), at up to {} evenly spaced steps, over the runs in the statistics. "
      "Each run's loss is on its own "
      "mini-batches: the band is seed-to-seed spread, not measurement error.",
      window, kMaxCurvePoints);
  f.data = {{"", csv.body}};
  std::string cmds = "set xlabel 'optimiser step'\nset ylabel " +
                     gp_string(fmt::format("training loss, trailing mean over {} steps", window)) + "\n";
  if (spans_decades(medians)) cmds += "set logscale y\nset format y '%g'\n";
  cmds += "plot " + series_bands(s.group_names, present, "step", "q1", "q3");
  cmds += ", \\\n  " + series_curves(s.group_names, present, "step", "median", "lines");
  f.commands = cmds + "\n";
  return f;
}

std::optional<Figure> final_loss_figure(const StudyData& s) {
  Csv box({"series", "n", "min", "q1", "median", "q3", "max", "group"});
  Csv points({"series", "x", "seed", "final_loss", "run_id"});
  std::vector<double> all;
  std::string xtics;
  int count = 0;
  for (const auto& g : s.analysis.groups) {
    const int i = series_of(s, g.name);
    const analysis::Summary& fl = g.final_loss;
    xtics += fmt::format("{}{} {}", xtics.empty() ? "" : ", ", gp_string(g.name), i);
    if (fl.n == 0) continue;
    ++count;
    box.row({std::to_string(i), num(static_cast<double>(fl.n)), num(fl.min), num(fl.q1), num(fl.median), num(fl.q3),
             num(fl.max), text(g.name)});
  }
  if (count == 0) return std::nullopt;
  std::map<int, int> k;
  for (const auto& r : s.runs) {
    if (!analysed(r) || std::isnan(r.entry.final_loss)) continue;
    const int i = series_of(s, r.entry.group);
    const int j = k[i]++;
    // Spread the points of a group sideways so that equal losses stay visible.
    const double x = i - 0.25 + 0.5 * ((j * 0.618034) - std::floor(j * 0.618034));
    all.push_back(r.entry.final_loss);
    points.row({std::to_string(i), num(x), std::to_string(r.entry.seed), num(r.entry.final_loss), text(r.entry.run_id)});
  }
  Figure f;
  f.name = "final_loss";
  f.section = "loss";
  f.title = "Final loss per execution config";
  f.caption = "Each run's final loss (the mean training loss of its last log window; points), and per config the "
              "median (bar), inter-quartile box and range (whiskers) the analysis compared.";
  f.data = {{"", box.body}, {"_runs", points.body}};
  std::string cmds = fmt::format("set xrange [0.4:{}.6]\nset xtics ({}) rotate by -20\nset boxwidth 0.5\n"
                                 "set xlabel 'execution config'\nset ylabel 'final training loss'\nset key off\n",
                                 s.group_names.size(), xtics);
  if (spans_decades(all)) cmds += "set logscale y\nset format y '%g'\n";
  cmds += "plot ARG3 using 'series':'q1':'min':'max':'q3':(column('series')) with candlesticks whiskerbars 0.5 "
          "lc variable lw 1.5 notitle, \\\n  ARG3 using 'series':'median':'median':'median':'median':(column('series')) "
          "with candlesticks lc variable lw 3 notitle, \\\n  ARG4 using 'x':'final_loss':(column('series')) with "
          "points lc variable pt 7 ps 0.8 notitle\n";
  f.commands = cmds;
  return f;
}

// ---- Saddles ---------------------------------------------------------------------------------------

std::optional<Figure> episodes_figure(const StudyData& s) {
  Csv csv({"series", "y", "entry_step", "end_step", "censored", "escape_steps", "run_id"});
  std::string ytics;
  int y = 0, n = 0;
  for (const auto& r : s.runs) {
    if (!analysed(r) || !r.entry.episodes) continue;
    ++y;
    ytics += fmt::format("{}{} {}", ytics.empty() ? "" : ", ", gp_string(run_label(r.entry)), y);
    for (const analysis::EpisodeResult& e : *r.entry.episodes) {
      const std::optional<int64_t> end = e.censored ? r.entry.last_probe_step : e.exit_step;
      csv.row({std::to_string(series_of(s, r.entry.group)), std::to_string(y), num(static_cast<double>(e.entry_step)),
               end ? num(static_cast<double>(*end)) : "NaN", e.censored ? "1" : "0",
               num(static_cast<double>(e.escape_steps)), text(r.entry.run_id)});
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  Figure f;
  f.name = "episodes";
  f.section = "saddles";
  f.title = "Saddle episodes per run";
  f.caption = "Each bar is one saddle episode, from the probe step it was entered to the probe step it was left; an "
              "arrow head marks an episode still open at the run's last probe step (censored: a stall).";
  f.data = {{"", csv.body}};
  std::string cmds = fmt::format("set yrange [0.3:{}.7]\nset xlabel 'optimiser step'\nset ylabel 'run'\n", y);
  cmds += y <= 30 ? fmt::format("set ytics ({}) font ',8'\n", ytics) : "set ytics 5\n";
  cmds += "set key tmargin\n";
  cmds += "plot " + per_group(s.group_names, [&](int i, const std::string& title) {
            return fmt::format("ARG3 using 'entry_step':(column('series')=={} && column('censored')==0 ? column('y') : NaN):"
                               "(column('end_step')-column('entry_step')):(0) with vectors nohead lt {} lw 6 title {}, \\\n  "
                               "ARG3 using 'entry_step':(column('series')=={} && column('censored')==1 ? column('y') : NaN):"
                               "(column('end_step')-column('entry_step')):(0) with vectors head filled lt {} lw 6 notitle",
                               i, i, title, i, i);
          });
  f.commands = cmds + "\n";
  return f;
}

std::optional<Figure> curvature_figure(const StudyData& s, bool lambda_max) {
  RunLines lines({"step", "lambda_min", "lambda_max", "probe_loss", "probe_grad_norm", "run_id"});
  std::vector<double> values;
  std::set<int> present;
  for (const auto& r : s.runs) {
    if (r.curvature.empty()) continue;
    const int i = series_of(s, r.entry.group);
    present.insert(i);
    for (const auto& c : r.curvature) {
      const std::vector<std::string> row = {std::to_string(c.step), num(c.lambda_min), num(c.lambda_max),
                                            num(c.probe_loss), num(c.probe_grad_norm), text(r.entry.run_id)};
      lines.point(i, row[0], lambda_max ? row[2] : row[1], row);
      values.push_back(lambda_max ? c.lambda_max : c.lambda_min);
    }
    lines.end_line();
  }
  if (present.empty()) return std::nullopt;
  Figure f;
  const std::string col = lambda_max ? "lambda_max" : "lambda_min";
  f.name = col;
  f.section = "saddles";
  f.title = lambda_max ? "λmax over steps" : "λmin over steps";
  f.caption = lambda_max
                  ? "The largest Hessian eigenvalue on the probe batch at each curvature probe step, one line per run."
                  : "The smallest Hessian eigenvalue on the probe batch at each curvature probe step, one line per run: "
                    "below zero the point has a direction of negative curvature (a saddle when the gradient is small).";
  f.data = {{"", lines.body()}};
  std::string cmds = "set xlabel 'optimiser step'\nset ylabel " +
                     gp_string(lambda_max ? "λmax (Hessian eigenvalue, loss units per parameter unit²)"
                                          : "λmin (Hessian eigenvalue, loss units per parameter unit²)") + "\n";
  if (lambda_max && spans_decades(values)) cmds += "set logscale y\nset format y '%g'\n";
  if (!lambda_max) cmds += "set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#888888' dt 2\n";
  cmds += "plot " + series_curves(s.group_names, present, "step", col, lines.style(), true);
  f.commands = cmds + "\n";
  return f;
}

std::optional<Figure> survival_figure(const StudyData& s) {
  Csv csv({"series", "step", "survival", "lower", "upper", "group"});
  Csv marks({"series", "step", "survival", "censored"});
  std::set<int> present;
  for (const auto& g : s.analysis.groups) {
    if (g.km.empty()) continue;
    const int i = series_of(s, g.name);
    present.insert(i);
    // A step function drawn as points: each time appears twice, with the value before and after it.
    double sv = 1, lo = 1, hi = 1;
    csv.row({std::to_string(i), "0", "1", "1", "1", text(g.name)});
    for (const analysis::KmStep& k : g.km) {
      const std::string t = num(k.step);
      csv.row({std::to_string(i), t, num(sv), num(lo), num(hi), text(g.name)});
      sv = k.survival;
      lo = std::isnan(k.lower) ? sv : k.lower;
      hi = std::isnan(k.upper) ? sv : k.upper;
      csv.row({std::to_string(i), t, num(sv), num(lo), num(hi), text(g.name)});
      if (k.censored > 0) marks.row({std::to_string(i), t, num(sv), num(static_cast<double>(k.censored))});
    }
    csv.gap();
  }
  if (present.empty()) return std::nullopt;
  Figure f;
  f.name = "survival";
  f.section = "saddles";
  f.title = "Escape-time survival per execution config";
  f.caption = fmt::format(
      "Kaplan–Meier estimate of the fraction of runs still in their first saddle episode, against the optimiser "
      "steps since it was entered, with its pointwise {}% confidence band (log(−log) scale, Greenwood); crosses "
      "mark censored runs (still in the saddle at their last probe step).",
      show(json(100 * s.analysis.definitions.level)));
  f.data = {{"", csv.body}, {"_censored", marks.body}};
  std::string cmds = "set xlabel 'optimiser steps since the saddle was entered'\nset ylabel 'runs still in the saddle "
                     "(fraction)'\nset yrange [0:1.05]\n";
  cmds += "plot " + series_bands(s.group_names, present, "step", "lower", "upper");
  cmds += ", \\\n  " + per_group(s.group_names, [&](int i, const std::string& title) {
            return present.count(i) ? fmt::format("ARG3 using 'step':(column('series')=={} ? column('survival') : NaN) "
                                                  "with lines lt {} title {}, \\\n  ARG4 using 'step':(column('series')=={} ? "
                                                  "column('survival') : NaN) with points lt {} pt 2 ps 1.5 notitle",
                                                  i, i, title, i, i)
                                    : std::string();
          });
  f.commands = cmds + "\n";
  return f;
}

std::optional<Figure> theory_figure(const StudyData& s) {
  const analysis::Theory& th = s.analysis.theory;
  Csv csv({"in_fit", "predicted", "observed", "entry_step", "run_id"});
  std::vector<double> all;
  std::set<std::pair<std::string, int64_t>> fitted;
  int n = 0;
  for (const analysis::TheoryPoint& p : th.points) {
    const double observed = static_cast<double>(p.observed);
    csv.row({"1", num(p.predicted), num(observed), num(static_cast<double>(p.entry_step)), text(p.run_id)});
    fitted.insert({p.run_id, p.entry_step});
    all.push_back(p.predicted);
    all.push_back(observed);
    ++n;
  }
  // Escaped episodes outside the fit (other optimisers; SGD episodes closed by the curvature rule):
  // shown, not fitted.
  for (const auto& r : s.runs) {
    if (!analysed(r) || !r.entry.episodes) continue;
    for (const analysis::EpisodeResult& e : *r.entry.episodes) {
      if (e.censored || fitted.count({r.entry.run_id, e.entry_step})) continue;
      const double pred = e.theory.predicted_escape_steps;
      if (std::isnan(pred)) continue;
      const double observed = static_cast<double>(e.escape_steps);
      csv.row({"0", num(pred), num(observed), num(static_cast<double>(e.entry_step)), text(r.entry.run_id)});
      all.push_back(pred);
      all.push_back(observed);
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  Figure f;
  f.name = "theory";
  f.section = "saddles";
  f.title = "Predicted against observed escape time";
  const bool fit = !std::isnan(th.slope) && !std::isnan(th.intercept);
  f.caption = "Each point is an escaped saddle episode: the escape time ln(R/r₀)/ln(1 + η|λmin|) predicted from the "
              "measured λmin, η and r₀ at entry, against the observed one. Filled: SGD runs, in the least-squares fit "
              "(solid line); open: not fitted — other optimisers, and SGD episodes closed by the curvature rule rather "
              "than a loss drop. Dashed: observed = predicted.";
  f.data = {{"", csv.body}};
  std::string cmds = "set xlabel 'predicted escape time (optimiser steps)'\nset ylabel 'observed escape time (optimiser steps)'\n"
                     "set key inside top left vertical\n";
  if (spans_decades(all, 1.3)) cmds += "set logscale xy\nset format x '%g'\nset format y '%g'\n";
  cmds += "plot x with lines lt 8 lw 1 title 'observed = predicted'";
  if (fit)
    cmds += fmt::format(
        ", \\\n  {} + {}*x with lines lt 1 dt 1 lw 1.5 title {}", num(th.intercept), num(th.slope),
        gp_string(fmt::format("fit: observed = {} + {} × predicted (R² {}, n {})", show(json(th.intercept)),
                              show(json(th.slope)), show(number_or_null(th.r2)), show(json(th.n)))));
  if (n > static_cast<int>(fitted.size()) || fitted.empty())
    cmds += ", \\\n  ARG3 using 'predicted':(column('in_fit')==0 ? column('observed') : NaN) with points lt 3 pt 6 "
            "ps 1.2 title 'not fitted (other optimisers; curvature exits)'";
  if (!fitted.empty())
    cmds += ", \\\n  ARG3 using 'predicted':(column('in_fit')==1 ? column('observed') : NaN) with points lt 2 pt 7 "
            "ps 1.2 title 'SGD (fitted)'";
  cmds += "\n";
  f.commands = cmds;
  return f;
}

// ---- Rounding --------------------------------------------------------------------------------------

std::optional<Figure> ulp_figure(const StudyData& s, const std::string& phase) {
  // Bins of |ULP error| by powers of two: bin k holds 2^(k-1) < |e| <= 2^k; exact results get their own bin.
  std::map<int, std::map<int, int64_t>> counts;  // series -> bin -> rows
  std::map<int, int64_t> totals;
  int kmin = 0, kmax = 0;
  for (const auto& r : s.runs)
    for (const auto& o : r.ops) {
      if (o.phase != phase || !analysis::is_measured(o.flag)) continue;
      const int i = series_of(s, r.entry.group);
      const double e = std::fabs(o.ulp_error);
      // A run of no group of the analysis (a failed run's taps) is no series; a non-finite error has no bin.
      if (i == 0 || !std::isfinite(e)) continue;
      const int k = e == 0 ? INT32_MIN : static_cast<int>(std::ceil(std::log2(e)));
      if (k != INT32_MIN) {
        kmin = std::min(kmin, k);
        kmax = std::max(kmax, k);
      }
      ++counts[i][k];
      ++totals[i];
    }
  if (totals.empty()) return std::nullopt;
  const int zero_bin = kmin - 1;
  Csv csv({"series", "bin", "upper_abs_ulp", "rows", "fraction", "group"});
  for (auto& [i, bins] : counts) {
    for (int k = zero_bin; k <= kmax; ++k) {
      const int64_t c = bins.count(k == zero_bin ? INT32_MIN : k) ? bins[k == zero_bin ? INT32_MIN : k] : 0;
      csv.row({std::to_string(i), std::to_string(k), k == zero_bin ? "0" : num(std::ldexp(1.0, k)), std::to_string(c),
               num(static_cast<double>(c) / static_cast<double>(totals[i])), text(s.group_names[i - 1])});
    }
    csv.gap();
  }
  std::string xtics = fmt::format("'0' {}", zero_bin);
  const int stride = std::max(1, (kmax - kmin + 1) / 12);
  for (int k = kmin; k <= kmax; k += stride) xtics += fmt::format(", {} {}", gp_string(fmt::format("{:g}", std::ldexp(1.0, k))), k);
  Figure f;
  f.name = "ulp_" + phase;
  f.section = "rounding";
  f.title = phase == "fwd" ? "Forward op error in ULPs" : phase == "wgrad" ? "Weight-gradient op error in ULPs"
                                                                            : "Op error in ULPs (" + phase + ")";
  f.caption = fmt::format(
      "Distribution of |observed − exact| in ULPs of the exact value over every sampled {} op element with a finite "
      "exact value (op taps against the MPFR reference), per config, in bins by powers of two (a bin labelled 2^k "
      "holds errors in (2^(k−1), 2^k]; '0': bitwise exact). Elements beyond their rounding bound are counted in the "
      "table below.",
      phase == "fwd" ? "forward" : phase == "wgrad" ? "weight-gradient" : phase);
  f.data = {{"", csv.body}};
  std::string cmds = fmt::format("set xtics ({})\nset xrange [{}.5:{}.5]\nset yrange [0:*]\nset xlabel '|ULP error| "
                                 "(upper edge of the bin)'\nset ylabel 'fraction of sampled elements'\n",
                                 xtics, zero_bin - 1, kmax);
  std::set<int> present;
  for (const auto& t : totals) present.insert(t.first);
  cmds += "plot " + series_curves(s.group_names, present, "bin", "fraction", "linespoints");
  f.commands = cmds + "\n";
  return f;
}

// ---- Divergence and symmetry -----------------------------------------------------------------------

std::optional<Figure> divergence_figure(const StudyData& s) {
  Csv csv({"series", "step", "rel_l2", "max_ulp_distance", "pair"});
  std::vector<std::string> titles;
  bool positive = false;
  for (const analysis::DivergenceResult& p : s.analysis.divergence) {
    if (!p.snapshots || p.snapshots->empty()) continue;
    titles.push_back(fmt::format("{} vs {}, seed {}", p.a, p.b, p.seed));
    for (const analysis::SnapshotDistance& sn : *p.snapshots) {
      const double d = sn.rel_l2;
      positive = positive || d > 0;
      csv.row({std::to_string(titles.size()), num(static_cast<double>(sn.step)), num(d > 0 ? d : NAN),
               num(sn.max_ulp_distance), text(titles.back())});
    }
    csv.gap();
  }
  if (!positive) return std::nullopt;
  Figure f;
  f.name = "divergence";
  f.section = "divergence";
  f.title = "Parameter distance between paired runs";
  f.caption = "‖θa − θb‖ / ‖θa‖ at each common snapshot of two runs with the same seed on different configs (log "
              "scale; snapshots where the runs are bitwise identical have distance 0 and are not drawn).";
  f.data = {{"", csv.body}};
  std::string cmds = "set logscale y\nset format y '%g'\nset xlabel 'optimiser step'\nset ylabel 'relative parameter "
                     "distance ‖θa − θb‖ / ‖θa‖'\nset key tmargin font ',9'\n";
  std::set<int> all;
  for (size_t i = 1; i <= titles.size(); ++i) all.insert(static_cast<int>(i));
  cmds += "plot " + series_curves(titles, all, "step", "rel_l2", "linespoints");
  f.commands = cmds + "\n";
  return f;
}

std::optional<Figure> symmetry_figure(const StudyData& s, bool distance) {
  RunLines lines({"step", "identical_pairs", "min_relative_distance", "layer", "run_id"});
  std::set<int> present;
  bool positive = false;
  for (const auto& r : s.runs) {
    if (r.symmetry.empty()) continue;
    const int i = series_of(s, r.entry.group);
    present.insert(i);
    std::map<std::string, std::vector<const store::SymmetryRow*>> layers;
    for (const auto& row : r.symmetry) layers[row.layer].push_back(&row);
    for (const auto& [layer, rows] : layers) {
      for (const auto* row : rows) {
        positive = positive || row->min_relative_distance > 0;
        const std::vector<std::string> fields = {
            std::to_string(row->step), std::to_string(row->identical_pairs),
            num(row->min_relative_distance > 0 || !distance ? row->min_relative_distance : NAN), layer,
            text(r.entry.run_id)};
        lines.point(i, fields[0], distance ? fields[2] : fields[1], fields);
      }
      lines.end_line();
    }
  }
  if (present.empty() || (distance && !positive)) return std::nullopt;
  Figure f;
  f.name = distance ? "symmetry_distance" : "symmetry";
  f.section = "symmetry";
  f.title = distance ? "Distance between the closest units" : "Identical unit pairs over steps";
  f.caption = distance ? "min ‖u_a − u_b‖ / max(‖u_a‖, ‖u_b‖) over pairs of units of a layer, one line per run and "
                         "layer (log scale; 0 — an exact duplicate — is not drawn)."
                       : "Pairs of units (incoming and outgoing weights) that are bitwise identical, one line per run and "
                         "layer: a drop is the step at which the symmetry broke.";
  f.data = {{"", lines.body()}};
  std::string cmds = "set xlabel 'optimiser step'\n";
  cmds += distance ? "set logscale y\nset format y '%g'\nset ylabel 'relative distance of the closest pair'\n"
                   : "set ylabel 'bitwise identical unit pairs'\nset yrange [0:*]\n";
  const std::string col = distance ? "min_relative_distance" : "identical_pairs";
  cmds += "plot " + series_curves(s.group_names, present, "step", col, lines.style(), true);
  f.commands = cmds + "\n";
  return f;
}

// ---- Noise budget ------------------------------------------------------------------------------------

// Rounding and SGD's sampling noise over steps, from the analysis's noise rows: per group a solid line
// (rounding) and a dotted one (sampling) for each run, log scale; zeros (rounding at an exact point,
// sampling at full batch) cannot be drawn on it and are left out.
std::optional<Figure> noise_figure(const StudyData& s) {
  if (!s.analysis.noise_budget || s.analysis.noise_budget->rows.empty()) return std::nullopt;
  RunLines lines({"step", "rounding_norm", "sampling_norm", "ratio", "run_id"});
  std::set<int> present;
  std::string run;
  auto positive = [](double v) { return v > 0 ? num(v) : std::string("NaN"); };
  for (const analysis::NoiseBudgetRow& r : s.analysis.noise_budget->rows) {  // in run order, steps ascending
    if (r.run_id != run) lines.end_line(), run = r.run_id;
    const int i = series_of(s, r.group);
    present.insert(i);
    const std::vector<std::string> f = {std::to_string(r.step), positive(r.rounding_norm), positive(r.sampling_norm),
                                        num(r.ratio), text(run)};
    lines.point(i, f[0], f[1] + "/" + f[2], f);
  }
  lines.end_line();
  Figure f;
  f.name = "noise";
  f.section = "noise";
  f.title = "Rounding against SGD's sampling noise";
  f.caption = "At each noise probe step, ‖δg‖ — the run's gradient against float64 from the same parameters — "
              "(solid) and the norm of SGD's mini-batch noise at the run's batch size (dotted), one pair of lines per "
              "run, log scale. Where the solid line lies two decades or more below the dotted one, rounding is a "
              "small part of the noise the optimiser already injects.";
  f.data = {{"", lines.body()}};
  std::string plot;
  for (int i : present) {
    if (i < 1 || static_cast<size_t>(i) > s.group_names.size()) continue;
    const std::string g = s.group_names[static_cast<size_t>(i - 1)];
    const std::string drawn = fmt::format("column('series')=={} && column('drawn')==1", i);
    plot += fmt::format("{}ARG3 using 'step':({} ? column('rounding_norm') : NaN) with {} lt {} dt 1 title {}, \\\n  "
                        "ARG3 using 'step':({} ? column('sampling_norm') : NaN) with {} lt {} dt 3 title {}",
                        plot.empty() ? "" : ", \\\n  ", drawn, lines.style(), i, gp_string(g + ": rounding"), drawn,
                        lines.style(), i, gp_string(g + ": SGD sampling"));
  }
  if (plot.empty()) return std::nullopt;
  f.commands = "set xlabel 'optimiser step'\nset ylabel 'gradient noise, ‖·‖₂'\nset logscale y\nset format y '%g'\n"
               "plot " + plot + "\n";
  return f;
}

}  // namespace

std::vector<Figure> build_figures(const StudyData& s, ReportModel& model) {
  const int64_t window = std::max<int64_t>(1, s.analysis.definitions.loss_window);
  std::vector<std::optional<Figure>> all = {
      loss_figure(s, window),         final_loss_figure(s),       episodes_figure(s),
      curvature_figure(s, false),     curvature_figure(s, true),  survival_figure(s),
      theory_figure(s),               ulp_figure(s, "fwd"),       ulp_figure(s, "wgrad"),
      divergence_figure(s),           symmetry_figure(s, false),  symmetry_figure(s, true),
      noise_figure(s)};
  std::vector<Figure> out;
  for (auto& f : all) {
    if (!f) continue;
    FigureEntry e{f->name, f->section, static_cast<int64_t>(out.size() + 1), f->title, f->caption,
                  {f->name + ".svg", f->name + ".png", f->name + ".gp"}};
    for (const auto& d : f->data) e.files.push_back(f->name + d.first + ".csv");
    model.figures.push_back(std::move(e));
    out.push_back(std::move(*f));
  }
  return out;
}

}  // namespace saddlescope::reports
