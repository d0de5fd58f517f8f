// Which runs of a study may run at once on one host, and on what: CPU runs get disjoint sets of cores
// as wide as their thread count (so that concurrent runs neither share cores nor change each other's
// speed much), GPU runs a slot on one GPU (at most `per_gpu` runs share a GPU) and one core for the
// host thread that drives it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "saddlescope/study/study.h"

namespace saddlescope::study {

struct HostSlots {
  std::vector<int> cores;  // the CPU cores runs may use (the runner's affinity mask)
  std::vector<int> gpus;   // the GPUs runs may use (indices as CUDA numbers them)
  int64_t per_gpu = 1;     // runs at once per GPU
  int64_t jobs = 0;        // runs at once in all (0: as many as cores and GPUs allow)
};

// What one run needs.
struct Need {
  int64_t threads = 1;  // CPU runs: cores (a run with more threads than there are cores runs alone)
  bool gpu = false;     // a GPU run: one slot on a GPU, and one core
  int gpu_index = -1;   // a GPU run that names its device (cuda:N) needs a slot on that GPU
};

// What `run` needs: its threads, or a GPU slot (on GPU N for cuda:N).
Need need_of(const StudyRun& run);

// The order runs are tried in (the runner's and the plan's simulation of it): GPU runs first (they are
// the long ones), then CPU runs widest first (a run on all cores goes before narrow ones fill them),
// then the plan's order. Sorts stably.
void order_runs(std::vector<const StudyRun*>* runs);

// What a run was given.
struct Grant {
  std::vector<int> cores;  // CPU runs: pin to these; GPU runs: the one core counted for them
  int gpu = -1;
};

class Slots {
 public:
  explicit Slots(HostSlots host);
  // Whether `need` can ever be met on this host (a GPU run on a host without that GPU cannot).
  bool possible(const Need& need) const;
  // Takes what `need` asks for now, or nothing when it is not free.
  std::optional<Grant> take(const Need& need);
  void give_back(const Grant& grant);
  int64_t running() const { return running_; }

 private:
  HostSlots host_;
  std::vector<bool> core_busy_;
  std::vector<int64_t> gpu_load_;  // runs on each of host_.gpus
  int64_t running_ = 0;
};

}  // namespace saddlescope::study
