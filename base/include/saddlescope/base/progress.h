// Progress of long work: a redrawn bar on a terminal, plain periodic lines otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace saddlescope {

class Progress {
 public:
  // `total` units of work named `unit` (e.g. "steps"). Writes to `out`; draws a bar when `out` is a
  // terminal, else one plain line every `plain_every_s` seconds (and at the end).
  Progress(std::string label, int64_t total, std::string unit, std::FILE* out = stdout,
           double plain_every_s = 10.0);

  // `done` units finished; `detail` is shown after the counts (e.g. "loss 0.0123"). Cheap when nothing
  // is due to be drawn, so it may be called every step.
  void update(int64_t done, const std::string& detail);
  // Draws the final state and ends the line.
  void finish(int64_t done, const std::string& detail);

  static bool is_terminal(std::FILE* f);

 private:
  void draw(int64_t done, const std::string& detail, bool final);

  std::string label_;
  int64_t total_;
  std::string unit_;
  std::FILE* out_;
  bool terminal_;
  double every_s_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// "1:02:03" / "2:03" for a duration in seconds; "?" when not finite.
std::string format_duration(double seconds);

}  // namespace saddlescope
