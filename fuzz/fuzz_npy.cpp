// The .npy reader (store/npy.h) on arbitrary bytes, through a file as every caller gives it.
// Invariants: no crash, nothing allocated beyond the file's size, one-line errors; an array that reads
// holds numel × element size bytes, and writing it back (write_npy) reads back the same array.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "saddlescope/store/npy.h"

using namespace saddlescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_dir() + "/in.npy";
  fuzz::write_bytes(path, data, size);
  std::string digest;
  auto a = store::read_npy(path, &digest);
  fuzz::check_one_line(a.status());
  if (!a.ok()) return 0;
  SADDLESCOPE_CHECK(digest.size() == 64);
  SADDLESCOPE_CHECK(a->numel() >= 0);
  SADDLESCOPE_CHECK(static_cast<uint64_t>(a->numel()) * store::dtype_size(a->dtype) == a->bytes.size());
  const std::string out = fuzz::scratch_dir() + "/out.npy";
  SADDLESCOPE_CHECK(store::write_npy(out, a->dtype, a->shape, a->bytes.data()).ok());
  auto b = store::read_npy(out);
  SADDLESCOPE_CHECK(b.ok());
  SADDLESCOPE_CHECK(b->dtype == a->dtype && b->shape == a->shape && b->bytes == a->bytes);
  return 0;
}
