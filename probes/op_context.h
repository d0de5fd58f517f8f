// Internal to the op observers (op_observer.cpp, op_trace.cpp): what both need to know about an op that
// LibTorch's RecordFunction reports — its own arguments and results, what it only moves, and its name.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>

#include "saddlescope/base/status.h"

namespace saddlescope::probes::internal {

// The name that opens a backward node's frame on the autograd engine's threads.
constexpr char kEngine[] = "autograd::engine::evaluate_function: ";

inline bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
// "aten::addmm" -> "addmm".
inline std::string short_name(const std::string& name) {
  return starts_with(name, "aten::") ? name.substr(6) : name;
}

// Ops that only create, copy or move values (no rounding).
bool moves_data(const std::string& aten_name);

// Parameter names by tensor: an op that reads a parameter (or a view of one) is named by it.
using ParameterNames = std::map<const void*, std::string>;  // TensorImpl* -> "encoder.fc1.weight"

// The TorchScript module that called the current op, as a parameter-name prefix ("layer1.0.conv1"):
// the interpreter's module hierarchy less TOP and SELF (a method of the same module), completed from
// `parameters` where TorchScript dropped an unrolled container's name ("0.attn" -> "blocks.0.attn").
// "" outside a module.
std::string module_path(const ParameterNames& parameters);

// The tensor a view was taken of (Linear's weight.t() -> weight), or the tensor itself.
inline const at::TensorBase& base_of(const at::Tensor& t) { return t.is_view() ? t._base() : t; }
// A tensor's sizes as ophash.csv writes them: "64x256", or "scalar" for a 0-d tensor.
inline std::string dims_text(const at::Tensor& t) {
  std::string s;
  for (int64_t d : t.sizes()) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s.empty() ? "scalar" : s;
}

// The module of the first parameter among `inputs` ("encoder.fc1" of encoder.fc1.weight), or "".
std::string parameter_module(const ParameterNames& parameters, const std::vector<c10::IValue>& inputs);

// The op's own arguments (results = false) or results: an op called from the TorchScript interpreter
// records the interpreter's whole stack, values below its arguments included; its schema says how many
// of the last values are its own.
std::vector<c10::IValue> own_values(const at::RecordFunction& fn, bool results);

// One observer of a kind at a time (an OpObserver::Impl, an OpTrace::Impl), registered while started
// as a global RecordFunction callback that sees every op's inputs and outputs, forward and backward.
template <class Impl>
class Registration {
 public:
  // The started observer of this kind, for its callbacks; nullptr when none is.
  static Impl* active() {
    std::lock_guard<std::mutex> lock(mutex_);
    return active_;
  }
  // REQUIRES: no observer of this kind started.
  void start(Impl* impl, at::RecordFunctionCallback::StartCallback on_start,
             at::RecordFunctionCallback::EndCallback on_end) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      SADDLESCOPE_CHECK(active_ == nullptr && handle_ == 0);
      active_ = impl;
    }
    handle_ = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end)
                                        .needsInputs(true)
                                        .needsOutputs(true)
                                        .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  }
  bool started() const { return handle_ != 0; }
  void stop(Impl* impl) {
    if (handle_ == 0) return;
    at::removeCallback(handle_);
    handle_ = 0;
    std::lock_guard<std::mutex> lock(mutex_);
    if (active_ == impl) active_ = nullptr;
  }

 private:
  at::CallbackHandle handle_ = 0;
  static inline std::mutex mutex_;
  static inline Impl* active_ = nullptr;  // guarded by mutex_
};

}  // namespace saddlescope::probes::internal
