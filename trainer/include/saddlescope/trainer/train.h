// One instrumented training run, from a resolved config to a run directory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "saddlescope/base/status.h"
#include "saddlescope/probes/probe.h"
#include "saddlescope/store/manifest.h"

namespace saddlescope::trainer {

struct RunConfig;

struct TrainOptions {
  bool replace = false;          // replace an existing run directory of the same config
  std::FILE* progress = stdout;  // progress bar / lines; nullptr for silence
  bool resume = false;           // continue the run in resume_dir from its checkpoint (cfg is its config)
  std::string resume_dir;
  // A run of a study: the manifest's "study" (name, task, model, config, seed, how it shared its GPU),
  // written at every start and resume. Null otherwise (a resumed run keeps what it had).
  nlohmann::json study;
};

struct TrainResult {
  std::string run_dir;
  store::RunStatus status = store::RunStatus::kCompleted;  // completed, diverged or interrupted
  int stop_signal = 0;                      // interrupted: the signal (SIGINT, SIGTERM, SIGHUP)
  int64_t steps_completed = 0;
  std::optional<int64_t> diverged_at_step;  // first step whose loss was not finite, or whose parameters
                                            // or gradients were not when the probes came to them
  std::string diverged_reason;              // "" for the loss; else what was not finite
  double final_loss = 0;                    // mean training loss over the last log window
  std::optional<double> eval_mse;           // mean squared error per pixel on the eval split
  std::optional<double> baseline_mse;       // same, for the trivial baseline
  std::string baseline;                     // "mean training image" or "previous frame"
  // A classifier's (model torchscript, loss cross_entropy): store::Evaluation's.
  std::optional<double> cross_entropy, baseline_cross_entropy, accuracy;
  std::string eval_split;                   // "test" or "train"
  double train_s = 0;
};

// Validates everything (device, data, batch size) before writing anything, then takes the run's lock
// (an error when a live process holds it), trains and writes <cfg.out>/runs/<run-id>/ (the run store:
// store/run_dir.h) and refreshes <cfg.out>/catalog.sqlite. A non-finite loss ends the run with status
// "diverged"; SIGINT/SIGTERM/SIGHUP end it at the next step boundary with a checkpoint and status
// "interrupted" (results, not errors). An error after the run directory exists leaves it with status
// "failed" and the error in the manifest. With options.resume, continues options.resume_dir from its
// last checkpoint: on the CPU and in deterministic CUDA configs the result is bitwise that of a run
// never stopped (wall-clock columns aside).
Result<TrainResult> train(const RunConfig& cfg, const TrainOptions& options);

// One curvature evaluation (probes::evaluate_curvature) of the model `cfg` describes, at the parameters
// of snapshot step `at_step` of the run cfg.init_from (or at cfg's initial parameters when at_step < 0),
// on the probe set a training run would use; options `probe_spec` leaves out take the model's defaults
// (probe_defaults). Writes nothing. Errors name the missing snapshot. The JSON detail also names the
// parameters and their count.
Result<probes::CurvatureEvaluation> curvature_at(const RunConfig& cfg, int64_t at_step, const std::string& probe_spec);

}  // namespace saddlescope::trainer
