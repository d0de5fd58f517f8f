#include "saddlescope/reference/superaccumulator.h"

#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::reference {

void Superaccumulator::add(const Dyadic& x, bool negate) {
  const bool negative = x.negative != negate;
  for (size_t i = 0; i < x.magnitude.size(); ++i) {
    const int exponent = x.exponent + 32 * static_cast<int>(i);
    SADDLESCOPE_CHECK(exponent >= kMinExponent && exponent - kMinExponent + 64 < 32 * kDigits);
    add_narrow(x.magnitude[i], exponent, negative);
  }
}

void Superaccumulator::add(const Superaccumulator& other, bool negate) {
  // Normalized digits are below 2^32 (the top one small), so digit-wise sums cannot overflow.
  Superaccumulator b = other;
  b.normalize();
  normalize();
  for (int i = 0; i < kDigits; ++i) digit_[i] += negate ? -b.digit_[i] : b.digit_[i];
  pending_ = 2;  // two normalized operands: within the headroom of one more normalize
}

Dyadic SplitAccumulator::sum() const {
  Superaccumulator s = part_[0];
  s.add(part_[1], /*negate=*/true);
  return s.value();
}

Dyadic SplitAccumulator::magnitude_sum() const {
  Superaccumulator s = part_[0];
  s.add(part_[1]);
  return s.value();
}

void Superaccumulator::normalize() {
  // Digits below the lowest non-zero one stay zero, and above the highest the carry dies out quickly:
  // short reductions touch a few digits of the 136, so only those are walked.
  int i = 0;
  while (i < kDigits - 1 && digit_[i] == 0) ++i;
  int last = kDigits - 1;
  while (last > i && digit_[last] == 0) --last;
  int64_t carry = 0;
  for (; i < kDigits - 1 && (i <= last || carry != 0); ++i) {
    const int64_t v = digit_[i] + carry;
    carry = v >> 32;  // arithmetic shift: floor division, so the kept digit is in [0, 2^32)
    digit_[i] = v & 0xffffffff;
  }
  digit_[i] += carry;  // i == kDigits - 1 only when the carry reached the top (a negative total)
  pending_ = 0;
}

Dyadic Superaccumulator::value() const {
  Superaccumulator a = *this;
  a.normalize();
  // The range leaves the top digit unused by any reachable value, so it is 0 or -1 (negative total).
  SADDLESCOPE_CHECK(a.digit_[kDigits - 1] == 0 || a.digit_[kDigits - 1] == -1);
  const bool negative = a.digit_[kDigits - 1] < 0;
  if (negative) {  // |value| = -value: negate every digit and resolve the borrows again
    for (int64_t& d : a.digit_) d = -d;
    a.normalize();
  }
  int lo = 0, hi = kDigits - 1;
  while (lo <= hi && a.digit_[lo] == 0) ++lo;
  while (hi >= lo && a.digit_[hi] == 0) --hi;
  std::vector<uint32_t> digits;
  for (int i = lo; i <= hi; ++i) digits.push_back(static_cast<uint32_t>(a.digit_[i]));
  return make_dyadic(negative, std::move(digits), kMinExponent + 32 * lo);
}

}  // namespace saddlescope::reference
