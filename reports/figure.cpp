// Figures through gnuplot: one script per figure, the file names passed as arguments (ARG1...), so that
// no path or group name is ever part of a command line or of the script's code.
#include "figure.h"

#include <fmt/format.h>

#include "saddlescope/base/process.h"
#include "saddlescope/store/files.h"

namespace saddlescope::reports {

std::string gp_string(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "''";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out + "'";
}

// Eight line types told apart in greyscale print by dash pattern and marker as well as by colour (the
// Okabe–Ito palette, which also survives the common colour-vision deficiencies).
std::string figure_preamble() {
  return R"(set datafile separator ','
set datafile columnheaders
set encoding utf8
set termoption noenhanced
set style fill transparent solid 0.18 noborder
set grid lc rgb '#d9d9d9' lw 1
set border lc rgb '#333333'
set key tmargin center horizontal box lc rgb '#bbbbbb'
set linetype 1 lc rgb '#000000' lw 2 dt 1 pt 7 ps 0.9
set linetype 2 lc rgb '#d55e00' lw 2 dt 2 pt 5 ps 0.9
set linetype 3 lc rgb '#0072b2' lw 2 dt 3 pt 9 ps 1.1
set linetype 4 lc rgb '#009e73' lw 2 dt 4 pt 13 ps 1.0
set linetype 5 lc rgb '#cc79a7' lw 2 dt 5 pt 11 ps 1.0
set linetype 6 lc rgb '#e69f00' lw 2 dt (12,6,2,6,2,6) pt 6 ps 0.9
set linetype 7 lc rgb '#56b4e9' lw 2 dt (2,4) pt 4 ps 0.9
set linetype 8 lc rgb '#7f7f7f' lw 2 dt (16,4) pt 8 ps 1.0
set linetype cycle 8
)";
}

Status render_figure(const Figure& f, const std::string& dir, const std::string& gnuplot) {
  const std::string script =
      fmt::format("# {} — {}\n# gnuplot -c {}.gp OUT.svg OUT.png{}\n", f.name, f.title, f.name,
                  [&] {
                    std::string a;
                    for (const auto& d : f.data) a += " " + f.name + d.first + ".csv";
                    return a;
                  }()) +
      figure_preamble() +
      "set terminal svg size 760,440 dynamic font 'sans,11' background '#ffffff'\nset termoption noenhanced\n"
      "set output ARG1\n" +
      f.commands +
      "\nset terminal pngcairo size 1520,880 font 'sans,22' linewidth 2 background '#ffffff'\n"
      "set termoption noenhanced\nset output ARG2\nreplot\nset output\n";
  std::vector<std::string> argv = {gnuplot, "-c", f.name + ".gp", f.name + ".svg", f.name + ".png"};
  Status st = store::write_file_atomic(dir + "/" + f.name + ".gp", script);
  for (const auto& [suffix, csv] : f.data) {
    if (st.ok()) st = store::write_file_atomic(dir + "/" + f.name + suffix + ".csv", csv);
    argv.push_back(f.name + suffix + ".csv");
  }
  if (!st.ok()) return st;
  st = run_process(argv, dir);
  if (!st.ok()) return Status::Error(fmt::format("figure {}: {}", f.name, st.message()));
  for (const char* ext : {".svg", ".png"}) {
    auto bytes = store::read_file(dir + "/" + f.name + ext);
    if (!bytes || bytes->size() < 100)
      return Status::Error(fmt::format("figure {}: gnuplot wrote no {} image ({})", f.name, ext + 1,
                                       bytes ? "empty" : bytes.status().message()));
  }
  return Status::Ok();
}

}  // namespace saddlescope::reports
