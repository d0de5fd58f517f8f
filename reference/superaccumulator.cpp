#include "saddlescope/reference/superaccumulator.h"

#include <algorithm>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::reference {
namespace {

constexpr int64_t kMask = 0xffffffff;

// Resolves the carries of signed digits t[0..*len) (|t_i| < 2^62), appending digits as the carry needs.
// Returns the final carry: 0 for a non-negative value, -1 for a negative one (two's complement: the
// value is sum t_i 2^(32 i) - 2^(32 len)). REQUIRES: room for 3 more digits after *len.
int64_t resolve(int64_t* t, int* len) {
  int64_t carry = 0;
  for (int i = 0; i < *len; ++i) {
    const int64_t v = t[i] + carry;
    carry = v >> 32;  // arithmetic shift: floor division, so the kept digit is in [0, 2^32)
    t[i] = v & kMask;
  }
  while (carry != 0 && carry != -1) {
    t[(*len)++] = carry & kMask;
    carry >>= 32;
  }
  return carry;
}

}  // namespace

Superaccumulator& Superaccumulator::operator=(const Superaccumulator& other) {
  lo_ = other.lo_;
  hi_ = other.hi_;
  pending_ = other.pending_;
  if (hi_ >= lo_) std::copy(&other.digit_[lo_], &other.digit_[hi_] + 1, &digit_[lo_]);
  return *this;
}

void Superaccumulator::widen(int from, int to) {
  SADDLESCOPE_CHECK(from >= 0 && to < kDigits);
  // Grow by a margin: the terms of a reduction spread over a few digits around the first, and every
  // widening is a mispredicted branch in the hot loop. Zeroing a few more digits is cheaper.
  constexpr int kMargin = 3;
  if (hi_ < lo_) {
    lo_ = std::max(from - kMargin, 0);
    hi_ = std::min(to + kMargin, kDigits - 1);
    std::fill(&digit_[lo_], &digit_[hi_] + 1, 0);
    return;
  }
  if (from < lo_) {
    const int lo = std::max(from - kMargin, 0);
    std::fill(&digit_[lo], &digit_[lo_], 0);
    lo_ = lo;
  }
  if (to > hi_) {
    const int hi = std::min(to + kMargin, kDigits - 1);
    std::fill(&digit_[hi_] + 1, &digit_[hi] + 1, 0);
    hi_ = hi;
  }
}

void Superaccumulator::add(const Dyadic& x, bool negate) {
  const bool negative = x.negative != negate;
  for (size_t i = 0; i < x.magnitude.size(); ++i) {
    const int exponent = x.exponent + 32 * static_cast<int>(i);
    SADDLESCOPE_CHECK(exponent >= kMinExponent && exponent - kMinExponent + 64 < 32 * kDigits);
    add_narrow(x.magnitude[i], exponent, negative);
  }
}

void Superaccumulator::add(const Superaccumulator& other, bool negate) {
  if (other.hi_ < other.lo_) return;
  // Normalized digits are below 2^32 in magnitude, so digit-wise sums cannot overflow.
  Superaccumulator b = other;
  b.normalize();
  normalize();
  touch(b.lo_, b.hi_);
  for (int i = b.lo_; i <= b.hi_; ++i) digit_[i] += negate ? -b.digit_[i] : b.digit_[i];
  pending_ = 2;  // two normalized operands: within the headroom of one more normalize
}

void Superaccumulator::normalize() {
  pending_ = 0;
  if (hi_ < lo_) return;
  int64_t carry = 0;
  for (int i = lo_; i < hi_; ++i) {
    const int64_t v = digit_[i] + carry;
    carry = v >> 32;
    digit_[i] = v & kMask;
  }
  digit_[hi_] += carry;
  // The highest digit may hold up to 2^61: move its excess up into new digits until it is below 2^32.
  for (int top = hi_; digit_[top] >= (int64_t{1} << 32) || digit_[top] <= -(int64_t{1} << 32); ++top) {
    touch(lo_, top + 1);
    digit_[top + 1] += digit_[top] >> 32;
    digit_[top] &= kMask;
  }
}

Dyadic Superaccumulator::combine(const Superaccumulator& a, const Superaccumulator* b, bool negate_b) {
  int lo = a.lo_, hi = a.hi_;
  if (b && b->hi_ >= b->lo_) {
    lo = std::min(lo, b->lo_);
    hi = std::max(hi, b->hi_);
  }
  if (hi < lo) return Dyadic{};
  // Unnormalized digits stay below 2^61 in magnitude (kAddsPerNormalize), so a ± b fits an int64.
  int64_t t[kDigits + 4];
  int len = hi - lo + 1;
  for (int i = lo; i <= hi; ++i) {
    int64_t v = i >= a.lo_ && i <= a.hi_ ? a.digit_[i] : 0;
    if (b && i >= b->lo_ && i <= b->hi_) v += negate_b ? -b->digit_[i] : b->digit_[i];
    t[i - lo] = v;
  }
  const bool negative = resolve(t, &len) < 0;
  if (negative) {  // |value| = 2^(32 len) - sum t_i 2^(32 i): negate and resolve the borrows again
    for (int i = 0; i < len; ++i) t[i] = -t[i];
    t[len++] = 1;
    resolve(t, &len);
  }
  std::vector<uint32_t> digits(static_cast<size_t>(len));
  for (int i = 0; i < len; ++i) digits[static_cast<size_t>(i)] = static_cast<uint32_t>(t[i]);
  return make_dyadic(negative, std::move(digits), kMinExponent + 32 * lo);
}

SplitAccumulator::Totals SplitAccumulator::totals() const {
  const Superaccumulator &pos = part_[0], &neg = part_[1];
  const int lo = std::min(pos.lo_, neg.lo_), hi = std::max(pos.hi_, neg.hi_);
  if (hi < lo) return {Dyadic{}, 0.0};
  // One pass for both: pos - neg and pos + neg (digits below 2^61 in magnitude: no overflow).
  int64_t sum[Superaccumulator::kDigits + 4], magnitude[Superaccumulator::kDigits + 4];
  if (pos.lo_ == neg.lo_ && pos.hi_ == neg.hi_) {  // as add_all leaves them: a plain (vectorised) loop
    const int64_t *p = &pos.digit_[lo], *n = &neg.digit_[lo];
    for (int i = 0; i <= hi - lo; ++i) {
      sum[i] = p[i] - n[i];
      magnitude[i] = p[i] + n[i];
    }
  } else {
    for (int i = lo; i <= hi; ++i) {
      const int64_t p = i >= pos.lo_ && i <= pos.hi_ ? pos.digit_[i] : 0;
      const int64_t n = i >= neg.lo_ && i <= neg.hi_ ? neg.digit_[i] : 0;
      sum[i - lo] = p - n;
      magnitude[i - lo] = p + n;
    }
  }
  const int exponent = Superaccumulator::kMinExponent + 32 * lo;
  int len = hi - lo + 1;
  resolve(magnitude, &len);  // both parts are non-negative
  uint32_t digits[Superaccumulator::kDigits + 4];
  for (int i = 0; i < len; ++i) digits[i] = static_cast<uint32_t>(magnitude[i]);
  Totals t;
  t.abs_sum = round_to_double(false, digits, static_cast<size_t>(len), exponent);
  len = hi - lo + 1;
  const bool negative = resolve(sum, &len) < 0;
  if (negative) {  // |value| = 2^(32 len) - sum t_i 2^(32 i): negate and resolve the borrows again
    for (int i = 0; i < len; ++i) sum[i] = -sum[i];
    sum[len++] = 1;
    resolve(sum, &len);
  }
  // Canonical straight from the digits (no zero low digits, an odd magnitude): one pass, one allocation.
  int low = 0, high = len;
  while (low < high && sum[low] == 0) ++low;
  if (low == high) return t;
  while (sum[high - 1] == 0) --high;
  const int shift = __builtin_ctzll(static_cast<uint64_t>(sum[low]));
  const int count = high - low - ((static_cast<uint64_t>(sum[high - 1]) >> shift) == 0 ? 1 : 0);
  t.sum.negative = negative;
  t.sum.exponent = exponent + 32 * low + shift;
  t.sum.magnitude.resize(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const uint64_t cur = static_cast<uint64_t>(sum[low + i]);
    const uint64_t next = low + i + 1 < high ? static_cast<uint64_t>(sum[low + i + 1]) : 0;
    t.sum.magnitude[static_cast<size_t>(i)] = static_cast<uint32_t>((cur >> shift) | (next << (32 - shift)));
  }
  return t;
}

Dyadic Superaccumulator::value() const { return combine(*this, nullptr, false); }

}  // namespace saddlescope::reference
