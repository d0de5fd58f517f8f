#include "saddlescope/trainer/config_choices.h"

#include <cstdlib>

#include "saddlescope/base/text.h"

namespace saddlescope::trainer {
namespace {

// The value of `names` (indexed by the enum) that is `text`, or "must be one of a, b, got 'x'".
template <class Enum, size_t N>
Result<Enum> parse_name(const std::string& text, const char* const (&names)[N]) {
  std::string list;
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i]) return static_cast<Enum>(i);
    list += (i == 0 ? "" : ", ") + std::string(names[i]);
  }
  return Status::Error("must be one of " + list + ", got '" + printable(text) + "'");  // may hold a newline
}

constexpr const char* kModelNames[] = {"autoencoder", "prednet", "linear", "torchscript"};  // in ModelKind's order
constexpr const char* kDtypeNames[] = {"float32", "float64"};               // in Dtype's order

}  // namespace

const char* model_name(ModelKind m) { return kModelNames[static_cast<int>(m)]; }

Result<ModelKind> parse_model(const std::string& text) { return parse_name<ModelKind>(text, kModelNames); }

const char* dtype_name(Dtype d) { return kDtypeNames[static_cast<int>(d)]; }

Result<Dtype> parse_dtype(const std::string& text) { return parse_name<Dtype>(text, kDtypeNames); }

std::string Device::name() const {
  if (!is_cuda()) return "cpu";
  return index < 0 ? "cuda" : "cuda:" + std::to_string(index);
}

Result<Device> parse_device(const std::string& text) {
  if (text == "cpu") return Device{};
  if (text == "cuda") return Device{Device::Kind::kCuda, -1};
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() < 9 &&
      text.find_first_not_of("0123456789", 5) == std::string::npos)
    return Device{Device::Kind::kCuda, std::atoi(text.c_str() + 5)};
  return Status::Error("must be cpu, cuda or cuda:N, got '" + printable(text) + "'");
}

}  // namespace saddlescope::trainer
