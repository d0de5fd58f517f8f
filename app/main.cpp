// saddlescope: instrumented trainings that ask whether CPU and GPU runs escape saddle points
// differently. This file only dispatches; each subcommand lives in its own file.
//
// Exit statuses (README, Usage): 0 success (also --help and --version); 1 an error in an input or while
// running, reported as one line "saddlescope: <message>"; 2 a command line that does not parse (an
// unknown flag or subcommand, a missing or extra argument, a flag value CLI11 refuses), with CLI11's
// message. CLI11 would give each kind of parse error its own status (105, 106, 109, ...): one status
// is what scripts can test for.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "saddlescope/base/version.h"

namespace saddlescope::app {

constexpr int kUsageError = 2;

int fail(const std::string& message) {
  std::fprintf(stderr, "saddlescope: %s\n", message.c_str());
  return 1;
}

std::string self_path() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "saddlescope" : p.string();
}

}  // namespace saddlescope::app

int main(int argc, char** argv) {
  using namespace saddlescope::app;
  CLI::App app{"saddlescope: instrumented trainings, saddle-point analysis and an MPFR reference"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  app.set_version_flag("--version", fmt::format("saddlescope {} (commit {})", saddlescope::toolkit_version(),
                                                saddlescope::toolkit_commit()),
                       "Print the version and the commit it was built from, and exit");
  std::vector<Command> commands;
  for (auto add : {add_train, add_repeatability, add_diverge, add_curvature, add_replay, add_twins, add_invariance, add_invariance_table, add_ops, add_reference, add_data, add_store, add_study, add_analyze, add_report, add_env}) commands.push_back(add(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kUsageError;  // exit() prints help, the version, or the error
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
