// A study: the same training repeated over execution configs, models and seeds, in one TOML file
// (studies/quick.toml is the example to copy):
//
//   name = "quick"               # optional; default: the file's stem
//   seeds = [1, 2, 3]            # or { from = 1, to = 8 } (inclusive)
//   [base]                       # any key of `saddlescope train`, except seed and out
//   model = "autoencoder"
//   [models.NAME]                # optional, one table per model: keys over base's
//   [configs.NAME]               # optional, one table per execution config: keys over both
//   seed_offset = 100            # in a models or configs table: its runs use seed + 100 (their own
//                                # initial weights and data order, as independent runs would have)
//
// The matrix models × configs × seeds expands to runs, in the file's order. Each run's config is set
// and resolved exactly as `saddlescope train` does it — the same key table, the same checks, the same
// messages, naming the study file and line ("quick.toml:12: lr must be > 0 and finite, got -1").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/config.h"

namespace saddlescope::study {

// The largest matrix a study may expand to: checked on the product of its axes, before any run is
// built (a typo like seeds = { from = 1, to = 10000000 } is an error, not an hour of expansion).
inline constexpr int64_t kMaxStudyRuns = 100000;

struct StudyRun {
  int64_t task = 0;           // position in the plan, from 0 (a Slurm array index)
  std::string model, config;  // names of the [models.NAME] and [configs.NAME] tables
  int64_t seed = 0;           // the run's: a listed seed plus its tables' seed_offset
  trainer::RunConfig cfg;     // resolved; cfg.out is the study directory
  std::string run_id;         // the trainer's: <cfg.run_prefix()>-<hash of the resolved config>
  bool threads_set = false;   // threads given by the study, not the default (every core of the
                              // machine that resolves it: on Slurm, not known where the plan is made)

  std::string label() const;  // "autoencoder/cpu-t1/s3"
  bool cuda() const;          // device cuda or cuda:N
  int cuda_index() const;     // N of cuda:N; -1 for plain cuda (any GPU) and cpu
};

struct Study {
  std::string name;
  std::string file;                   // the TOML file it was read from
  std::vector<StudyRun> runs;         // models, then configs, then seeds, each in the file's order
  std::vector<std::string> warnings;  // resolve()'s warnings, each once (threads above the cores)
};

// Reads and expands the study in `path`, its runs written to the study directory `out` (when empty:
// runs/<name>). Errors, one
// line naming file:line: TOML syntax, unknown or misplaced keys, seed or out in a table (the study
// sets them), a name that cannot be part of a run label, an empty matrix, a matrix over
// kMaxStudyRuns, any config key's own check, and two runs that come out identical (the same run id:
// two configs that differ in nothing that changes the result, or a seed listed twice).
Result<Study> load_study(const std::string& path, const std::string& out);

}  // namespace saddlescope::study
