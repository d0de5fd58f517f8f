#include "saddlescope/reference/normalization.h"

#include <fmt/format.h>
#include <gmp.h>
#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "mpfr_dyadic.h"
#include "reduction.h"
#include "saddlescope/reference/elementwise.h"

namespace saddlescope::reference {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using internal::kExactBits;
constexpr mpfr_prec_t kDiffBits = 2200;    // x_j − m exactly, for any two binary64 values
constexpr double kDropBelow = -1386;       // e^d < 2^-1999: left out of the working sum (normalization.h)
constexpr int kDroppedBits = 1934;         // n·2^-1999 <= 2^-1935 relative for n < 2^64, less one bit
constexpr mpfr_exp_t kFlushBelow = -1990;  // |value| < 2^-1991: flushed to 0
constexpr mpfr_prec_t kGiveUpWithDropped = 4096;  // normalization.h: the rounding taken as is
constexpr double kLibrary = 2 * kLibraryUlps;    // L / u

Status check_row(const char* what, const void* p, int64_t n, int64_t i) {
  if (n < 1) return Status::Error(fmt::format("{}: needs at least one element, got n = {}", what, n));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span(what, "input", p, n));
  if (i < 0 || i >= n) return Status::Error(fmt::format("{}: i = {} is outside [0, {})", what, i, n));
  return Status::Ok();
}

// Sets exact (128 bits), f32 and f64 from y, whose 129-bit rounding (hence the 25- and 54-bit ones) is
// proven, or from a value rounded to odd at >= 130 bits; a magnitude below 2^kFlushBelow flushes to 0.
void set_from(Evaluation& e, const mpfr_t y) {
  if (mpfr_zero_p(y) || mpfr_get_exp(y) < kFlushBelow) {
    e.exact = Dyadic{};
    e.f32 = 0;
    e.f64 = 0;
    e.exact_is_exact = mpfr_zero_p(y);
    return;
  }
  internal::set_from_mpfr(e, y);
}

// A rational value q: rounded to odd at 256 bits (truncate, then set the last bit when inexact), from
// which every rounding to nearest at <= 254 bits, subnormals included, is the correct rounding of q.
void set_rational(Evaluation& e, const mpq_t q) {
  mpfr_t r;
  mpfr_init2(r, 256);
  const int inexact = mpfr_set_q(r, q, MPFR_RNDZ);
  if (inexact != 0 && mpfr_min_prec(r) < 256) {
    if (mpfr_sgn(r) > 0) {
      mpfr_nextabove(r);
    } else {
      mpfr_nextbelow(r);
    }
  }
  set_from(e, r);
  e.exact_is_exact = inexact == 0 && (mpfr_zero_p(r) || mpfr_min_prec(r) <= kExactBits);
  mpfr_clear(r);
}

// Ziv's loop: approximate(y) fills y (precision w) and returns err with |y − value| <= 2^(EXP(y) − err),
// or 0 when y cannot be judged at this w (zero). Stops when the 129-bit rounding is proven, or, with
// `dropped` terms, at kGiveUpWithDropped bits.
template <class Approximate>
void round_ziv(Evaluation& e, bool dropped, Approximate approximate) {
  mpfr_t y;
  for (mpfr_prec_t w = kExactBits + 32;; w *= 2) {
    SADDLESCOPE_CHECK(w <= (mpfr_prec_t{1} << 20));  // the values are irrational: Ziv's loop ends
    mpfr_init2(y, w);
    const mpfr_exp_t err = approximate(y);
    if (err > 0 && mpfr_can_round(y, err, MPFR_RNDN, MPFR_RNDZ, kExactBits + 1)) break;
    if (dropped && w >= kGiveUpWithDropped && !mpfr_zero_p(y)) break;
    mpfr_clear(y);
  }
  set_from(e, y);
  e.exact_is_exact = false;
  mpfr_clear(y);
}

// The softmax row with its non-finite entries classified; the allowance's sums in binary64.
struct Row {
  double m = -kInf;           // max over finite entries
  std::vector<double> kept;   // finite x_j with x_j − m >= kDropBelow
  bool dropped = false;       // a finite term left out
  int64_t equal_to_max = 0;   // kept entries equal to m
  double log_sum = 0;         // log S, binary64
  double spread = 0;          // Σ s_j |d_j|, binary64
};

template <class T>
Row classify(const T* x, int64_t n) {
  Row r;
  for (int64_t j = 0; j < n; ++j)
    if (std::isfinite(x[j])) r.m = std::max(r.m, static_cast<double>(x[j]));
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double v = x[j];
    if (!std::isfinite(v)) continue;
    if (v - r.m < kDropBelow) {
      r.dropped = true;
      continue;
    }
    r.kept.push_back(v);
    r.equal_to_max += v == r.m;
    sum += std::exp(v - r.m);
  }
  for (double v : r.kept) r.spread += std::exp(v - r.m) / sum * std::fabs(v - r.m);
  r.log_sum = std::log(sum);
  return r;
}

// S = Σ e^{x_j − m} over the kept terms at y's precision w, by mpfr_sum (one rounding of the exactly
// summed terms, each within 2^-w): |S_w − S| <= 2^(1−w)·S (1 + 2^-w).
void working_sum(const Row& r, mpfr_t sum) {
  const mpfr_prec_t w = mpfr_get_prec(sum);
  std::vector<__mpfr_struct> terms(r.kept.size());
  std::vector<mpfr_ptr> pointers;
  mpfr_t xm, m;
  mpfr_init2(xm, 53);
  mpfr_init2(m, 53);
  mpfr_set_d(m, r.m, MPFR_RNDN);
  mpfr_t d;
  mpfr_init2(d, kDiffBits);
  for (size_t j = 0; j < r.kept.size(); ++j) {
    mpfr_init2(&terms[j], w);
    mpfr_set_d(xm, r.kept[j], MPFR_RNDN);
    SADDLESCOPE_CHECK(mpfr_sub(d, xm, m, MPFR_RNDN) == 0);
    mpfr_exp(&terms[j], d, MPFR_RNDN);
    pointers.push_back(&terms[j]);
  }
  mpfr_sum(sum, pointers.data(), pointers.size(), MPFR_RNDN);
  for (auto& t : terms) mpfr_clear(&t);
  mpfr_clears(xm, m, d, static_cast<mpfr_ptr>(nullptr));
}

// The exact difference x − m (kDiffBits).
void difference(double x, double m, mpfr_t d) {
  mpfr_t a, b;
  mpfr_inits2(53, a, b, static_cast<mpfr_ptr>(nullptr));
  mpfr_set_d(a, x, MPFR_RNDN);
  mpfr_set_d(b, m, MPFR_RNDN);
  SADDLESCOPE_CHECK(mpfr_sub(d, a, b, MPFR_RNDN) == 0);
  mpfr_clears(a, b, static_cast<mpfr_ptr>(nullptr));
}

template <class T>
Result<Evaluation> softmax_impl(Op op, const T* x, int64_t n, int64_t i) {
  const bool log = op == Op::kLogSoftmax;
  SADDLESCOPE_RETURN_IF_ERROR(check_row(op_name(op), x, n, i));
  Evaluation e;
  e.op = op;
  e.input_format = internal::format_of<T>();
  e.n = e.rounding_steps = n;
  bool nan = false, finite = false;
  for (int64_t j = 0; j < n; ++j) {
    if (std::isfinite(x[j])) {
      finite = true;
      continue;
    }
    if (e.first_nonfinite < 0) e.first_nonfinite = j;
    nan |= !(x[j] < 0);  // NaN or +inf: x − m is NaN somewhere
  }
  if (nan || !finite) {
    internal::set_nonfinite(e, Kind::kNaN);
    return e;
  }
  const double xi = x[i];
  if (std::isinf(xi)) {  // −inf: a masked entry
    if (log) {
      internal::set_nonfinite(e, Kind::kMinusInf);
    } else {
      e.exact = Dyadic{};  // e^{−inf} = 0 exactly
      e.abs_sum = 0;
    }
    return e;
  }
  const Row r = classify(x, n);
  const double di = xi - r.m;
  const bool kept = di >= kDropBelow;
  if (!log && r.equal_to_max == static_cast<int64_t>(r.kept.size()) && kept) {
    // Every kept term is e^0: the value is 1/(c + left-out terms), whose roundings are those of 1/c.
    mpq_t q;
    mpq_init(q);
    mpq_set_ui(q, 1, static_cast<unsigned long>(r.equal_to_max));
    set_rational(e, q);
    mpq_clear(q);
    e.exact_is_exact &= !r.dropped;
  } else if (!log && !kept) {
    e.exact = Dyadic{};  // below e^-1386: flushed
    e.exact_is_exact = false;
  } else if (log && r.kept.size() == 1 && kept) {
    e.exact = Dyadic{};  // −log(1 + left-out terms): 0, or within 2^-1935 of it (flushed)
    e.exact_is_exact = !r.dropped;
  } else {
    mpfr_t d;
    mpfr_init2(d, kDiffBits);
    difference(xi, r.m, d);
    const int dropped_bits = r.dropped ? kDroppedBits : std::numeric_limits<int>::max() / 2;
    round_ziv(e, r.dropped, [&](mpfr_t y) -> mpfr_exp_t {
      const mpfr_prec_t w = mpfr_get_prec(y);
      mpfr_t sum;
      mpfr_init2(sum, w);
      working_sum(r, sum);
      mpfr_exp_t err = 0;
      if (!log) {
        // t_i, S's terms, S's rounding, the division: 4·2^-w (5 with second-order terms), and the
        // left-out terms' 2^-1935, relative to s <= 2·|y|.
        mpfr_exp(y, d, MPFR_RNDN);
        mpfr_div(y, y, sum, MPFR_RNDN);
        err = std::min<mpfr_exp_t>(w - 3, dropped_bits) - 2;
      } else {
        // |log S_w − log S| <= 2.1·2^-w + 2^-1934, log's rounding 2^-w|log S_w|, the subtraction 2^-w|y|:
        // all below 2^(E + 2 − w) + 2^-1934 with E = max(EXP(y), EXP(log S_w), 2).
        mpfr_log(sum, sum, MPFR_RNDN);
        mpfr_sub(y, d, sum, MPFR_RNDN);
        if (!mpfr_zero_p(y)) {
          mpfr_exp_t top = std::max<mpfr_exp_t>(mpfr_get_exp(y), 2);
          if (!mpfr_zero_p(sum)) top = std::max(top, mpfr_get_exp(sum));
          err = mpfr_get_exp(y) - std::max<mpfr_exp_t>(top + 2 - w, -dropped_bits) - 1;
        }
      }
      mpfr_clear(sum);
      return err;
    });
    mpfr_clear(d);
  }
  // The allowance (normalization.h), in binary64.
  if (!log) {
    const double s = e.f64;
    e.abs_sum = s;
    e.unit_coefficient = s == 0 ? 0 : s * (3 * std::fabs(di) + 3 * r.spread + 2 + 2 * kLibrary);
  } else {
    e.abs_sum = 1;
    e.unit_coefficient = std::fabs(di) + std::fabs(e.f64) + (1 + kLibrary) * r.log_sum + 3 * r.spread + kLibrary;
  }
  return e;
}

// The mean (or sum) over rows of −log_softmax(row)_{t_r} (normalization.h's cross entropy).
template <class T>
Result<Evaluation> cross_entropy_impl(const T* x, int64_t rows, int64_t classes, const int64_t* targets, bool mean) {
  constexpr const char* what = "cross_entropy";
  if (rows < 1 || classes < 1)
    return Status::Error(fmt::format("{}: needs at least one row and one class, got {} x {}", what, rows, classes));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span(what, "input", x, rows * classes));
  SADDLESCOPE_RETURN_IF_ERROR(internal::check_span(what, "targets", targets, rows));
  for (int64_t r = 0; r < rows; ++r)
    if (targets[r] < 0 || targets[r] >= classes)
      return Status::Error(fmt::format("{}: target {} of row {} is outside [0, {})", what, targets[r], r, classes));
  Evaluation e;
  e.op = Op::kCrossEntropy;
  e.input_format = internal::format_of<T>();
  e.n = rows * classes;
  e.rounding_steps = std::max(rows, classes);
  // Non-finite: NaN or +inf in a row, or a row of only −inf, makes it NaN; a −inf target term +inf.
  bool nan = false, inf = false;
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * classes;
    bool finite = false;
    for (int64_t j = 0; j < classes; ++j) {
      if (std::isfinite(row[j])) {
        finite = true;
        continue;
      }
      if (e.first_nonfinite < 0) e.first_nonfinite = r * classes + j;
      nan |= !(row[j] < 0);
    }
    nan |= !finite;
    inf |= std::isinf(row[targets[r]]);
  }
  if (nan || inf) {
    internal::set_nonfinite(e, nan ? Kind::kNaN : Kind::kPlusInf);
    return e;
  }
  const double scale = mean ? 1.0 / static_cast<double>(rows) : 1.0;
  std::vector<Row> rs;
  std::vector<double> d_target;
  bool dropped = false, zero = true;
  double unit = 0, magnitude = 0;  // Σ of the rows' log_softmax allowances (normalization.h) and Σ|ℓ_t|
  for (int64_t r = 0; r < rows; ++r) {
    rs.push_back(classify(x + r * classes, classes));
    const Row& row = rs.back();
    const double d = static_cast<double>(x[r * classes + targets[r]]) - row.m;
    d_target.push_back(d);
    dropped |= row.dropped;
    zero &= row.kept.size() == 1 && d == 0;  // −log 1: the target is the only kept term
    const double ell = std::fabs(d - row.log_sum);
    unit += std::fabs(d) + ell + (1 + kLibrary) * row.log_sum + 3 * row.spread + kLibrary;
    magnitude += ell;
  }
  if (zero) {
    e.exact = Dyadic{};  // 0, or within 2^-1935 of it when terms were left out (flushed)
    e.exact_is_exact = !dropped;
  } else {
    // Each row's v_r = log S_r − d_t >= 0 is off by at most 2^(top_r + 2 − w) (the log_softmax case
    // above); the sum of the non-negative v̂_r and the division each round once, 2^(EXP − w) at most.
    // With M the largest such exponent (the rows' errors summed: + log2 rows unless divided by rows),
    // |y − value| <= 2^(M + 2 − w), and each left-out term adds under 2^-1934 per row.
    const int rows_bits = static_cast<int>(std::ceil(std::log2(static_cast<double>(rows))));
    const int dropped_bits = dropped ? kDroppedBits - rows_bits : std::numeric_limits<int>::max() / 2;
    round_ziv(e, dropped, [&](mpfr_t y) -> mpfr_exp_t {
      const mpfr_prec_t w = mpfr_get_prec(y);
      std::vector<__mpfr_struct> v(rs.size());
      std::vector<mpfr_ptr> terms;
      mpfr_exp_t top = std::numeric_limits<mpfr_exp_t>::min();
      mpfr_t sum, d;
      mpfr_init2(sum, w);
      mpfr_init2(d, kDiffBits);
      for (size_t r = 0; r < rs.size(); ++r) {
        mpfr_init2(&v[r], w);
        working_sum(rs[r], sum);
        mpfr_log(sum, sum, MPFR_RNDN);
        difference(static_cast<double>(x[static_cast<int64_t>(r) * classes + targets[r]]), rs[r].m, d);
        mpfr_sub(&v[r], sum, d, MPFR_RNDN);
        mpfr_exp_t t = 2;
        if (!mpfr_zero_p(&v[r])) t = std::max(t, mpfr_get_exp(&v[r]));
        if (!mpfr_zero_p(sum)) t = std::max(t, mpfr_get_exp(sum));
        top = std::max(top, t);
        terms.push_back(&v[r]);
      }
      mpfr_sum(y, terms.data(), terms.size(), MPFR_RNDN);
      mpfr_exp_t err = 0;
      if (!mpfr_zero_p(y)) {
        const mpfr_exp_t sum_exp = mpfr_get_exp(y);
        if (mean) mpfr_div_si(y, y, static_cast<long>(rows), MPFR_RNDN);
        const mpfr_exp_t m = std::max<mpfr_exp_t>({top + 2 + (mean ? 0 : rows_bits), sum_exp - (mean ? rows_bits - 1 : 0),
                                                   mpfr_get_exp(y)});
        err = mpfr_get_exp(y) - std::max<mpfr_exp_t>(m + 2 - w, -dropped_bits) - 1;
      }
      for (auto& t : v) mpfr_clear(&t);
      mpfr_clears(sum, d, static_cast<mpfr_ptr>(nullptr));
      return err;
    });
  }
  // The allowance (normalization.h), in binary64: the rows' log_softmax allowances and γ_C each, the
  // sum's γ_N·Σ|ℓ_t|, and the division's rounding; all scaled by 1/N for the mean.
  e.unit_coefficient = unit * scale + std::fabs(e.f64);
  e.abs_sum = (static_cast<double>(rows) + magnitude) * scale;
  return e;
}

// ±digits·2^exponent as a GMP rational.
void rational_of(const Dyadic& x, mpq_t q) {
  mpz_t z;
  mpz_init(z);
  internal::set_z(z, x);
  mpq_set_z(q, z);
  mpz_clear(z);
  if (x.exponent > 0) mpq_mul_2exp(q, q, static_cast<mp_bitcnt_t>(x.exponent));
  if (x.exponent < 0) mpq_div_2exp(q, q, static_cast<mp_bitcnt_t>(-x.exponent));
}

template <class T>
Result<Evaluation> normalization_impl(Op op, const T* x, int64_t n, int64_t i, const T* weight, const T* bias,
                                      double eps) {
  if (op != Op::kLayerNorm && op != Op::kBatchNorm) {
    return Status::Error(fmt::format("{} is not a normalisation (layer_norm, batch_norm)", op_name(op)));
  }
  SADDLESCOPE_RETURN_IF_ERROR(check_row(op_name(op), x, n, i));
  Evaluation e;
  e.op = op;
  e.input_format = internal::format_of<T>();
  e.n = n;
  e.rounding_steps = 2 * n + 3;
  for (int64_t j = 0; j < n && e.first_nonfinite < 0; ++j)
    if (!std::isfinite(x[j])) e.first_nonfinite = j;
  if (e.first_nonfinite >= 0 || !std::isfinite(eps)) {
    internal::set_nonfinite(e, Kind::kNaN);
    return e;
  }
  const double w = weight ? static_cast<double>(*weight) : 1.0, b = bias ? static_cast<double>(*bias) : 0.0;
  // Exact moments: P = Σx, Q = Σx² (dyadic), μ = P/n, v = σ² + eps = (nQ − P²)/n² + eps.
  const Evaluation p = internal::reduce<T>(Op::kSum, x, 1, nullptr, 0, n);
  const Evaluation q2 = internal::reduce<T>(Op::kDot, x, 1, x, 1, n);
  mpq_t mu, v, a, t;
  mpq_inits(mu, v, a, t, static_cast<mpq_ptr>(nullptr));
  rational_of(p.exact, mu);
  mpq_set_si(t, n, 1);
  mpq_div(mu, mu, t);                  // μ
  rational_of(q2.exact, v);
  mpq_div(v, v, t);                    // Q/n
  mpq_mul(t, mu, mu);
  mpq_sub(v, v, t);                    // σ² = Q/n − μ²
  const double sigma2 = mpq_get_d(v), mean = mpq_get_d(mu);
  mpq_set_d(t, eps);
  mpq_add(v, v, t);                    // v = σ² + eps
  mpq_set_d(a, static_cast<double>(x[i]));
  mpq_sub(a, a, mu);                   // x_i − μ
  const int sign_z = mpq_sgn(a);
  const bool nan = mpq_sgn(v) <= 0;
  auto done = [&] { mpq_clears(mu, v, a, t, static_cast<mpq_ptr>(nullptr)); };
  if (nan) {
    internal::set_nonfinite(e, Kind::kNaN);
    return done(), e;
  }
  if (!std::isfinite(w) || !std::isfinite(b)) {
    e.first_nonfinite = std::isfinite(w) ? n + 1 : n;
    const double y = sign_z * w + b;  // the IEEE outcome: only z's sign and zeroness matter
    internal::set_nonfinite(e, std::isnan(y) ? Kind::kNaN : y > 0 ? Kind::kPlusInf : Kind::kMinusInf);
    return done(), e;
  }
  const bool square = mpz_perfect_square_p(mpq_numref(v)) && mpz_perfect_square_p(mpq_denref(v));
  if (sign_z == 0 || w == 0 || square) {
    // Rational: y = (x_i − μ)·w/sqrt(v) + b.
    if (sign_z != 0 && w != 0) {
      mpz_sqrt(mpq_numref(t), mpq_numref(v));
      mpz_sqrt(mpq_denref(t), mpq_denref(v));
      mpq_canonicalize(t);
      mpq_div(a, a, t);
      mpq_set_d(t, w);
      mpq_mul(a, a, t);
    } else {
      mpq_set_ui(a, 0, 1);
    }
    mpq_set_d(t, b);
    mpq_add(a, a, t);
    set_rational(e, a);
  } else {
    mpq_set_d(t, w);
    mpq_mul(a, a, t);  // A = (x_i − μ)·w
    round_ziv(e, false, [&](mpfr_t y) -> mpfr_exp_t {
      // r = sqrt(v), q = A/r: A, v, the sqrt and the division each within 2^-w relative, so
      // |q − q_true| < 4·2^-w|q| (1 + O(2^-w)) <= 2^(EXP(q) + 3 − w); y = q + b rounds once more:
      // |y − value| <= 2^(max(EXP(y) − 1, EXP(q) + 3) + 1 − w).
      const mpfr_prec_t wp = mpfr_get_prec(y);
      mpfr_t r, qq;
      mpfr_inits2(wp, r, qq, static_cast<mpfr_ptr>(nullptr));
      mpfr_set_q(r, v, MPFR_RNDN);
      mpfr_sqrt(r, r, MPFR_RNDN);
      mpfr_set_q(qq, a, MPFR_RNDN);
      mpfr_div(qq, qq, r, MPFR_RNDN);
      mpfr_add_d(y, qq, b, MPFR_RNDN);
      mpfr_exp_t err = 0;
      if (!mpfr_zero_p(y))
        err = mpfr_get_exp(y) - (std::max(mpfr_get_exp(y) - 1, mpfr_get_exp(qq) + 3) + 1 - wp);
      mpfr_clears(r, qq, static_cast<mpfr_ptr>(nullptr));
      return err;
    });
  }
  // The allowance (normalization.h), in binary64.
  double m1 = 0;
  for (int64_t j = 0; j < n; ++j) m1 += std::fabs(static_cast<double>(x[j]));
  m1 /= static_cast<double>(n);
  const double vd = sigma2 + eps, r = 1 / std::sqrt(vd);
  const double sigma = std::sqrt(std::max(sigma2, 0.0));
  const double zw = std::fabs((static_cast<double>(x[i]) - mean) * r * w);
  e.abs_sum = r * std::fabs(w) * m1 + zw * (sigma2 + 2 * m1 * sigma) / (2 * vd);
  e.unit_coefficient = zw * (1 + kLibrary) + r * std::fabs(w) * (2 * std::fabs(static_cast<double>(x[i])) + 3 * std::fabs(mean)) +
                       2 * zw + std::fabs(b) + std::fabs(e.f64);
  return done(), e;
}

}  // namespace

bool is_normalization(Op op) {
  return op == Op::kSoftmax || op == Op::kLogSoftmax || op == Op::kLayerNorm || op == Op::kBatchNorm ||
         op == Op::kCrossEntropy;
}

Result<Evaluation> evaluate_softmax(const float* row, int64_t n, int64_t i) {
  return softmax_impl(Op::kSoftmax, row, n, i);
}
Result<Evaluation> evaluate_softmax(const double* row, int64_t n, int64_t i) {
  return softmax_impl(Op::kSoftmax, row, n, i);
}
Result<Evaluation> evaluate_log_softmax(const float* row, int64_t n, int64_t i) {
  return softmax_impl(Op::kLogSoftmax, row, n, i);
}
Result<Evaluation> evaluate_log_softmax(const double* row, int64_t n, int64_t i) {
  return softmax_impl(Op::kLogSoftmax, row, n, i);
}
Result<Evaluation> evaluate_cross_entropy(const float* logits, int64_t rows, int64_t classes, const int64_t* targets,
                                          bool mean) {
  return cross_entropy_impl(logits, rows, classes, targets, mean);
}
Result<Evaluation> evaluate_cross_entropy(const double* logits, int64_t rows, int64_t classes, const int64_t* targets,
                                          bool mean) {
  return cross_entropy_impl(logits, rows, classes, targets, mean);
}
Result<Evaluation> evaluate_normalization(Op op, const float* group, int64_t n, int64_t i, const float* weight,
                                          const float* bias, double eps) {
  return normalization_impl(op, group, n, i, weight, bias, eps);
}
Result<Evaluation> evaluate_normalization(Op op, const double* group, int64_t n, int64_t i, const double* weight,
                                          const double* bias, double eps) {
  return normalization_impl(op, group, n, i, weight, bias, eps);
}

}  // namespace saddlescope::reference
