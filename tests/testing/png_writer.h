// A PNG encoder for tests and fuzz seeds: 8-bit greyscale/RGB/RGBA rows, each row filtered with the
// filter the caller picks (0 none, 1 sub, 2 up, 3 average, 4 Paeth), deflated by zlib, chunks CRC'd.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace saddlescope::testing {

inline std::string png_chunk(const std::string& type, const std::string& data) {
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                       static_cast<char>(v)};
  };
  const std::string body = type + data;
  const uint32_t crc = static_cast<uint32_t>(
      crc32(crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
  return be32(static_cast<uint32_t>(data.size())) + body + be32(crc);
}

// `pixels` is height × width × channels; `filters[y]` the filter of row y (cycled when shorter).
inline std::string encode_png(const std::vector<uint8_t>& pixels, int width, int height, int channels,
                              const std::vector<int>& filters, int depth = 8, int colour = -1) {
  const int stride = width * channels;
  std::string raw;
  for (int y = 0; y < height; ++y) {
    const int f = filters[static_cast<size_t>(y) % filters.size()];
    raw.push_back(static_cast<char>(f));
    for (int x = 0; x < stride; ++x) {
      const int v = pixels[static_cast<size_t>(y * stride + x)];
      const int a = x >= channels ? pixels[static_cast<size_t>(y * stride + x - channels)] : 0;
      const int u = y > 0 ? pixels[static_cast<size_t>((y - 1) * stride + x)] : 0;
      const int c = x >= channels && y > 0 ? pixels[static_cast<size_t>((y - 1) * stride + x - channels)] : 0;
      const int p = a + u - c, pa = std::abs(p - a), pb = std::abs(p - u), pc = std::abs(p - c);
      const int predicted = f == 0 ? 0 : f == 1 ? a : f == 2 ? u : f == 3 ? (a + u) / 2
                                     : (pa <= pb && pa <= pc ? a : pb <= pc ? u : c);
      raw.push_back(static_cast<char>((v - predicted) & 255));
    }
  }
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string z(size, '\0');
  compress(reinterpret_cast<Bytef*>(z.data()), &size, reinterpret_cast<const Bytef*>(raw.data()),
           static_cast<uLong>(raw.size()));
  z.resize(size);
  if (colour < 0) colour = channels == 1 ? 0 : channels == 3 ? 2 : 6;
  std::string header = png_chunk("IHDR", std::string{0, 0, static_cast<char>(width >> 8), static_cast<char>(width),
                                                     0, 0, static_cast<char>(height >> 8), static_cast<char>(height),
                                                     static_cast<char>(depth), static_cast<char>(colour), 0, 0, 0});
  return std::string("\x89PNG\r\n\x1a\n", 8) + header + png_chunk("IDAT", z) + png_chunk("IEND", "");
}

}  // namespace saddlescope::testing
