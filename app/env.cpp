// saddlescope env: print the environment fingerprint that every manifest records.
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "saddlescope/trainer/execution.h"
#include "saddlescope/trainer/fingerprint.h"

namespace saddlescope::app {

Command add_env(CLI::App& app) {
  auto threads = std::make_shared<int>(0);
  CLI::App* sub = app.add_subcommand("env", "Print the environment fingerprint (JSON)");
  sub->add_option("--threads", *threads, "Intra-op threads to report (default: LibTorch's default)")
      ->check(CLI::Range(1, 1024));
  auto run = [threads]() -> int {
    if (*threads > 0) trainer::set_threads(*threads);
    fmt::print("{}\n", trainer::environment_fingerprint().dump(2));
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
