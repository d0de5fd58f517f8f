// saddlescope reference dot|sum: the exact value of a dot product or sum of .npy vectors, its correct
// roundings, and how far a naive left-to-right evaluation and an --observed result are from it (JSON).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "saddlescope/reference/evaluation.h"
#include "saddlescope/store/npy.h"

namespace saddlescope::app {
namespace {

namespace ref = saddlescope::reference;
using Json = nlohmann::ordered_json;

// A 1-D float32/float64 array, as read; numel() elements.
Result<store::NpyArray> read_vector(const std::string& path) {
  auto a = store::read_npy(path);
  if (!a) return a.status();
  if (a->dtype == store::Dtype::kUInt8) {
    return Status::Error(path + ": expected a float32 or float64 array, found uint8");
  }
  if (a->shape.size() != 1) {
    std::string shape;
    for (int64_t d : a->shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    return Status::Error(fmt::format("{}: expected a 1-D array, found shape ({})", path, shape));
  }
  return a;
}

const char* dtype_name(store::Dtype d) { return d == store::Dtype::kFloat32 ? "float32" : "float64"; }

// C99 hex float, which Python's float.fromhex and C's strtod read back exactly; "nan", "inf", "-inf".
std::string hex(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

// NaN (a measurement that does not apply) becomes null, never a number posing as an error.
Json number(double x) { return std::isnan(x) ? Json(nullptr) : Json(x); }

const char* outcome_name(ref::Outcome o) {
  switch (o) {
    case ref::Outcome::kMeasured: return "measured";
    case ref::Outcome::kNonFiniteInput: return "nonfinite_input";
    case ref::Outcome::kNonFiniteObserved: return "nonfinite_observed";
  }
  return "?";
}

Json report(const ref::ErrorReport& r) {
  return Json{{"value", hex(r.observed)},          {"format", ref::format_name(r.format)},
              {"outcome", outcome_name(r.outcome)}, {"error", number(r.error)},
              {"ulp_error", number(r.ulp_error)},   {"rel_error", number(r.rel_error)},
              {"bound", number(r.bound)},           {"bound_ratio", number(r.bound_ratio)},
              {"within_bound", r.matches}};
}

// What a kernel computing left to right in T does: s = s + a_i·b_i (or + a_i), one rounding each.
template <class T>
T naive(const T* a, const T* b, int64_t n) {
  T s = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T term = b ? a[i] * b[i] : a[i];  // no FMA: C++17 without -ffp-contract=fast rounds the product
    s += term;
  }
  return s;
}

// --observed: a number (hex float recommended) that is exactly a value of `format`, or nan/inf.
Result<double> parse_observed(const std::string& text, store::Dtype format) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (text.empty() || end != begin + text.size()) {
    return Status::Error(fmt::format("--observed: expected a number such as 0x1.8p-3, got '{}'", text));
  }
  if (format == store::Dtype::kFloat32 && std::isfinite(v) && static_cast<double>(static_cast<float>(v)) != v) {
    return Status::Error(fmt::format(
        "--observed: {} is not exactly a float32 value (the inputs are float32); give the kernel's result, "
        "e.g. float(np.float32(x)).hex()", text));
  }
  return v;
}

template <class T>
Json evaluate(bool dot, const store::NpyArray& a, const store::NpyArray* b, const CLI::Option* observed_set,
              const std::string& observed_text, Status* error) {
  const int64_t n = a.numel();
  const T* pa = a.data<T>();
  const T* pb = b ? b->data<T>() : nullptr;
  auto e = dot ? ref::evaluate_dot(pa, n, pb, n) : ref::evaluate_sum(pa, n);
  if (!e) {
    *error = e.status();
    return {};
  }
  Json out{{"op", ref::op_name(e->op)},
           {"dtype", ref::format_name(e->input_format)},
           {"n", e->n},
           {"kind", ref::kind_name(e->kind)},
           {"first_nonfinite", e->first_nonfinite < 0 ? Json(nullptr) : Json(e->first_nonfinite)},
           {"exact", e->exact_decimal()},
           {"float32", hex(e->f32)},
           {"float64", hex(e->f64)},
           {"abs_sum", number(e->abs_sum)}};
  out["naive"] = report(ref::assess(*e, naive(pa, pb, n)));
  if (observed_set->count() > 0) {
    auto v = parse_observed(observed_text, a.dtype);
    if (!v) {
      *error = v.status();
      return {};
    }
    out["observed"] = sizeof(T) == 4 ? report(ref::assess(*e, static_cast<float>(*v)))
                                     : report(ref::assess(*e, *v));
  }
  return out;
}

}  // namespace

Command add_reference(CLI::App& app) {
  struct Args {
    std::string a, b, observed;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("reference", "Exact dot products and sums of .npy vectors (JSON)");
  sub->require_subcommand(1);
  CLI::App* dot = sub->add_subcommand("dot", "Exact sum of A[i]·B[i], its roundings and ULP errors");
  dot->add_option("A", args->a, "1-D float32 or float64 .npy")->required();
  dot->add_option("B", args->b, "1-D .npy of the same length and dtype")->required();
  CLI::App* sum = sub->add_subcommand("sum", "Exact sum of A[i], its roundings and ULP errors");
  sum->add_option("A", args->a, "1-D float32 or float64 .npy")->required();
  const char* observed_help =
      "A computed result to measure, exactly a value of the inputs' dtype; hex float (0x1.8p-3), nan, inf";
  CLI::Option* observed_dot = dot->add_option("--observed", args->observed, observed_help);
  CLI::Option* observed_sum = sum->add_option("--observed", args->observed, observed_help);
  sub->footer("Example: saddlescope reference dot a.npy b.npy --observed 0x1.5p+3");

  auto run = [args, dot, observed_dot, observed_sum]() -> int {
    const bool is_dot = dot->parsed();
    auto a = read_vector(args->a);
    if (!a) return fail(a.status().message());
    Result<store::NpyArray> b = store::NpyArray{};
    if (is_dot) {
      b = read_vector(args->b);
      if (!b) return fail(b.status().message());
      if (b->dtype != a->dtype) {
        return fail(fmt::format("reference dot: dtypes differ: {} is {}, {} is {}", args->a, dtype_name(a->dtype),
                                args->b, dtype_name(b->dtype)));
      }
      if (b->numel() != a->numel()) {
        return fail(fmt::format("reference dot: lengths differ: {} has {} elements, {} has {}", args->a,
                                a->numel(), args->b, b->numel()));
      }
    }
    const CLI::Option* observed = is_dot ? observed_dot : observed_sum;
    const store::NpyArray* pb = is_dot ? &*b : nullptr;
    Status error;
    Json out = a->dtype == store::Dtype::kFloat32
                   ? evaluate<float>(is_dot, *a, pb, observed, args->observed, &error)
                   : evaluate<double>(is_dot, *a, pb, observed, args->observed, &error);
    if (!error.ok()) return fail(error.message());
    out["inputs"] = is_dot ? Json{args->a, args->b} : Json{args->a};
    fmt::print("{}\n", out.dump(2));
    return 0;
  };
  return {sub, run};
}

}  // namespace saddlescope::app
