#include "saddlescope/store/run_dir.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "saddlescope/base/remove_tree.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/sha256.h"

namespace fs = std::filesystem;

namespace saddlescope::store {

Status validate_run_id(const std::string& id) {
  if (id.empty() || id.size() > 128)
    return Status::Error("run id '" + id + "' must be 1-128 characters");
  if (id == "." || id == "..") return Status::Error("run id '" + id + "' is not a directory name");
  for (char c : id) {
    bool okc = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    if (!okc)
      return Status::Error("run id '" + id + "' may only contain letters, digits, '.', '_' and '-'");
  }
  return Status::Ok();
}

std::string make_run_id(const std::string& prefix, const std::string& canonical_config) {
  SADDLESCOPE_CHECK(validate_run_id(prefix).ok());
  return prefix + "-" + sha256_hex(canonical_config).substr(0, 8);
}

Result<std::string> create_run_dir(const std::string& study_dir, const std::string& run_id,
                                   bool replace) {
  SADDLESCOPE_RETURN_IF_ERROR(validate_run_id(run_id));
  fs::path dir = fs::path(study_dir) / "runs" / run_id;
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!replace)
      return Status::Error(dir.string() + ": run directory exists (same config); pass --force to replace it");
    SADDLESCOPE_RETURN_IF_ERROR(remove_tree(dir.string()));
  }
  fs::create_directories(dir, ec);
  if (ec) return Status::Error(dir.string() + ": cannot create: " + ec.message());
  return dir.string();
}

Status write_manifest(const std::string& run_dir, const nlohmann::json& manifest) {
  SADDLESCOPE_CHECK(manifest.value("format", "") == kManifestFormat);
  return write_file_atomic((fs::path(run_dir) / "manifest.json").string(), manifest.dump(2) + "\n");
}

Result<nlohmann::json> read_manifest(const std::string& run_dir) {
  std::string path = (fs::path(run_dir) / "manifest.json").string();
  auto text = read_file(path);
  if (!text) return text.status();
  nlohmann::json m = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object()) return Status::Error(path + ": not a JSON object");
  if (m.value("format", "") != kManifestFormat)
    return Status::Error(path + ": not a saddlescope run manifest (format is not '" +
                         std::string(kManifestFormat) + "')");
  const nlohmann::json& version = m.contains("format_version") ? m["format_version"] : nlohmann::json();
  if (!version.is_number_integer() || version.get<int>() != kManifestVersion)
    return Status::Error(path + ": format_version is " + version.dump() + ", this saddlescope reads only " +
                         std::to_string(kManifestVersion) + " (use the saddlescope that wrote it)");
  return m;
}

}  // namespace saddlescope::store
