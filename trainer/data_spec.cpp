#include "saddlescope/trainer/data_spec.h"

#include "saddlescope/base/text.h"

namespace saddlescope::trainer {

Result<DataSpec> parse_data_spec(const std::string& text) {
  DataSpec s;
  if (text == "mnist") return s;
  if (text == "moving-mnist" || text == "teacher") {
    s.kind = text == "teacher" ? DataSpec::Kind::kTeacher : DataSpec::Kind::kMovingMnist;
    return s;
  }
  if (text.rfind("npy:", 0) == 0) {
    std::string rest = text.substr(4);
    size_t comma = rest.find(',');
    s.kind = DataSpec::Kind::kNpy;
    s.x = rest.substr(0, comma);
    s.y = comma == std::string::npos ? "" : rest.substr(comma + 1);
    bool y_ok = comma == std::string::npos || (!s.y.empty() && s.y.find(',') == std::string::npos);
    if (!s.x.empty() && y_ok) return s;
  }
  return Status::Error("must be mnist, npy:X.npy[,Y.npy], moving-mnist or teacher, got '" + printable(text) + "'");
}

std::string DataSpec::name() const {
  switch (kind) {
    case Kind::kMnist: return "mnist";
    case Kind::kMovingMnist: return "moving-mnist";
    case Kind::kTeacher: return "teacher";
    case Kind::kNpy: return "npy:" + x + (y.empty() ? "" : "," + y);
  }
  return "?";
}

}  // namespace saddlescope::trainer
