// The IDX reader (trainer/idx.h) on arbitrary bytes: parse_idx, then label_images on what parses.
// Invariants: no crash, no allocation beyond the input's size, one-line errors, and an array that
// parses holds exactly as many bytes as its dimensions say.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "saddlescope/trainer/idx.h"

using namespace saddlescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto a = trainer::parse_idx("fuzz.idx", bytes);
  fuzz::check_one_line(a.status());
  if (!a.ok()) return 0;
  // The exact product (0 when a dimension is 0), saturated above the input's size.
  bool zero = false;
  unsigned __int128 numel = 1;
  for (int64_t d : a->dims) {
    SADDLESCOPE_CHECK(d >= 0);
    zero |= d == 0;
    if (numel <= size) numel *= static_cast<uint64_t>(d);
  }
  SADDLESCOPE_CHECK((zero ? 0 : numel) == a->data.size());
  // The same array as labels of itself (1 dimension) or as images with labels of its count.
  trainer::IdxArray labels;
  labels.dims = {a->dims[0]};
  labels.data.assign(a->dims[0] > 0 && a->dims[0] < 1 << 20 ? static_cast<size_t>(a->dims[0]) : 0, 3);
  if (labels.data.size() != static_cast<size_t>(a->dims[0])) labels.dims = {0};
  auto li = trainer::label_images(*a, labels, "images.idx", "labels.idx");
  fuzz::check_one_line(li.status());
  if (a->dims.size() == 1) fuzz::check_one_line(trainer::label_images(*a, *a, "a.idx", "b.idx").status());
  return 0;
}
