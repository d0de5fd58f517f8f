#include "saddlescope/reference/softmax_backward.h"

#include <fmt/format.h>
#include <gmp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "reduction.h"

namespace saddlescope::reference {
namespace {

constexpr const char* kName = "softmax_backward";

// An exact dyadic z·2^exponent held as a GMP integer.
struct Scaled {
  mpz_t z;
  int exponent = 0;
  Scaled() { mpz_init(z); }
  explicit Scaled(const Dyadic& x) : Scaled() {
    mpz_import(z, x.magnitude.size(), -1, sizeof(uint32_t), 0, 0, x.magnitude.data());
    if (x.negative) mpz_neg(z, z);
    exponent = x.exponent;
  }
  Scaled(const Scaled&) = delete;
  Scaled& operator=(const Scaled&) = delete;
  ~Scaled() { mpz_clear(z); }

  Dyadic dyadic() const {
    std::vector<uint32_t> digits((mpz_sizeinbase(z, 2) + 31) / 32 + 1, 0);
    size_t count = 0;
    mpz_export(digits.data(), &count, -1, sizeof(uint32_t), 0, 0, z);
    digits.resize(count);
    return make_dyadic(mpz_sgn(z) < 0, std::move(digits), exponent);
  }
};

// out = a − b, exactly (the smaller exponent kept).
void subtract(const Scaled& a, const Scaled& b, Scaled& out) {
  const int e = std::min(a.exponent, b.exponent);
  mpz_t x, y;
  mpz_inits(x, y, static_cast<mpz_ptr>(nullptr));
  mpz_mul_2exp(x, a.z, static_cast<mp_bitcnt_t>(a.exponent - e));
  mpz_mul_2exp(y, b.z, static_cast<mp_bitcnt_t>(b.exponent - e));
  mpz_sub(out.z, x, y);
  out.exponent = e;
  mpz_clears(x, y, static_cast<mpz_ptr>(nullptr));
}

template <class T>
Result<Evaluation> softmax_backward_impl(const T* g, const T* y, int64_t n, int64_t i) {
  if (n < 1) return Status::Error(fmt::format("{}: needs at least one element, got n = {}", kName, n));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span(kName, "grad_output", g, n));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span(kName, "output", y, n));
  if (i < 0 || i >= n) return Status::Error(fmt::format("{}: i = {} is outside [0, {})", kName, i, n));
  Evaluation e;
  e.op = Op::kSoftmaxBackward;
  e.input_format = internal::format_of<T>();
  e.n = n;
  e.rounding_steps = n + 2;
  const Evaluation d = internal::reduce<T>(Op::kDot, g, 1, y, 1, n);  // D = Σ g_j y_j, exactly
  if (d.kind != Kind::kFinite) {
    // g_i and y_i are among D's inputs, so D is non-finite whenever they are: the IEEE outcome.
    e.first_nonfinite = d.first_nonfinite;
    const double v = static_cast<double>(y[i]) * (static_cast<double>(g[i]) - d.f64);
    internal::set_nonfinite(e, std::isnan(v) ? Kind::kNaN : v > 0 ? Kind::kPlusInf : Kind::kMinusInf);
    return e;
  }
  const Scaled dot(d.exact), gi(to_dyadic(g[i])), yi(to_dyadic(y[i]));
  Scaled r;
  subtract(gi, dot, r);  // g_i − D
  mpz_mul(r.z, r.z, yi.z);
  r.exponent += yi.exponent;  // y_i · (g_i − D)
  e.exact = r.dyadic();
  internal::set_rounded(e);
  e.abs_sum = std::fabs(static_cast<double>(y[i])) * (std::fabs(static_cast<double>(g[i])) + d.abs_sum);
  return e;
}

}  // namespace

Result<Evaluation> evaluate_softmax_backward(const float* grad_output, const float* output, int64_t n, int64_t i) {
  return softmax_backward_impl(grad_output, output, n, i);
}
Result<Evaluation> evaluate_softmax_backward(const double* grad_output, const double* output, int64_t n,
                                             int64_t i) {
  return softmax_backward_impl(grad_output, output, n, i);
}

}  // namespace saddlescope::reference
