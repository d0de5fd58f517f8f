// What the report's figure makers share, internal to reports/: CSV tables as gnuplot reads them, the
// lines drawn per run (thinned to what a screen shows), and the series of a group, which keeps its colour,
// dash and marker in every figure. plots.cpp makes the loss and saddle figures, plots_evidence.cpp the
// rounding, divergence, symmetry and noise ones.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model.h"
#include "saddlescope/store/csv.h"

namespace saddlescope::reports::plot {

using nlohmann::json;


inline constexpr size_t kMaxCurvePoints = 300;  // per group: enough for a smooth curve in print

inline std::string num(double v) { return std::isfinite(v) ? store::format_double(v) : "NaN"; }
inline std::string num(const json& v) { return v.is_number() ? num(v.get<double>()) : "NaN"; }
// A text field, last in its row: quoted, so that a comma in a group name stays in its field.
inline std::string text(const std::string& s) {
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
inline bool spans_decades(const std::vector<double>& v, double decades = 1.7) {
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
inline std::string series_curves(const std::vector<std::string>& titles, const std::set<int>& present, const std::string& x,
                          const std::string& y, const std::string& style, bool drawn_only = false) {
  const std::string drawn = drawn_only ? " && column('drawn')==1" : "";
  return per_group(titles, [&](int i, const std::string& title) {
    return present.count(i) ? fmt::format("ARG3 using '{}':(column('series')=={}{} ? column('{}') : NaN) with {} lt {} "
                                          "title {}", x, i, drawn, y, style, i, title)
                            : std::string();
  });
}

// One shaded band per series present: between columns `low` and `high` of ARG3, the rows of series i.
inline std::string series_bands(const std::vector<std::string>& titles, const std::set<int>& present, const std::string& x,
                         const std::string& low, const std::string& high) {
  return per_group(titles, [&](int i, const std::string&) {
    return present.count(i) ? fmt::format("ARG3 using '{}':(column('series')=={} ? column('{}') : NaN):'{}' with "
                                          "filledcurves lt {} notitle", x, i, low, high, i)
                            : std::string();
  });
}

// The figure series of a group: its place in the analysis's groups, from 1 (0: none).
inline int series_of(const StudyData& s, const std::optional<std::string>& group) {
  if (!group) return 0;
  auto it = std::find(s.group_names.begin(), s.group_names.end(), *group);
  return it == s.group_names.end() ? 0 : static_cast<int>(it - s.group_names.begin()) + 1;
}

inline bool analysed(const RunData& r) { return !r.entry.skipped; }



// The figures of sections 5 to 9 (plots_evidence.cpp); none when the study has no such data.
std::optional<Figure> ulp_figure(const StudyData& s, const std::string& phase);
std::optional<Figure> divergence_figure(const StudyData& s);
std::optional<Figure> symmetry_figure(const StudyData& s, bool distance);
std::optional<Figure> noise_figure(const StudyData& s);

}  // namespace saddlescope::reports::plot
