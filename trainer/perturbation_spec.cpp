#include "saddlescope/trainer/perturbation_spec.h"

#include <cmath>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "float32_range.h"
#include "saddlescope/base/text.h"

namespace saddlescope::trainer {

Result<Perturbation> parse_perturbation(const std::string& spec) {
  std::vector<std::string> f = split(spec, ':');
  Perturbation q;
  q.kind = f[0];
  if ((q.kind == "none" || q.kind == "shuffle-reduction" || q.kind == "stochastic-rounding") && f.size() == 1) {
  } else if (q.kind == "gaussian" && (f.size() == 2 || (f.size() == 3 && (f[2] == "element" || f[2] == "absolute")))) {
    char* end = nullptr;
    q.sigma = std::strtod(f[1].c_str(), &end);
    if (f[1].empty() || *end != '\0' || !(q.sigma > 0) || !std::isfinite(q.sigma))
      return Status::Error("gaussian sigma must be a number > 0, got '" + printable(f[1]) + "'");
    if (std::string why = positive_float32(q.sigma); !why.empty()) return Status::Error("gaussian sigma " + why);
    q.elementwise = f.size() == 3 && f[2] == "element";
    q.absolute = f.size() == 3 && f[2] == "absolute";
  } else if (q.kind == "bitflip" && f.size() <= 3) {
    if (f.size() >= 2) q.param = f[1];
    if (f.size() == 3) {
      char* end = nullptr;
      q.index = std::strtoll(f[2].c_str(), &end, 10);
      if (f[2].empty() || *end != '\0' || q.index < 0)
        return Status::Error("bitflip index must be an integer >= 0, got '" + printable(f[2]) + "'");
    }
  } else {
    return Status::Error(
        "must be none, shuffle-reduction, gaussian:SIGMA[:element|:absolute], stochastic-rounding or "
        "bitflip[:PARAM[:INDEX]], got '" + printable(spec) + "'");
  }
  return q;
}

std::string Perturbation::spec() const {
  if (kind == "gaussian")
    return fmt::format("gaussian:{}{}", sigma, elementwise ? ":element" : absolute ? ":absolute" : "");
  if (kind == "bitflip" && (!param.empty() || index != 0)) return fmt::format("bitflip:{}:{}", param, index);
  return kind;
}

}  // namespace saddlescope::trainer
