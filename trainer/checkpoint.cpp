#include "saddlescope/trainer/checkpoint.h"

#include <filesystem>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "saddlescope/base/remove_tree.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/snapshot.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

constexpr const char* kFormat = "saddlescope.checkpoint";

}  // namespace

Status save_checkpoint(const std::string& run_dir, const Checkpoint& c) {
  auto dir = store::AtomicDir::begin(store::checkpoint_dir(run_dir, c.step));
  if (!dir) return dir.status();
  nlohmann::json names = nlohmann::json::array();
  for (const auto& [name, t] : c.tensors) {
    SADDLESCOPE_RETURN_IF_ERROR(write_tensor(dir->path() + "/" + name + ".npy", t));
    names.push_back(name);
  }
  nlohmann::json state = {{"format", kFormat}, {"format_version", store::kCheckpointVersion}, {"step", c.step},
                          {"train_s", c.train_s}, {"tensors", names}};
  SADDLESCOPE_RETURN_IF_ERROR(store::write_file_atomic(dir->path() + "/state.json", state.dump(2) + "\n"));
  return dir->commit();
}

Result<Checkpoint> load_checkpoint(const std::string& run_dir, int64_t step) {
  std::string dir = store::checkpoint_dir(run_dir, step);
  auto text = store::read_file(dir + "/state.json");
  if (!text) return Status::Error(dir + ": no complete checkpoint there (" + text.status().message() + ")");
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kFormat)
    return Status::Error(dir + "/state.json: not a saddlescope checkpoint");
  if (j.value("format_version", -1) != store::kCheckpointVersion)
    return Status::Error(dir + "/state.json: checkpoint format_version " + j["format_version"].dump() +
                         ", this saddlescope reads " + std::to_string(store::kCheckpointVersion));
  Checkpoint c;
  if (!j["step"].is_number_integer() || j["step"].get<int64_t>() != step || !j["train_s"].is_number() ||
      !j["tensors"].is_array())
    return Status::Error(dir + "/state.json: step, train_s or tensors missing or wrong");
  c.step = step;
  c.train_s = j["train_s"].get<double>();
  for (const auto& name : j["tensors"]) {
    if (!name.is_string()) return Status::Error(dir + "/state.json: tensors must be names");
    auto a = store::read_npy(dir + "/" + name.get<std::string>() + ".npy");
    if (!a) return a.status();
    c.tensors[name.get<std::string>()] = to_tensor(*a);
  }
  return c;
}

void remove_other_checkpoints(const std::string& run_dir, int64_t keep_step) {
  std::string keep = fs::path(store::checkpoint_dir(run_dir, keep_step)).filename().string();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(run_dir) / "checkpoint", ec))
    if (e.path().filename().string() != keep) (void)remove_tree(e.path().string());
}

}  // namespace saddlescope::trainer
