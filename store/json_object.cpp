#include "saddlescope/store/json_object.h"

namespace saddlescope::store::json_object_detail {

std::string describe(const nlohmann::json& j) {
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

Status type_error(const std::string& path, const char* expected, const nlohmann::json& got) {
  return Status::Error((path.empty() ? std::string("the document") : path) + ": expected " + expected + ", got " +
                       describe(got));
}

}  // namespace saddlescope::store::json_object_detail
