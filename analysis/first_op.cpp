#include "saddlescope/analysis/first_op.h"

#include <fmt/format.h>

#include <map>

#include "saddlescope/base/text.h"

namespace saddlescope::analysis {
namespace {

using Rows = std::vector<const store::OpHashRow*>;

std::map<int64_t, Rows> by_step(const std::vector<store::OpHashRow>& rows) {
  std::map<int64_t, Rows> steps;
  for (const auto& r : rows) steps[r.step].push_back(&r);
  return steps;
}

void place(FirstOp* f, int64_t step, size_t i, const Rows& a, const char* kind) {
  f->found = true;
  f->step = step;
  f->index = static_cast<int64_t>(i);
  f->kind = kind;
  if (i < a.size()) f->op = a[i]->op, f->phase = a[i]->phase, f->shape = a[i]->shape, f->dtype = a[i]->dtype;
}

// Which result of `a` (against `b`, the same op) parted first.
void name_result(FirstOp* f, const store::OpHashRow& a, const store::OpHashRow& b) {
  const std::vector<std::string> oa = split(a.outputs, '+'), ob = split(b.outputs, '+'), shapes = split(a.shape, '+');
  if (oa.size() < 2 || oa.size() != ob.size()) return;
  static const char* kConvolution[] = {"the input gradient", "the weight gradient", "the bias gradient"};
  for (size_t k = 0; k < oa.size(); ++k) {
    if (oa[k] == ob[k]) continue;
    const std::string name = ends_with(a.op, "convolution_backward") && k < 3
                                 ? kConvolution[k]
                                 : fmt::format("result {} of {}", k + 1, oa.size());
    if (!f->result.empty()) {
      f->also.push_back(name);
      continue;
    }
    f->result = name;
    f->result_shape = k < shapes.size() ? shapes[k] : "";
  }
}

}  // namespace

Result<FirstOp> first_divergent_op(const std::vector<store::OpHashRow>& a, const std::vector<store::OpHashRow>& b) {
  const auto steps_a = by_step(a), steps_b = by_step(b);
  FirstOp f;
  for (const auto& [step, ra] : steps_a) {
    auto it = steps_b.find(step);
    if (it == steps_b.end()) continue;
    const Rows& rb = it->second;
    ++f.steps_compared;
    for (size_t i = 0; i < std::max(ra.size(), rb.size()); ++i) {
      if (i >= ra.size() || i >= rb.size() || ra[i]->op != rb[i]->op || ra[i]->phase != rb[i]->phase) {
        place(&f, step, i, ra, "ops differ");
        f.op_b = i < rb.size() ? rb[i]->op : "";
        return f;
      }
      if (ra[i]->outputs != rb[i]->outputs) {
        place(&f, step, i, ra,
              ra[i]->phase == "input"            ? "batch differs"
              : ra[i]->inputs == rb[i]->inputs ? "inputs equal"
                                                 : "inputs differ");
        name_result(&f, *ra[i], *rb[i]);
        return f;
      }
    }
  }
  if (f.steps_compared == 0)
    return Status::Error("no step recorded by both runs' ophash.csv (train both with --probe ophash at the same steps)");
  return f;
}

std::string describe(const FirstOp& f) {
  if (!f.found) return fmt::format("no divergent op in the {} steps both runs recorded", f.steps_compared);
  const std::string where = fmt::format("first divergent op: step {}, op {} of the step", f.step, f.index);
  if (f.kind == "batch differs")
    return fmt::format("first divergent op: step {}: the step's batch differs ({} {}), before any op: the data or "
                       "their pipeline",
                       f.step, f.shape, f.dtype);
  if (f.kind == "ops differ")
    return fmt::format("{}: ops differ: {} against {} (another code path)", where, f.op.empty() ? "no op" : f.op,
                       f.op_b.empty() ? "no op" : f.op_b);
  std::string text = fmt::format("{}, {} ({}, {} {}): {}, outputs differ", where, f.op, f.phase, f.shape, f.dtype, f.kind);
  if (!f.result.empty()) text += fmt::format(": {}, {}", f.result, f.result_shape);
  for (size_t i = 0; i < f.also.size(); ++i) text += (i ? ", " : " (also ") + f.also[i] + (i + 1 == f.also.size() ? ")" : "");
  return text;
}

}  // namespace saddlescope::analysis
