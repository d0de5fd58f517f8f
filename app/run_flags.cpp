#include "run_flags.h"

#include <algorithm>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "saddlescope/store/run_dir.h"

namespace saddlescope::app {

using trainer::flag_name;

Status load_run_config(trainer::ConfigBuilder* builder, const std::string& run_dir) {
  auto run = store::RunDir::open(run_dir);
  if (!run) return run.status();
  nlohmann::json config = run->manifest().config;
  config["out"] = run->study_dir();
  return builder->load_json(config, run_dir + "/manifest.json");
}

RunFlags::RunFlags(CLI::App* sub, std::vector<std::string> unused, std::string hint)
    : sub_(sub), unused_(std::move(unused)), hint_(std::move(hint)) {
  // No CLI::ExistingFile: the config is checked where it is read (a missing file, a FIFO or a device is
  // an input error naming the file, exit status 1, like every other input file).
  sub->add_option("--like", like_,
                  "A run directory: start from the config in its manifest.json (its out too); --config and flags "
                  "override it");
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
  if (!like_.empty()) {
    Status st = load_run_config(&builder, like_);
    if (!st.ok()) return Status::Error("--like: " + st.message());
  }
  if (!config_.empty()) SADDLESCOPE_RETURN_IF_ERROR(builder.load_toml(config_));
  for (const auto& key : trainer::config_keys()) {
    if (sub_->count(flag_name(key)) == 0) continue;
    if (std::find(unused_.begin(), unused_.end(), key) != unused_.end())
      return Status::Error(flag_name(key) + ": not used by `saddlescope " + sub_->get_name() + "`" +
                           (hint_.empty() ? "" : " (" + hint_ + ")"));
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

bool RunFlags::any_given() const {
  if (!config_.empty() || !like_.empty()) return true;
  for (const auto& key : trainer::config_keys())
    if (sub_->count(flag_name(key)) > 0) return true;
  return false;
}

}  // namespace saddlescope::app
