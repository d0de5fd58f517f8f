// A fixed-point accumulator wide enough to hold any sum of binary64 products exactly (Kulisch's long
// accumulator, in carry-save form): the fast exact path behind evaluate_sum/evaluate_dot.
//
// The value is sum_i digit[i] · 2^(32 i + kMinExponent). Digits are signed 64-bit words holding base-2^32
// digits plus headroom, so an addition touches 3-5 digits and never propagates a carry; carries are
// resolved every kAddsPerNormalize additions. Exactness needs no precision argument: the range runs from
// the lowest bit of a product of two binary64 subnormals (2^-2148) to 2^2204, above the largest binary64
// product (< 2^2048) times 2^63 terms.
//
// Only the digits [lo_, hi_] that additions have touched are live (zeroed when first touched): a short
// reduction of similar-sized terms touches a handful of the 136 digits, and construction, copies,
// normalisation and value() cost in proportion to those, not to the whole range (bench/).
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "saddlescope/reference/dyadic.h"

namespace saddlescope::reference {

class Superaccumulator {
 public:
  static constexpr int kMinExponent = -2148;
  static constexpr int kDigits = 136;
  static constexpr int64_t kAddsPerNormalize = int64_t{1} << 28;  // each add puts < 2^33 on a digit

  Superaccumulator() = default;  // zero, with no live digits
  Superaccumulator(const Superaccumulator& other) { *this = other; }
  Superaccumulator& operator=(const Superaccumulator& other);

  // Adds x or the exact product a·b. REQUIRES: finite arguments (a NaN or Inf leaves a meaningless but
  // harmless value: callers detect non-finite inputs themselves and discard the sum).
  void add(double x) {
    const Parts p = split(x);
    add_narrow(p.mantissa, p.exponent, p.negative);
  }
  void add(float x) {
    const Parts p = split(x);
    add_narrow(p.mantissa, p.exponent, p.negative);
  }
  void add_product(double a, double b) {
    const Parts pa = split(a), pb = split(b);
    add_wide(static_cast<unsigned __int128>(pa.mantissa) * pb.mantissa, pa.exponent + pb.exponent,
             pa.negative != pb.negative);
  }
  void add_product(float a, float b) {  // 24 x 24 bits fit in 64
    const Parts pa = split(a), pb = split(b);
    add_narrow(pa.mantissa * pb.mantissa, pa.exponent + pb.exponent, pa.negative != pb.negative);
  }
  // Adds x (or -x when `negate`). REQUIRES: x within the accumulator's range (any value that a sum of
  // binary64 products can take, and any finite double).
  void add(const Dyadic& x, bool negate = false);

  // Adds another accumulator's value (or its negation).
  void add(const Superaccumulator& other, bool negate = false);

  // The exact value, canonical.
  Dyadic value() const;

  // Binary64 decomposition: |x| = mantissa · 2^exponent, mantissa < 2^53.
  struct Parts {
    uint64_t mantissa;
    int exponent;
    bool negative;
  };
  static Parts split(double x) {
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    const int biased = static_cast<int>((bits >> 52) & 0x7ff);
    const uint64_t frac = bits & ((uint64_t{1} << 52) - 1);
    return biased == 0 ? Parts{frac, -1074, (bits >> 63) != 0}
                       : Parts{frac | (uint64_t{1} << 52), biased - 1075, (bits >> 63) != 0};
  }
  static Parts split(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    const int biased = static_cast<int>((bits >> 23) & 0xff);
    const uint64_t frac = bits & ((uint32_t{1} << 23) - 1);
    return biased == 0 ? Parts{frac, -149, (bits >> 31) != 0}
                       : Parts{frac | (uint64_t{1} << 23), biased - 150, (bits >> 31) != 0};
  }

 private:
  friend class SplitAccumulator;
  // The exact value of a ± b (b may be null), canonical; neither operand is modified.
  static Dyadic combine(const Superaccumulator& a, const Superaccumulator* b, bool negate_b);

  // Makes digits [from, to] live, zeroing those that were not. Out of line: rare after the first adds.
  void touch(int from, int to) {
    if (from < lo_ || to > hi_) widen(from, to);
  }
  void widen(int from, int to);

  // Adds ±m · 2^exponent for m < 2^64 (3 digits touched).
  void add_narrow(uint64_t m, int exponent, bool negative) {
    put_narrow(m, exponent, negative);
    count();
  }
  // Adds ±m · 2^exponent for m < 2^106 (5 digits touched).
  void add_wide(unsigned __int128 m, int exponent, bool negative) {
    put_wide(m, exponent, negative);
    count();
  }
  // add_narrow / add_wide without the normalisation count: the caller adds to pending_ itself. Always
  // inlined: GCC otherwise calls them out of line from the bulk loop, a third of a short sum's time.
  __attribute__((always_inline)) void put_narrow(uint64_t m, int exponent, bool negative) {
    const int pos = exponent - kMinExponent, k = pos >> 5, s = pos & 31;
    touch(k, k + 2);
    // m · 2^s < 2^95 in three 32-bit pieces, from the two halves of m each shifted by s < 32: cheaper
    // than a 128-bit shift by a variable amount, the hottest instruction sequence of the fast path.
    const uint64_t low = (m & 0xffffffff) << s, high = (m >> 32) << s;  // < 2^64 each
    const int64_t sign = negative ? -1 : 1;
    digit_[k] += sign * static_cast<int64_t>(low & 0xffffffff);
    digit_[k + 1] += sign * static_cast<int64_t>((low >> 32) + (high & 0xffffffff));
    digit_[k + 2] += sign * static_cast<int64_t>(high >> 32);
  }
  __attribute__((always_inline)) void put_wide(unsigned __int128 m, int exponent, bool negative) {
    const int pos = exponent - kMinExponent, k = pos >> 5, s = pos & 31;
    touch(k, k + 4);
    // As put_narrow, from the four 32-bit quarters of m, each shifted by s < 32 (< 2^64).
    const uint64_t lo = static_cast<uint64_t>(m), hi = static_cast<uint64_t>(m >> 64);
    const uint64_t q0 = (lo & 0xffffffff) << s, q1 = (lo >> 32) << s;
    const uint64_t q2 = (hi & 0xffffffff) << s, q3 = (hi >> 32) << s;
    const int64_t sign = negative ? -1 : 1;
    digit_[k] += sign * static_cast<int64_t>(q0 & 0xffffffff);
    digit_[k + 1] += sign * static_cast<int64_t>((q0 >> 32) + (q1 & 0xffffffff));
    digit_[k + 2] += sign * static_cast<int64_t>((q1 >> 32) + (q2 & 0xffffffff));
    digit_[k + 3] += sign * static_cast<int64_t>((q2 >> 32) + (q3 & 0xffffffff));
    digit_[k + 4] += sign * static_cast<int64_t>(q3 >> 32);
  }
  void count() {
    if (++pending_ == kAddsPerNormalize) normalize();
  }
  // Resolves carries: every live digit ends in [0, 2^32) but the highest non-zero one, which carries the
  // sign, |d| < 2^32 (the live range grows upwards as needed).
  void normalize();

  std::array<int64_t, kDigits> digit_;  // only [lo_, hi_] is meaningful; the rest is never read
  int lo_ = kDigits, hi_ = -1;          // empty (value 0) when hi_ < lo_
  int64_t pending_ = 0;
};

// Positive and negative terms kept apart in two Superaccumulators: an addition needs no sign arithmetic
// (only a choice of accumulator), and both the sum (positive - negative) and the sum of magnitudes
// (positive + negative, for the a-priori bound) come out of the same pass. The kernel of evaluate_sum and
// evaluate_dot. Same preconditions as Superaccumulator.
class SplitAccumulator {
 public:
  void add(double x) { add_narrow(Superaccumulator::split(x)); }
  void add(float x) { add_narrow(Superaccumulator::split(x)); }
  void add_product(double a, double b) {
    const auto pa = Superaccumulator::split(a), pb = Superaccumulator::split(b);
    part_[pa.negative != pb.negative].add_wide(static_cast<unsigned __int128>(pa.mantissa) * pb.mantissa,
                                               pa.exponent + pb.exponent, false);
  }
  void add_product(float a, float b) {
    const auto pa = Superaccumulator::split(a), pb = Superaccumulator::split(b);
    part_[pa.negative != pb.negative].add_narrow(pa.mantissa * pb.mantissa, pa.exponent + pb.exponent,
                                                 false);
  }

  // Adds a[i·sa] · b[i·sb] for i < n, or a[i·sa] when b is null: the bulk form of add / add_product for
  // strided rows and columns, and the fast path's kernel. Returns false when some value is NaN or ±inf
  // (the accumulator's value is then meaningless: callers take the IEEE outcome instead). REQUIRES:
  // n >= 0.
  //
  // Why it is fast: one pass, no separate scan for NaN/Inf (the exponent fields are at hand); both parts
  // share one live range kept in registers; zero terms (common after a ReLU) go to a scratch word rather
  // than stretching the range down to 2^-2148; the normalisation count is kept per chunk.
  template <class T>
  bool add_all(const T* a, int64_t sa, const T* b, int64_t sb, int64_t n);

  // The sum of the terms, exactly, and the sum of their magnitudes rounded to nearest binary64 (the
  // a-priori bound's sum|a_i b_i|), from one pass over the digits.
  struct Totals {
    Dyadic sum;
    double abs_sum = 0;
  };
  Totals totals() const;

 private:
  void add_narrow(const Superaccumulator::Parts& p) {
    part_[p.negative].add_narrow(p.mantissa, p.exponent, false);
  }
  Superaccumulator part_[2];  // [0]: positive terms, [1]: magnitudes of negative terms
};

namespace internal {

// The bit layout of binary32 / binary64 for the bulk loop: |x| = mantissa · 2^(exponent - kBias), where
// exponent is the biased exponent field, raised to 1 for subnormals (and zero).
template <class T>
struct Layout;
template <>
struct Layout<double> {
  using Bits = uint64_t;
  static constexpr int kFraction = 52, kMaxField = 0x7ff, kBias = 1075;
};
template <>
struct Layout<float> {
  using Bits = uint32_t;
  static constexpr int kFraction = 23, kMaxField = 0xff, kBias = 150;
};

template <class T>
typename Layout<T>::Bits bits_of(T x) {
  typename Layout<T>::Bits b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

}  // namespace internal

template <class T>
bool SplitAccumulator::add_all(const T* a, int64_t sa, const T* b, int64_t sb, int64_t n) {
  using L = internal::Layout<T>;
  using Bits = typename L::Bits;
  constexpr Bits kFractionMask = (Bits{1} << L::kFraction) - 1;
  constexpr int kSignShift = 8 * sizeof(T) - 1;
  // A term's lowest bit sits at 2^(pos + kMinExponent), pos = the sum of its factors' exponent fields
  // (subnormals and zero counted as 1) + the offset (a sum's terms have one factor); a term covers
  // kWidth + 1 digits from digit pos / 32.
  constexpr int kProductOffset = -2 * L::kBias - Superaccumulator::kMinExponent;
  constexpr int kSumOffset = -L::kBias - Superaccumulator::kMinExponent;
  const int width = sizeof(T) == 8 && b != nullptr ? 4 : 2;
  // Both parts keep one live range [lo, hi], held here in registers: the range test is two compares.
  const int from = std::min(part_[0].lo_, part_[1].lo_), to = std::max(part_[0].hi_, part_[1].hi_);
  if (from <= to) {
    for (Superaccumulator& p : part_) p.touch(from, to);
  }
  int lo = part_[0].lo_, hi = part_[0].hi_;
  int64_t* digits[2] = {part_[0].digit_.data(), part_[1].digit_.data()};
  int64_t scratch[5];  // where zero terms go: they would otherwise stretch the range down to 2^-2148
  int field_max = 0;   // L::kMaxField: some value is NaN or ±inf
  auto accumulate = [&](auto unit, auto product, int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const Bits x = internal::bits_of(a[unit ? i : i * sa]);
      const int fx = static_cast<int>(x >> L::kFraction) & L::kMaxField;
      const uint64_t mx = (x & kFractionMask) | (static_cast<uint64_t>(fx != 0) << L::kFraction);
      uint64_t my = 1;
      int pos = fx + (fx == 0) + (product ? kProductOffset : kSumOffset);
      Bits sign = x;
      field_max = std::max(field_max, fx);
      if (product) {
        const Bits y = internal::bits_of(b[unit ? i : i * sb]);
        const int fy = static_cast<int>(y >> L::kFraction) & L::kMaxField;
        my = (y & kFractionMask) | (static_cast<uint64_t>(fy != 0) << L::kFraction);
        pos += fy + (fy == 0);
        sign ^= y;
        field_max = std::max(field_max, fy);
      }
      const int k = pos >> 5, s = pos & 31;
      const bool zero = mx == 0 || my == 0;
      if (!zero && (k < lo || k + width > hi)) {  // rare: the first terms, and outliers
        for (Superaccumulator& p : part_) p.touch(k, k + width);
        lo = part_[0].lo_;
        hi = part_[0].hi_;
      }
      int64_t* d = zero ? scratch : digits[(sign >> kSignShift) & 1] + k;
      if (sizeof(T) == 8 && product) {  // m · 2^s < 2^138: 5 digits, from two words and the bits above
        const unsigned __int128 m = static_cast<unsigned __int128>(mx) * my;  // < 2^106
        const uint64_t m_lo = static_cast<uint64_t>(m), m_hi = static_cast<uint64_t>(m >> 64);
        // m · 2^s as words v0, v1 and the bits above, in 64-bit shifts (a 128-bit shift also tests for
        // shifts of 64 or more). x >> 1 >> (63 - s) is x >> (64 - s), and 0 for s = 0.
        const unsigned shift = static_cast<unsigned>(s), back = 63 - shift;
        const uint64_t v0 = m_lo << shift, v1 = (m_hi << shift) | ((m_lo >> 1) >> back);
        const uint64_t above = (m_hi >> 1) >> back;
        d[0] += static_cast<int64_t>(v0 & 0xffffffff);
        d[1] += static_cast<int64_t>(v0 >> 32);
        d[2] += static_cast<int64_t>(v1 & 0xffffffff);
        d[3] += static_cast<int64_t>(v1 >> 32);
        d[4] += static_cast<int64_t>(above);
      } else {  // m < 2^53 (a binary64), < 2^48 (a binary32 product); m · 2^s < 2^85: 3 digits
        const uint64_t m = mx * my;
        const uint64_t low = (m & 0xffffffff) << s, high = (m >> 32) << s;  // < 2^64 each
        d[0] += static_cast<int64_t>(low & 0xffffffff);
        d[1] += static_cast<int64_t>((low >> 32) + (high & 0xffffffff));
        d[2] += static_cast<int64_t>(high >> 32);
      }
    }
  };
  const bool unit = sa == 1 && (b == nullptr || sb == 1);
  for (int64_t done = 0; done < n;) {
    int64_t room = Superaccumulator::kAddsPerNormalize - std::max(part_[0].pending_, part_[1].pending_);
    if (room <= 0) {
      part_[0].normalize();
      part_[1].normalize();
      for (Superaccumulator& p : part_) p.touch(std::min(part_[0].lo_, part_[1].lo_), std::max(part_[0].hi_, part_[1].hi_));
      lo = part_[0].lo_;
      hi = part_[0].hi_;
      room = Superaccumulator::kAddsPerNormalize;
    }
    const int64_t end = done + std::min(room, n - done);
    if (b == nullptr) {
      unit ? accumulate(std::true_type{}, std::false_type{}, done, end)
           : accumulate(std::false_type{}, std::false_type{}, done, end);
    } else {
      unit ? accumulate(std::true_type{}, std::true_type{}, done, end)
           : accumulate(std::false_type{}, std::true_type{}, done, end);
    }
    part_[0].pending_ += end - done;  // an upper bound on each part's count is all the headroom needs
    part_[1].pending_ += end - done;
    done = end;
  }
  return field_max != L::kMaxField;
}

}  // namespace saddlescope::reference
