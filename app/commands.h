// The subcommands of `saddlescope`: each file registers one on the CLI11 app and returns what to run
// when the command line selects it. Runners return the process exit status; LibTorch exceptions are
// caught once, in main.
#pragma once

#include <functional>
#include <string>

#include <CLI/App.hpp>

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
Command add_ops(CLI::App& app);
Command add_store(CLI::App& app);

// Prints "saddlescope: <message>" on stderr and returns 1: the one way commands report errors.
int fail(const std::string& message);

}  // namespace saddlescope::app
