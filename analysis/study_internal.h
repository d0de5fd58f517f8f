// The study analysis's pieces, internal to analysis/: a run as read from its directory (study_runs.cpp),
// the pairs of runs of one seed in two groups (study_pairs.cpp), and what study_analysis.cpp puts
// together from them.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "comparisons.h"
#include "saddlescope/analysis/analysis_result.h"
#include "saddlescope/analysis/attribution.h"
#include "saddlescope/analysis/divergence.h"
#include "saddlescope/analysis/episodes.h"
#include "saddlescope/analysis/noise_budget.h"
#include "saddlescope/analysis/stats.h"
#include "saddlescope/analysis/study_analysis.h"
#include "saddlescope/store/run_dir.h"

namespace saddlescope::analysis::study {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An optional as analysis.json holds it: the value, or null.
template <class T>
nlohmann::json opt(const std::optional<T>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
}

struct Run {
  std::string id, path, group;
  std::string model;    // the study's model table (manifest study.model); "" outside a study
  int64_t seed = 0;
  int64_t data_seed = 0;  // the example order's seed (the config's data_seed, = seed by default)
  std::string status;
  std::string skipped;  // why the run is left out of everything ("" when analysed)
  std::optional<store::RunDir> dir;
  std::vector<store::MetricsRow> metrics;
  std::vector<store::SymmetryRow> symmetry;  // empty without a symmetry probe
  std::optional<RunEpisodes> episodes;
  bool probe_counts = true;   // false: a reanalysed file from before negative/significant/flat counts
  std::string episodes_note;  // why there are no episodes (no curvature probe, unreadable curvature.csv)
  std::vector<int64_t> refined_steps;  // snapshot steps the refine pass evaluated
  std::string refine_note;             // why a refine evaluation failed
  std::optional<double> final_loss, eval_mse, baseline_mse;
  NoiseRun noise;          // noise.csv's rows (none without a noise probe) and what their predictions need
  std::string noise_note;  // why the rows are not there (an unreadable noise.csv)
  std::string optimizer = "adam";
  std::string dtype = "float32";
  nlohmann::json perturbation;  // the config's perturbation spec
  std::string curvature_spec;   // the config's curvature probe ("" when none): the refine pass evaluates it

  bool analysed() const { return skipped.empty(); }
};

// The run directories of <study_dir>/runs, sorted; hidden ones and writers' temporaries left out.
std::vector<std::string> run_names(const std::string& study_dir);
// One run as the analysis reads it: its manifest's config and status, its tables, its episodes (and,
// with options.refine, their refinement through `at`). A run that cannot be analysed says why in
// `skipped`; a curvature.csv that does not read leaves the run in with `episodes_note`.
Run read_run(const std::string& study_dir, const std::string& name, const AnalysisOptions& o, const CurvatureAt& at);
// Its analysis.json runs[] entry.
nlohmann::json run_json(const Run& r, const AnalysisOptions& o);

// f(0), ..., f(n − 1) on every core of the machine.
template <class F>
void parallel_for(size_t n, F f) {
  const size_t workers = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < n;) f(i);
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
}

struct Group {
  std::string name;
  std::string model;             // its runs' study model: groups of different models are not compared
  std::vector<const Run*> runs;  // analysed runs
  std::vector<Observation> escapes;  // each run's first episode
  std::vector<double> final_loss, time_in_saddle;
  detail::GroupSample sample;    // the same, run by run, for the comparisons
};

// Runs of a group by seed (the first run of each seed).
std::map<int64_t, const Run*> by_seed(const Group& g);
// The divergence entry of runs `a` and `b` (one seed, two groups): `d`, or `error` when it could not be
// computed.
nlohmann::json divergence_json(const Run& a, const Run& b, const Divergence* d, const std::string& error);
// The attribution of one pair of runs (same seed, groups a and b) from their divergence: replayed
// through `replay` when it can, else from the runs' recorded op taps.
nlohmann::json attribution_json(const Group& ga, const Group& gb, const Run& a, const Run& b, const Divergence* d,
                                const AnalysisOptions& o, const Replayer& replay);
// The theory check (docs/analysis.md) over the runs as analysis.json declares them.
Theory theory_check(const std::vector<RunResult>& runs);

}  // namespace saddlescope::analysis::study
