#include "run_flags.h"

#include <CLI/CLI.hpp>

namespace saddlescope::app {

std::string flag_name(const std::string& key) {
  std::string flag = "--" + key;
  for (char& c : flag) if (c == '_') c = '-';
  return flag;
}

RunFlags::RunFlags(CLI::App* sub) : sub_(sub) {
  sub->add_option("--config", config_, "TOML file of config keys; flags override it")->check(CLI::ExistingFile);
  for (const auto& key : trainer::config_keys())
    sub->add_option(flag_name(key), values_[key], trainer::config_help(key));
}

Result<trainer::RunConfig> RunFlags::resolve() const {
  trainer::ConfigBuilder builder;
  if (!config_.empty()) SADDLESCOPE_RETURN_IF_ERROR(builder.load_toml(config_));
  for (const auto& key : trainer::config_keys())
    if (sub_->count(flag_name(key)) > 0) SADDLESCOPE_RETURN_IF_ERROR(builder.set_flag(key, values_.at(key)));
  return builder.resolve();
}

}  // namespace saddlescope::app
