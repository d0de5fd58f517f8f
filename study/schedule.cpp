#include "saddlescope/study/schedule.h"

#include <algorithm>

namespace saddlescope::study {

Need need_of(const StudyRun& run) { return {run.cfg.execution.threads, run.cuda(), run.cuda_index()}; }

void order_runs(std::vector<const StudyRun*>* runs) {
  std::stable_sort(runs->begin(), runs->end(), [](const StudyRun* a, const StudyRun* b) {
    if (a->cuda() != b->cuda()) return a->cuda();
    return !a->cuda() && a->cfg.execution.threads > b->cfg.execution.threads;
  });
}

Slots::Slots(HostSlots host)
    : host_(std::move(host)), core_busy_(host_.cores.size(), false), gpu_load_(host_.gpus.size(), 0) {}

bool Slots::possible(const Need& need) const {
  if (host_.cores.empty()) return false;
  if (!need.gpu) return true;
  if (host_.gpus.empty() || host_.per_gpu < 1) return false;
  return need.gpu_index < 0 ||
         std::find(host_.gpus.begin(), host_.gpus.end(), need.gpu_index) != host_.gpus.end();
}

std::optional<Grant> Slots::take(const Need& need) {
  if (!possible(need) || (host_.jobs > 0 && running_ >= host_.jobs)) return std::nullopt;
  const auto n_cores = static_cast<int64_t>(host_.cores.size());
  const int64_t width = need.gpu ? 1 : std::clamp<int64_t>(need.threads, 1, n_cores);
  Grant g;
  if (need.gpu) {
    // The least loaded GPU that may take it: runs spread over every GPU before any GPU gets a second.
    int best = -1;
    for (size_t i = 0; i < host_.gpus.size(); ++i) {
      if (gpu_load_[i] >= host_.per_gpu) continue;
      if (need.gpu_index >= 0 && host_.gpus[i] != need.gpu_index) continue;
      if (best < 0 || gpu_load_[i] < gpu_load_[best]) best = static_cast<int>(i);
    }
    if (best < 0) return std::nullopt;
    g.gpu = host_.gpus[best];
  }
  for (size_t i = 0; i < core_busy_.size() && static_cast<int64_t>(g.cores.size()) < width; ++i)
    if (!core_busy_[i]) g.cores.push_back(static_cast<int>(i));
  if (static_cast<int64_t>(g.cores.size()) < width) return std::nullopt;
  for (int i : g.cores) core_busy_[i] = true;
  if (g.gpu >= 0) ++gpu_load_[std::find(host_.gpus.begin(), host_.gpus.end(), g.gpu) - host_.gpus.begin()];
  for (int& i : g.cores) i = host_.cores[i];  // positions -> the cores' own numbers
  ++running_;
  return g;
}

void Slots::give_back(const Grant& grant) {
  for (int core : grant.cores)
    core_busy_[std::find(host_.cores.begin(), host_.cores.end(), core) - host_.cores.begin()] = false;
  if (grant.gpu >= 0) --gpu_load_[std::find(host_.gpus.begin(), host_.gpus.end(), grant.gpu) - host_.gpus.begin()];
  --running_;
}

}  // namespace saddlescope::study
