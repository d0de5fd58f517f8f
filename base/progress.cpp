#include "saddlescope/base/progress.h"

#include <unistd.h>

#include <cmath>

namespace saddlescope {

Progress::Progress(std::string label, int64_t total, std::string unit, std::FILE* out,
                   double plain_every_s)
    : label_(std::move(label)), total_(total), unit_(std::move(unit)), out_(out),
      terminal_(is_terminal(out)), every_s_(terminal_ ? 0.1 : plain_every_s),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

bool Progress::is_terminal(std::FILE* f) { return isatty(fileno(f)) == 1; }

void Progress::update(int64_t done, const std::string& detail) {
  auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_draw_).count() < every_s_) return;
  last_draw_ = now;
  draw(done, detail, false);
}

void Progress::finish(int64_t done, const std::string& detail) { draw(done, detail, true); }

void Progress::draw(int64_t done, const std::string& detail, bool final) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = elapsed > 0 ? done / elapsed : 0.0;
  double eta = rate > 0 ? (total_ - done) / rate : NAN;
  char counts[160];
  std::snprintf(counts, sizeof counts, "%lld/%lld %s | %.1f %s/s | %s %s",
                static_cast<long long>(done), static_cast<long long>(total_), unit_.c_str(), rate,
                unit_.c_str(), final ? "took" : "ETA",
                format_duration(final ? elapsed : eta).c_str());
  if (terminal_) {
    constexpr int kWidth = 24;
    int filled = total_ > 0 ? static_cast<int>(kWidth * done / total_) : kWidth;
    std::string bar(filled, '#');
    bar.resize(kWidth, '.');
    std::fprintf(out_, "\r\033[K%s [%s] %s | %s", label_.c_str(), bar.c_str(), counts, detail.c_str());
    if (final) std::fputc('\n', out_);
  } else {
    std::fprintf(out_, "%s %s | %s\n", label_.c_str(), counts, detail.c_str());
  }
  std::fflush(out_);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

}  // namespace saddlescope
