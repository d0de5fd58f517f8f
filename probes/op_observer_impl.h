// OpObserver's state, internal to probes/: the frames the callbacks keep, the samples an op's outputs
// give, and how each kind of op is sampled (op_observer_taps.cpp). op_observer.cpp registers the
// callbacks and evaluates the samples against the exact reference.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include "op_context.h"
#include "op_observer.h"
#include "saddlescope/reference/ops.h"

namespace saddlescope::probes::internal {

// The ops of reference/normalization.h: tapped only where outermost (cross_entropy_loss's log_softmax
// is not, and the loss stays listed whole rather than half measured).
inline bool is_row_op(const std::string& name) {
  return name == "aten::softmax" || name == "aten::_softmax" || name == "aten::log_softmax" ||
         name == "aten::_log_softmax" || name == "aten::layer_norm" || name == "aten::native_layer_norm" ||
         name == "aten::batch_norm" || name == "aten::native_batch_norm" || name == "aten::_softmax_backward_data" ||
         name == "aten::_log_softmax_backward_data";
}

inline at::Tensor tensor_of(const c10::IValue& v) { return v.isTensor() ? v.toTensor() : at::Tensor(); }

inline bool is_floating(const at::Tensor& t) {
  return t.defined() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble);
}

// A parameter, or a view of one.
inline bool is_weight(const at::Tensor& t) {
  if (!t.defined()) return false;
  const at::TensorBase& base = base_of(t);
  return base.is_leaf() && base.requires_grad();
}

inline std::vector<int64_t> squeezed(at::IntArrayRef s) {
  std::vector<int64_t> v;
  for (int64_t d : s)
    if (d != 1) v.push_back(d);
  return v;
}

struct Frame {
  std::string name;
  int64_t seq = -1;
  bool backward = false;  // an autograd node's frame (the engine's record or the node's own)
  std::string context;    // backward: the name of the forward op whose node runs
  bool tapped = false;    // evaluated: nothing below it is looked at
  bool covered = false;   // something evaluated ran within it
  bool outermost = false;
  std::vector<c10::IValue> inputs;
  std::string module;     // forward: the op's name less its kernel (a parameter's module, or the caller)
};

struct OpObserver::Impl {
  uint64_t seed;
  int64_t k, step;
  ParameterNames parameters;
  Registration<Impl> registration;

  // A forward op that created an autograd node: its name and its inputs' shapes and kinds.
  struct Forward {
    std::string name;
    std::vector<std::pair<std::vector<int64_t>, bool>> inputs;  // squeezed shape, is a weight
  };
  struct Sample {
    enum class Kind {
      kDot, kSum, kElementwise, kMse, kConv, kConvWgrad, kConvDgrad, kRow, kNorm, kSoftmaxBwd, kCrossEntropy, kNllGrad,
      kGeluBwd
    } kind;
    std::string op, kernel, phase, index;
    int64_t call = 0;
    reference::Op fn = reference::Op::kRelu;
    at::Tensor a, b, bias, observed;  // host copies
    reference::Conv2dGeometry g;
    int64_t oy = 0, ox = 0, ky = 0, kx = 0, batch = 0;  // kNllGrad: batch is the mean's row count
    at::Tensor targets;        // kCrossEntropy: the kept rows' targets (int64), `a` their logits
    int64_t classes = 0;       // kCrossEntropy
    bool mean = true;          // kCrossEntropy: reduction 'mean' (else 'sum')
    int64_t i = 0;    // kRow, kNorm, kSoftmaxBwd: the element's position in its row / group `a`
    double eps = 0;   // kNorm; b and bias hold the element's weight and bias (or undefined)
  };

  std::mutex mutex;  // everything below: the callbacks run on every thread
  std::map<int64_t, Forward> forward;
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> calls;  // (op, phase, kernel)
  std::vector<Sample> samples;
  std::vector<UnevaluatedOp> unevaluated;
  std::string error;

  int64_t next_call(const std::string& op, const std::string& phase, const std::string& kernel) {
    std::lock_guard<std::mutex> lock(mutex);
    return calls[{op, phase, kernel}]++;
  }
  std::vector<int64_t> sample(const std::string& op, const std::string& phase, int64_t call, int64_t n) const {
    return sample_indices(op_seed(seed, step, op + "#" + std::to_string(call), phase.c_str()), std::min(k, n), n);
  }
  void add(Sample s) {
    std::lock_guard<std::mutex> lock(mutex);
    samples.push_back(std::move(s));
  }
  void count_unevaluated(const std::string& op, const std::string& phase, const std::string& kernel,
                         const std::string& dtype) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& u : unevaluated)
      if (u.op == op && u.phase == phase && u.kernel == kernel && u.dtype == dtype) {
        ++u.calls;
        return;
      }
    unevaluated.push_back({op, phase, kernel, dtype, 1});
  }
  Forward* find_forward(int64_t seq) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = forward.find(seq);
    return it == forward.end() ? nullptr : &it->second;
  }
  // The node `seq` named by the first op to end that made it (the innermost: convolution, not conv2d),
  // unless an evaluated op made it, whose name wins (softmax over the _softmax inside it).
  void remember(int64_t seq, const std::string& name, const std::vector<c10::IValue>& inputs, bool evaluated) {
    Forward f{name, {}};
    for (const auto& v : inputs)
      if (v.isTensor()) f.inputs.emplace_back(squeezed(v.toTensor().sizes()), is_weight(v.toTensor()));
    std::lock_guard<std::mutex> lock(mutex);
    if (evaluated) forward.insert_or_assign(seq, std::move(f));
    else forward.emplace(seq, std::move(f));
  }

  // The phase of a backward op's output: the gradient of exactly one of the forward op's inputs.
  static std::string phase_of(const Forward* f, const at::Tensor& out) {
    if (!f) return "bwd";
    const std::vector<int64_t> s = squeezed(out.sizes());
    const std::vector<int64_t> t(s.rbegin(), s.rend());  // a matrix's gradient may come transposed
    int matches = 0;
    bool weight = false;
    for (const auto& [shape, w] : f->inputs)
      if (shape == s || (s.size() == 2 && shape == t)) {
        ++matches;
        weight = w;
      }
    return matches == 1 ? (weight ? "wgrad" : "dgrad") : "bwd";
  }

  // Samples of tapped op `f`, named `op`; `fwd` is the forward op of the autograd node it runs in.
  void tap(const Frame& f, const std::vector<c10::IValue>& outputs, const std::string& op, bool backward,
           const Forward* fwd);
  // softmax, log_softmax, layer_norm, batch_norm (training): false when the arguments are not ones the
  // reference takes (batch norm in eval mode, a dim out of range).
  bool tap_row_op(const Frame& f, const at::Tensor& out, const std::string& op, const std::string& kernel);
  // cross_entropy_loss and nll_loss_backward (op_observer_taps.cpp); counted not evaluated otherwise.
  void tap_class_loss(const Frame& f, const at::Tensor& out, const std::string& op, bool backward);
};

}  // namespace saddlescope::probes::internal
