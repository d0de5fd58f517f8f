// The IDX format of the MNIST files (LeCun): big-endian header, then the elements.
//
//   bytes 0-1: 0, 0   byte 2: element type (0x08 = unsigned byte)   byte 3: number of dimensions d
//   then d big-endian uint32 sizes, then the elements in C order.
// Every reader here validates all of it: a file that is not exactly what its header says is an error
// naming the file, never a silently shorter dataset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // C order, numel(dims) elements
};

// Reads an unsigned-byte IDX file. Errors: unreadable or empty file, not a regular file (a directory,
// FIFO or device is refused before reading), a file larger than this machine's memory (it is read
// whole), and parse_idx's.
Result<IdxArray> read_idx(const std::string& path);

// The IDX array in `bytes`, the contents of the file `path` (named in errors). Errors: bad magic, an
// element type other than unsigned byte, zero dimensions, a header longer than the file, a data size
// that does not match the dimensions (truncated or trailing bytes).
Result<IdxArray> parse_idx(const std::string& path, const std::string& bytes);

// Images (N, rows, cols) and labels (N) from two IDX files. Also checks that the counts match, that N > 0
// and that labels are digits 0-9.
struct LabeledImages {
  IdxArray images;  // (N, rows, cols)
  IdxArray labels;  // (N)
};
Result<LabeledImages> read_idx_images(const std::string& images_path, const std::string& labels_path);
// The same checks on arrays already read from `images_path` and `labels_path` (named in errors).
Result<LabeledImages> label_images(IdxArray images, IdxArray labels, const std::string& images_path,
                                   const std::string& labels_path);

}  // namespace saddlescope::trainer
