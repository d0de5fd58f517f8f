// saddlescope: instrumented trainings that ask whether CPU and GPU runs escape saddle points
// differently. This file only dispatches; each subcommand lives in its own file.
#include <cstdio>
#include <exception>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"

namespace saddlescope::app {

int fail(const std::string& message) {
  std::fprintf(stderr, "saddlescope: %s\n", message.c_str());
  return 1;
}

}  // namespace saddlescope::app

int main(int argc, char** argv) {
  using namespace saddlescope::app;
  CLI::App app{"saddlescope: instrumented trainings, saddle-point analysis and an MPFR reference"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  std::vector<Command> commands;
  for (auto add : {add_train, add_repeatability, add_diverge, add_curvature, add_ops, add_reference, add_data, add_store, add_env}) commands.push_back(add(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (const Command& c : commands)
      if (c.sub->parsed()) return c.run();
  } catch (const std::exception& e) {
    std::string what = e.what();
    return fail(what.substr(0, what.find('\n')));  // LibTorch appends a C++ backtrace: keep one line
  }
  return fail("no command given (try --help)");
}
