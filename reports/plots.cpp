// The report's figures: for each, the CSV tables behind it (computed here from analysis.json and the
// run directories) and the gnuplot commands that draw them. Series i is the i-th group of the analysis
// in every figure, so a group keeps its colour, dash and marker throughout the report.
#include "plots_common.h"

#include "saddlescope/analysis/stats.h"

namespace saddlescope::reports {
namespace plot {
namespace {

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
      show(100 * s.analysis.definitions.level));
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
        gp_string(fmt::format("fit: observed = {} + {} × predicted (R² {}, n {})", show(th.intercept),
                              show(th.slope), show(th.r2), show(th.n))));
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

}  // namespace
}  // namespace plot

using namespace plot;

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
