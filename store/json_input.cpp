#include "saddlescope/store/json_input.h"

namespace saddlescope::store {

Result<nlohmann::json> parse_json(const std::string& text, const std::string& path) {
  // Depth of '[' and '{' outside strings; a malformed text can only be refused by the parser below.
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return Status::Error(path + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " +
                             std::to_string(i) + ")");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Error(path + ": not valid JSON");
  return j;
}

const nlohmann::json& field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json null;
  return j.is_object() && j.contains(key) ? j.at(key) : null;
}

}  // namespace saddlescope::store
