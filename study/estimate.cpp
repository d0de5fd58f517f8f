#include "saddlescope/study/estimate.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include <fmt/format.h>

#include "saddlescope/base/process.h"
#include "saddlescope/base/remove_tree.h"
#include "saddlescope/probes/probe_spec.h"
#include "saddlescope/store/config_view.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/run_dir.h"

namespace saddlescope::study {
namespace {

// Probe evaluations (every probe, op taps included) in the first `steps` steps.
int64_t probe_evaluations(const std::vector<std::string>& probes, int64_t steps) {
  int64_t n = 0;
  for (const auto& text : probes) {
    auto spec = probes::parse_probe_spec(text);
    if (!spec) continue;
    for (int64_t s = 0; s < steps; ++s) n += spec->due(s);
  }
  return n;
}

}  // namespace

Estimator::Estimator(std::string out, std::string self, std::string study_file)
    : out_(std::move(out)), self_(std::move(self)), file_(std::move(study_file)) {}

Estimate Estimator::estimate(const StudyRun& run, bool measure) {
  // Rates of a finished run: the seconds of its step loop split into plain steps, probe evaluations
  // and checkpoints (train_s contains them all), and its final evaluation.
  auto rates_of = [](const store::RunManifest& m, Rates* r) {
    if (m.status != store::RunStatus::kCompleted || m.steps_completed < 1) return;
    auto config = store::config_view(m);  // its `probe` (trainer/config.cpp): a list of specs
    const std::vector<std::string> probes = config && config->probe ? *config->probe : std::vector<std::string>{};
    const int64_t evals = probe_evaluations(probes, m.steps_completed);
    const auto& t = m.timings;
    const double plain = std::max(0.0, t.train_s - t.probe_s - t.tap_s - t.checkpoint_s);
    const int k = r->runs;  // running means over the runs of the config
    auto mean = [k](double old, double x) { return (old * k + x) / (k + 1); };
    r->step_s = mean(r->step_s, plain / m.steps_completed);
    r->probe_eval_s = mean(r->probe_eval_s, evals ? (t.probe_s + t.tap_s) / evals : 0);
    r->checkpoint_step_s = mean(r->checkpoint_step_s, t.checkpoint_s / m.steps_completed);
    r->eval_s = mean(r->eval_s, t.eval_s);
    ++r->runs;
  };
  if (!scanned_)  // once: the finished runs do not change while a plan is made
    for (const auto& dir : store::list_run_dirs(out_))
      if (auto r = store::RunDir::open(dir)) rates_of(r->manifest(), &by_key_[r->manifest().config_key]);
  scanned_ = true;

  const std::string key = run.cfg.config_key();
  Estimate e;
  const Rates* rates = nullptr;
  if (auto it = by_key_.find(key); it != by_key_.end() && it->second.runs > 0) {
    rates = &it->second;
    e.source = fmt::format("{} finished run{} of its config", rates->runs, rates->runs == 1 ? "" : "s");
  } else if (auto m = measured_.find(key); m != measured_.end()) {
    rates = &m->second;
    e.source = fmt::format("measured {} steps", kMeasureSteps);
  } else if (measure) {
    // A short run of this task in a temporary directory, timed, then removed.
    std::string tmp = fmt::format("{}/saddlescope-plan-{}-{}", std::filesystem::temp_directory_path().string(), ::getpid(),
                                  run.task);
    Status s = run_process({self_, "study", "exec", file_, "--out", tmp, "--task", std::to_string(run.task),
                            "--measure-steps", std::to_string(kMeasureSteps)});
    for (const auto& dir : store::list_run_dirs(tmp))
      if (auto r = store::RunDir::open(dir)) rates_of(r->manifest(), &measured_[key]);
    remove_tree(tmp);
    if (measured_[key].runs == 0) {
      measured_.erase(key);
      e.source = "unknown: the measuring run failed: " + (s.ok() ? std::string("no result") : s.message());
      return e;
    }
    rates = &measured_[key];
    e.source = fmt::format("measured {} steps", kMeasureSteps);
  } else {
    e.source = "unknown: no finished run of its config";
    return e;
  }
  const int64_t steps = run.cfg.steps;
  e.seconds = rates->step_s * steps + rates->probe_eval_s * probe_evaluations(run.cfg.probes, steps) +
              rates->checkpoint_step_s * steps + rates->eval_s;
  return e;
}

double simulate(const Study& study, const std::vector<Estimate>& estimates, const HostSlots& host) {
  double known = 0;
  int n_known = 0;
  for (const auto& e : estimates)
    if (e.seconds > 0) known += e.seconds, ++n_known;
  const double fill = n_known ? known / n_known : 0;
  std::vector<const StudyRun*> queue;
  for (size_t i = 0; i < study.runs.size(); ++i)
    if (estimates[i].seconds > 0 || estimates[i].source.rfind("unknown", 0) == 0) queue.push_back(&study.runs[i]);
  order_runs(&queue);
  Slots slots(host);
  struct Running { double ends; Grant grant; };
  std::vector<Running> running;
  double now = 0;
  while (!queue.empty() || !running.empty()) {
    for (auto it = queue.begin(); it != queue.end();) {
      const Need need = need_of(**it);
      if (!slots.possible(need)) {
        it = queue.erase(it);
        continue;
      }
      auto g = slots.take(need);
      if (!g) {
        ++it;
        continue;
      }
      const Estimate& e = estimates[*it - study.runs.data()];
      const double s = e.seconds > 0 ? e.seconds : fill;
      running.push_back({now + s, *g});
      it = queue.erase(it);
    }
    if (running.empty()) break;
    auto first = std::min_element(running.begin(), running.end(),
                                  [](const Running& a, const Running& b) { return a.ends < b.ends; });
    now = first->ends;
    slots.give_back(first->grant);
    running.erase(first);
  }
  return now;
}

}  // namespace saddlescope::study
