// A fixed-point accumulator wide enough to hold any sum of binary64 products exactly (Kulisch's long
// accumulator, in carry-save form): the fast exact path behind evaluate_sum/evaluate_dot.
//
// The value is sum_i digit[i] · 2^(32 i + kMinExponent). Digits are signed 64-bit words holding base-2^32
// digits plus headroom, so an addition touches 3-5 digits and never propagates a carry; carries are
// resolved every kAddsPerNormalize additions. Exactness needs no precision argument: the range runs from
// the lowest bit of a product of two binary64 subnormals (2^-2148) to 2^2204, above the largest binary64
// product (< 2^2048) times 2^63 terms.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "saddlescope/reference/dyadic.h"

namespace saddlescope::reference {

class Superaccumulator {
 public:
  static constexpr int kMinExponent = -2148;
  static constexpr int kDigits = 136;
  static constexpr int64_t kAddsPerNormalize = int64_t{1} << 28;  // each add puts < 2^33 on a digit

  Superaccumulator() { digit_.fill(0); }

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
  // Adds ±m · 2^exponent for m < 2^64 (3 digits touched).
  void add_narrow(uint64_t m, int exponent, bool negative) {
    const int pos = exponent - kMinExponent, k = pos >> 5, s = pos & 31;
    const unsigned __int128 v = static_cast<unsigned __int128>(m) << s;  // < 2^95
    const int64_t sign = negative ? -1 : 1;
    digit_[k] += sign * static_cast<int64_t>(static_cast<uint32_t>(v));
    digit_[k + 1] += sign * static_cast<int64_t>(static_cast<uint32_t>(v >> 32));
    digit_[k + 2] += sign * static_cast<int64_t>(static_cast<uint64_t>(v >> 64));
    count();
  }
  // Adds ±m · 2^exponent for m < 2^106 (5 digits touched).
  void add_wide(unsigned __int128 m, int exponent, bool negative) {
    const int pos = exponent - kMinExponent, k = pos >> 5, s = pos & 31;
    const unsigned __int128 lo = static_cast<unsigned __int128>(static_cast<uint64_t>(m)) << s;
    const unsigned __int128 hi = static_cast<unsigned __int128>(static_cast<uint64_t>(m >> 64)) << s;
    const int64_t sign = negative ? -1 : 1;
    digit_[k] += sign * static_cast<int64_t>(static_cast<uint32_t>(lo));
    digit_[k + 1] += sign * static_cast<int64_t>(static_cast<uint32_t>(lo >> 32));
    digit_[k + 2] += sign * (static_cast<int64_t>(static_cast<uint64_t>(lo >> 64)) +
                             static_cast<int64_t>(static_cast<uint32_t>(hi)));
    digit_[k + 3] += sign * static_cast<int64_t>(static_cast<uint32_t>(hi >> 32));
    digit_[k + 4] += sign * static_cast<int64_t>(static_cast<uint64_t>(hi >> 64));
    count();
  }
  void count() {
    if (++pending_ == kAddsPerNormalize) normalize();
  }
  // Resolves carries: digits 0..kDigits-2 end in [0, 2^32), the top digit carries the sign.
  void normalize();

  std::array<int64_t, kDigits> digit_;
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

  // sum of the terms, and sum of their magnitudes, exactly.
  Dyadic sum() const;
  Dyadic magnitude_sum() const;

 private:
  void add_narrow(const Superaccumulator::Parts& p) {
    part_[p.negative].add_narrow(p.mantissa, p.exponent, false);
  }
  Superaccumulator part_[2];  // [0]: positive terms, [1]: magnitudes of negative terms
};

}  // namespace saddlescope::reference
