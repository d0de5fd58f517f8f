#include "run_flags.h"

#include <cstdio>

#include <CLI/CLI.hpp>

namespace saddlescope::app {

using trainer::flag_name;

RunFlags::RunFlags(CLI::App* sub) : sub_(sub) {
  // No CLI::ExistingFile: the config is checked where it is read (a missing file, a FIFO or a device is
  // an input error naming the file, exit status 1, like every other input file).
  sub->add_option("--config", config_, "TOML file of config keys; flags override it");
  for (const auto& key : trainer::config_keys()) {
    if (trainer::config_is_list(key))
      sub->add_option(flag_name(key), lists_[key], trainer::config_help(key))->take_all();
    else
      sub->add_option(flag_name(key), values_[key], trainer::config_help(key));
  }
}

Result<trainer::RunConfig> RunFlags::resolve() const {
  trainer::ConfigBuilder builder;
  if (!config_.empty()) SADDLESCOPE_RETURN_IF_ERROR(builder.load_toml(config_));
  for (const auto& key : trainer::config_keys()) {
    if (sub_->count(flag_name(key)) == 0) continue;
    if (trainer::config_is_list(key))
      for (const auto& item : lists_.at(key)) SADDLESCOPE_RETURN_IF_ERROR(builder.set_flag(key, item));
    else
      SADDLESCOPE_RETURN_IF_ERROR(builder.set_flag(key, values_.at(key)));
  }
  std::vector<std::string> warnings;
  auto cfg = builder.resolve(&warnings);
  for (const auto& w : warnings) std::fprintf(stderr, "saddlescope: warning: %s\n", w.c_str());
  return cfg;
}

}  // namespace saddlescope::app
