// The subcommands of `saddlescope`: each file registers one on the CLI11 app and returns what to run
// when the command line selects it. Runners return the process exit status; LibTorch exceptions are
// caught once, in main.
#pragma once

#include <functional>
#include <string>

#include <CLI/App.hpp>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {
struct RunConfig;
struct TrainResult;
}  // namespace saddlescope::trainer

namespace saddlescope::app {

struct Command {
  CLI::App* sub;            // the registered subcommand
  std::function<int()> run; // called when the command line selected `sub`
};

Command add_train(CLI::App& app);
Command add_data(CLI::App& app);
Command add_env(CLI::App& app);
Command add_diverge(CLI::App& app);
Command add_repeatability(CLI::App& app);
Command add_reference(CLI::App& app);
Command add_curvature(CLI::App& app);
Command add_replay(CLI::App& app);
Command add_ops(CLI::App& app);
Command add_store(CLI::App& app);
Command add_study(CLI::App& app);
Command add_analyze(CLI::App& app);
Command add_report(CLI::App& app);
Command add_twins(CLI::App& app);
Command add_invariance(CLI::App& app);
Command add_invariance_table(CLI::App& app);

// The config the run at `run_dir` was trained with, from its manifest (out: the study directory holding
// it), for the commands that train, replay or inspect a run again. Errors name the run or its manifest.
Result<trainer::RunConfig> run_config(const std::string& run_dir);

// This executable, for the processes a command starts (study runs, replays).
std::string self_path();

// Prints "saddlescope: <message>" on stderr and returns 1: the one way commands report errors.
int fail(const std::string& message);

// Prints a training's outcome (run directory, status, loss, evaluation) as `train` does and returns
// the exit status: 0 completed or diverged, 128+N interrupted by signal N, 1 an error (printed).
int print_train_result(const trainer::RunConfig& cfg, const Result<trainer::TrainResult>& r);

}  // namespace saddlescope::app
