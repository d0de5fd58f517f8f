#include "saddlescope/analysis/analysis_result.h"

#include <fmt/format.h>

namespace saddlescope::analysis {

Result<AnalysisResult> decode_analysis(const nlohmann::json& j) {
  const auto version = j.is_object() ? j.find("schema_version") : j.end();
  if (version == j.end() || !version->is_number_integer())
    return Status::Error("schema_version: expected an integer (analysis.json is an object with one)");
  if (version->get<int64_t>() != kAnalysisSchemaVersion)
    return Status::Error(fmt::format("schema_version: {} is not one this build reads ({})", version->dump(),
                                     kAnalysisSchemaVersion));
  return store::decode<AnalysisResult>(j);
}

nlohmann::json encode_analysis(const AnalysisResult& a) { return store::encode(a); }

Result<AnalysisResult> decode_analysis_exact(const nlohmann::json& j) {
  auto typed = decode_analysis(j);
  if (!typed) return typed;
  const nlohmann::json patch = nlohmann::json::diff(encode_analysis(*typed), j);
  if (!patch.empty()) return Status::Error("not what analysis_result.h declares: " + patch.front().dump());
  return typed;
}

}  // namespace saddlescope::analysis
