// A figure of a report: the CSV tables behind it and the gnuplot commands that draw it from them, rendered
// by gnuplot (a program, run with an argument vector: never a shell) to SVG and PNG. Internal to reports/.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::reports {

struct Figure {
  std::string name;     // file stem: figures/<name>.svg, .png, .gp and <name><suffix>.csv
  std::string section;  // the report section it belongs to (loss, saddles, rounding, divergence, symmetry)
  std::string title;    // the caption's heading
  std::string caption;  // what it shows and how to read it
  // The data, in order: (suffix, CSV text). The script reads the i-th as ARG(3+i): figures/<name><suffix>.csv.
  std::vector<std::pair<std::string, std::string>> data;
  // gnuplot commands after the common preamble (terminal, style, the eight line types): axis labels,
  // scales and one `plot` reading ARG3... Strings from data (group names) go in through gp_string only.
  std::string commands;
};

// A gnuplot single-quoted string literal of `s` (inside one, only '' is special), for titles and labels.
// Newlines become spaces.
std::string gp_string(const std::string& s);

// Writes <dir>/<name>.gp and the CSV files, runs `gnuplot -c <name>.gp <name>.svg <name>.png <csv>...`
// in <dir>, and checks that both images came out non-empty. Errors name the figure and what gnuplot said.
Status render_figure(const Figure& figure, const std::string& dir, const std::string& gnuplot);

// The common preamble every figure script starts with (exposed for the tests and docs).
std::string figure_preamble();

}  // namespace saddlescope::reports
