// How much memory this process can hold, for the preflight checks that turn an allocation which cannot
// succeed into an error naming what asked for it, before anything is allocated.
#pragma once

#include <cstdint>
#include <string>

namespace saddlescope {

// The machine's physical memory (sysconf _SC_PHYS_PAGES × _SC_PAGESIZE), or the cgroup v2 limit of this
// process (/sys/fs/cgroup/memory.max) when that is lower, in bytes. Not the memory free right now: that
// changes from second to second, and a check against it would let the same run pass or fail depending on
// what else is running. Read once per process.
uint64_t memory_limit_bytes();

// "512 B", "3.0 MiB", "23.4 GiB", "1.2 TiB": a byte count for messages.
std::string format_bytes(double bytes);

}  // namespace saddlescope
