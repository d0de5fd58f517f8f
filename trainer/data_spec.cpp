#include "saddlescope/trainer/data_spec.h"

#include "saddlescope/base/text.h"
#include "saddlescope/trainer/cifar10.h"

namespace saddlescope::trainer {
namespace {

// `rest` after "name": "" (the default) or ":key=N" with N in [lo, hi]; false when it is neither.
bool parse_option(const std::string& rest, const std::string& key, int64_t lo, int64_t hi, int64_t* out) {
  if (rest.empty()) return true;
  const std::string prefix = ":" + key + "=";
  int64_t n = 0;
  if (rest.rfind(prefix, 0) != 0 || !parse_int(rest.substr(prefix.size()), &n) || n < lo || n > hi) return false;
  *out = n;
  return true;
}

}  // namespace

Result<DataSpec> parse_data_spec(const std::string& text) {
  DataSpec s;
  if (text == "mnist") return s;
  if (text == "moving-mnist" || text == "teacher") {
    s.kind = text == "teacher" ? DataSpec::Kind::kTeacher : DataSpec::Kind::kMovingMnist;
    return s;
  }
  if (text.rfind("cifar10", 0) == 0) {
    s.kind = DataSpec::Kind::kCifar10;
    if (parse_option(text.substr(7), "train", 1, kCifar10Train, &s.train)) return s;
    return Status::Error("must be cifar10 or cifar10:train=N with N in 1.." + std::to_string(kCifar10Train) +
                         ", got '" + printable(text) + "'");
  }
  if (text.rfind("moby-dick", 0) == 0) {
    s.kind = DataSpec::Kind::kMobyDick;
    if (parse_option(text.substr(9), "context", 1, 4096, &s.context)) return s;
    return Status::Error("must be moby-dick or moby-dick:context=T with T in 1..4096, got '" + printable(text) + "'");
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
  return Status::Error("must be mnist, cifar10[:train=N], moby-dick[:context=T], npy:X.npy[,Y.npy], moving-mnist or "
                       "teacher, got '" + printable(text) + "'");
}

std::string DataSpec::name() const {
  switch (kind) {
    case Kind::kMnist: return "mnist";
    case Kind::kCifar10: return train == 0 ? "cifar10" : "cifar10:train=" + std::to_string(train);
    case Kind::kMobyDick:
      return context == kDefaultContext ? "moby-dick" : "moby-dick:context=" + std::to_string(context);
    case Kind::kMovingMnist: return "moving-mnist";
    case Kind::kTeacher: return "teacher";
    case Kind::kNpy: return "npy:" + x + (y.empty() ? "" : "," + y);
  }
  return "?";
}

}  // namespace saddlescope::trainer
