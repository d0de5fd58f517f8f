#include "op_context.h"

#include <algorithm>
#include <set>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include "saddlescope/base/text.h"

namespace saddlescope::probes::internal {

bool moves_data(const std::string& aten_name) {
  static const std::set<std::string> ops = {
      "aten::zero_",      "aten::fill_",     "aten::copy_",       "aten::clone",       "aten::contiguous",
      "aten::to",         "aten::_to_copy",  "aten::detach",      "aten::detach_",     "aten::empty",
      "aten::empty_like", "aten::empty_strided", "aten::zeros",   "aten::zeros_like",  "aten::ones",
      "aten::ones_like",  "aten::full",      "aten::full_like",   "aten::cat",         "aten::stack",
      "aten::set_",       "aten::resize_",   "aten::lift_fresh",  "aten::index_select", "aten::embedding",
      "aten::scalar_tensor", "aten::reshape", "aten::view",       "aten::flatten",     "aten::narrow",
      "aten::slice",      "aten::select",    "aten::expand",      "aten::t",           "aten::transpose",
      "aten::permute",    "aten::unsqueeze", "aten::squeeze",     "aten::_reshape_alias", "aten::as_strided",
      "aten::alias",      "aten::unbind",    "aten::split",       "aten::chunk"};
  return ops.count(aten_name) > 0;
}

std::string module_path(const ParameterNames& parameters) {
  std::string path;
  for (const std::string& entry : torch::jit::currentModuleHierarchy()) {
    const std::string name = entry.substr(0, entry.find('('));
    if (name.empty() || name == "TOP" || name == "SELF") continue;
    path += (path.empty() ? "" : ".") + name;
  }
  if (path.empty()) return path;
  // The hierarchy leaves out a container whose loop TorchScript unrolls (a ModuleList iterated in
  // forward: blocks.0.attn is recorded as 0.attn). The one module prefix of the parameters' names that
  // ends in the path, at a name boundary, is its full name; none or several: the path as recorded.
  std::string found;
  for (const auto& [impl, name] : parameters) {
    for (size_t end = name.find('.'); end != std::string::npos; end = name.find('.', end + 1)) {
      const std::string prefix = name.substr(0, end);
      if (prefix != path && !ends_with(prefix, "." + path)) continue;
      if (!found.empty() && found != prefix) return path;
      found = prefix;
    }
  }
  return found.empty() ? path : found;
}

std::string parameter_module(const ParameterNames& parameters, const std::vector<c10::IValue>& inputs) {
  for (const auto& v : inputs) {
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    auto it = parameters.find(base_of(v.toTensor()).unsafeGetTensorImpl());
    if (it == parameters.end()) continue;
    const size_t dot = it->second.rfind('.');
    return dot == std::string::npos ? "" : it->second.substr(0, dot);  // the root module's own: unnamed
  }
  return "";
}

namespace {
template <class Values>
std::vector<c10::IValue> last_own(const at::RecordFunction& fn, const Values& all, bool results) {
  size_t n = all.size();
  if (auto name = fn.operator_name())
    if (auto op = c10::Dispatcher::singleton().findOp(*name))
      n = results ? op->schema().returns().size() : op->schema().arguments().size();
  n = std::min(n, static_cast<size_t>(all.size()));
  return std::vector<c10::IValue>(all.end() - static_cast<std::ptrdiff_t>(n), all.end());
}
}  // namespace

std::vector<c10::IValue> own_values(const at::RecordFunction& fn, bool results) {
  return results ? last_own(fn, fn.outputs(), true) : last_own(fn, fn.inputs(), false);
}

}  // namespace saddlescope::probes::internal
