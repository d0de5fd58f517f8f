#include "saddlescope/base/memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace saddlescope {
namespace {

// The cgroup v2 limit of this process, or 0 when there is none ("max") or it cannot be read.
uint64_t cgroup_limit() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  unsigned long long limit = 0;
  if (!(in >> limit)) return 0;
  return limit;
}

uint64_t read_limit() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  uint64_t physical = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : UINT64_MAX;
  uint64_t cgroup = cgroup_limit();
  return cgroup > 0 ? std::min(physical, cgroup) : physical;
}

}  // namespace

uint64_t memory_limit_bytes() {
  static const uint64_t limit = read_limit();
  return limit;
}

std::string format_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[u]);
  return buf;
}

}  // namespace saddlescope
