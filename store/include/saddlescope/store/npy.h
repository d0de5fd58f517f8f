// NumPy .npy arrays (format versions 1.0-3.0): the run store's array format and users' data input.
//
// Supported element types: uint8, float32, float64, little-endian, C order. Anything else is refused
// with a one-line error naming the file and what was found, never read approximately.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

enum class Dtype { kUInt8, kFloat32, kFloat64 };

// Size of one element in bytes, and NumPy's descr string ("|u1", "<f4", "<f8").
int dtype_size(Dtype d);
const char* dtype_descr(Dtype d);

struct NpyArray {
  Dtype dtype = Dtype::kFloat32;
  std::vector<int64_t> shape;  // empty for a 0-d array
  std::vector<uint8_t> bytes;  // element data, C order, little-endian

  int64_t numel() const;
  template <class T>
  const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }
};

// Reads and validates `path`. Errors: missing file, not a regular file (a directory, FIFO or device is
// refused before reading), a file larger than this machine's memory (store/files.h, base/memory.h: it
// is read whole), bad magic, unsupported version, malformed header, unsupported dtype, Fortran order,
// size mismatch (truncated or trailing bytes; checked against the file's size before the data are
// allocated, so a header cannot make the reader allocate more than the file holds).
// When `sha256` is not null it receives the SHA-256 of the file's bytes as read.
Result<NpyArray> read_npy(const std::string& path, std::string* sha256 = nullptr);

// Writes `numel(shape)` elements from `data` to `path` atomically (version 1.0, 64-byte aligned header).
Status write_npy(const std::string& path, Dtype dtype, const std::vector<int64_t>& shape,
                 const void* data);

}  // namespace saddlescope::store
