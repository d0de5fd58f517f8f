#include "saddlescope/trainer/idx.h"

#include <utility>

#include <fmt/format.h>

#include "saddlescope/base/memory.h"
#include "saddlescope/store/files.h"

namespace saddlescope::trainer {

Result<IdxArray> read_idx(const std::string& path) {
  auto file = store::read_file(path, memory_limit_bytes(), "this machine's memory: an IDX file is read whole");
  if (!file) return file.status();
  return parse_idx(path, *file);
}

Result<IdxArray> parse_idx(const std::string& path, const std::string& b) {
  auto bad = [&](const std::string& what) { return Status::Error(path + ": " + what); };
  auto byte = [&](size_t i) { return static_cast<uint8_t>(b[i]); };
  if (b.empty()) return bad("empty file, expected an IDX file");
  if (b.size() < 4) return bad("truncated IDX header (" + std::to_string(b.size()) + " bytes)");
  if (byte(0) != 0 || byte(1) != 0) return bad("not an IDX file (bad magic)");
  if (byte(2) != 0x08)
    return bad(fmt::format("IDX element type 0x{:02x} is not supported (expected 0x08, unsigned byte)",
                           byte(2)));
  size_t ndims = byte(3);
  if (ndims == 0) return bad("IDX header declares zero dimensions");
  size_t header = 4 + 4 * ndims;
  if (header > b.size())
    return bad("IDX header declares " + std::to_string(ndims) + " dimensions (" + std::to_string(header) +
               " header bytes) but the file has only " + std::to_string(b.size()) + " bytes");
  IdxArray a;
  uint64_t numel = 1;
  for (size_t d = 0; d < ndims; ++d) {
    size_t o = 4 + 4 * d;
    uint64_t n = uint64_t(byte(o)) << 24 | uint64_t(byte(o + 1)) << 16 | uint64_t(byte(o + 2)) << 8 | byte(o + 3);
    a.dims.push_back(static_cast<int64_t>(n));
    // At most 255 factors below 2^32 could overflow: saturate, and check against the file size below.
    if (__builtin_mul_overflow(numel, n, &numel)) numel = UINT64_MAX;
  }
  uint64_t have = b.size() - header;
  if (have < numel)
    return bad("truncated: the header's dimensions need more data bytes than the " + std::to_string(have) +
               " present");
  if (have > numel)
    return bad(std::to_string(have - numel) + " trailing bytes after the data the header describes");
  a.data.assign(b.begin() + static_cast<std::ptrdiff_t>(header), b.end());
  return a;
}

Result<LabeledImages> read_idx_images(const std::string& images_path, const std::string& labels_path) {
  auto images = read_idx(images_path);
  if (!images) return images.status();
  auto labels = read_idx(labels_path);
  if (!labels) return labels.status();
  return label_images(std::move(*images), std::move(*labels), images_path, labels_path);
}

Result<LabeledImages> label_images(IdxArray images, IdxArray labels, const std::string& images_path,
                                   const std::string& labels_path) {
  if (images.dims.size() != 3)
    return Status::Error(images_path + ": expected 3 dimensions (count, rows, cols), found " +
                         std::to_string(images.dims.size()));
  if (labels.dims.size() != 1)
    return Status::Error(labels_path + ": expected 1 dimension (count), found " +
                         std::to_string(labels.dims.size()));
  if (images.dims[0] != labels.dims[0])
    return Status::Error(labels_path + ": " + std::to_string(labels.dims[0]) + " labels but " +
                         images_path + " has " + std::to_string(images.dims[0]) + " images");
  if (images.dims[0] == 0) return Status::Error(images_path + ": holds no images");
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] > 9)
      return Status::Error(labels_path + ": label " + std::to_string(labels.data[i]) + " at index " +
                           std::to_string(i) + " is not a digit 0-9");
  return LabeledImages{std::move(images), std::move(labels)};
}

}  // namespace saddlescope::trainer
