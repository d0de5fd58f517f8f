// The flags of every command that starts trainings (train, repeatability): --config FILE and one flag
// per config key, so that the file and the command line can never disagree on names.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <CLI/App.hpp>

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/config.h"

namespace saddlescope::app {

// Loads the config a run recorded in its manifest.json into `builder`, with `out` its study directory (so
// that a run like it lands beside it). Errors: not a run directory, a manifest this saddlescope cannot read.
Status load_run_config(trainer::ConfigBuilder* builder, const std::string& run_dir);

class RunFlags {
 public:
  // Registers the flags on `sub`. The object must outlive parsing (hold it in a shared_ptr). Keys in
  // `unused` are keys the command has no use for: giving their flag is an error that says so (with
  // `hint`), never silently ignored.
  explicit RunFlags(CLI::App* sub, std::vector<std::string> unused = {}, std::string hint = "");
  RunFlags(const RunFlags&) = delete;
  RunFlags& operator=(const RunFlags&) = delete;

  // The config: the run's manifest (--like RUN_DIR, when given), then the file (--config), then the
  // flags that were given, then defaults. Errors name the
  // file and line or the flag. Warnings (ConfigBuilder::resolve) are printed on stderr, one line each,
  // "saddlescope: warning: ...": call once per command.
  Result<trainer::RunConfig> resolve() const;
  // Whether any config flag or --config was given.
  bool any_given() const;

 private:
  CLI::App* sub_;
  std::vector<std::string> unused_;
  std::string hint_;
  std::string like_;    // a run directory whose manifest's config is the starting point
  std::string config_;
  std::map<std::string, std::string> values_;              // config key -> flag text
  std::map<std::string, std::vector<std::string>> lists_;  // list keys -> every occurrence
};

}  // namespace saddlescope::app
