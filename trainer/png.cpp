#include "saddlescope/trainer/png.h"

#include "saddlescope/base/text.h"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace saddlescope::trainer {
namespace {

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The Paeth predictor of the PNG standard: whichever of left, up and upper-left is closest to a + b − c.
uint8_t paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return static_cast<uint8_t>(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

}  // namespace

Result<Image> decode_png(const std::string& path, const std::string& bytes) {
  static const unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 8 || std::memcmp(b, kSignature, 8) != 0) return Status::Error(path + ": not a PNG file");
  Image img;
  std::string idat;
  bool header = false, end = false;
  for (size_t i = 8; !end;) {
    if (bytes.size() - i < 12) return Status::Error(path + ": PNG truncated at byte " + std::to_string(i));
    const uint32_t n = be32(b + i);
    const std::string type(bytes.data() + i + 4, 4);
    const std::string shown = printable(type);  // a damaged file's type may hold any byte, '\n' too
    if (n > bytes.size() - i - 12) return Status::Error(path + ": PNG chunk " + shown + " runs past the end of the file");
    const unsigned char* data = b + i + 8;
    const uint32_t crc = static_cast<uint32_t>(crc32(crc32(0, nullptr, 0), b + i + 4, n + 4));
    if (crc != be32(data + n)) return Status::Error(path + ": PNG chunk " + shown + " fails its CRC (damaged file)");
    if (type == "IHDR") {
      if (n != 13) return Status::Error(path + ": PNG header of " + std::to_string(n) + " bytes, expected 13");
      img.width = be32(data);
      img.height = be32(data + 4);
      const int depth = data[8], colour = data[9], interlace = data[12];
      img.channels = colour == 0 ? 1 : colour == 2 ? 3 : colour == 6 ? 4 : 0;
      if (depth != 8 || img.channels == 0 || data[10] != 0 || data[11] != 0 || interlace != 0)
        return Status::Error(path + ": PNG of bit depth " + std::to_string(depth) + ", colour type " +
                             std::to_string(colour) + ", interlace " + std::to_string(interlace) +
                             "; expected 8-bit greyscale, RGB or RGBA, not interlaced");
      if (img.width < 1 || img.height < 1 || img.width > (1 << 24) || img.height > (1 << 24))
        return Status::Error(path + ": PNG of " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                             " pixels; expected 1 to 2^24 pixels a side");
      header = true;
    } else if (type == "IDAT") {
      if (!header) return Status::Error(path + ": PNG image data before its header");
      idat.append(reinterpret_cast<const char*>(data), n);
    } else if (type == "IEND") {
      end = true;
    } else if (type == "PLTE") {
      return Status::Error(path + ": PNG with a palette; expected 8-bit greyscale, RGB or RGBA");
    }
    i += 12 + size_t{n};
  }
  if (!header) return Status::Error(path + ": PNG without a header");

  const size_t stride = static_cast<size_t>(img.width * img.channels);
  const size_t expected = (stride + 1) * static_cast<size_t>(img.height);
  // Grown as the data inflate, never sized from the header alone: a header may declare gigapixels that
  // a few bytes of image data do not hold.
  std::string raw;
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return Status::Error(path + ": zlib could not start");
  z.next_in = reinterpret_cast<Bytef*>(idat.data());
  z.avail_in = static_cast<uInt>(idat.size());
  int rc = Z_OK;
  while (rc == Z_OK && raw.size() <= expected) {
    const size_t had = raw.size(), piece = std::min<size_t>(expected + 1 - had, size_t{1} << 24);
    raw.resize(had + piece);
    z.next_out = reinterpret_cast<Bytef*>(raw.data() + had);
    z.avail_out = static_cast<uInt>(piece);
    rc = inflate(&z, Z_NO_FLUSH);
    raw.resize(had + piece - z.avail_out);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // the data end before the stream does
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || raw.size() != expected)
    return Status::Error(path + ": PNG image data inflate to " + std::to_string(raw.size()) +
                         (rc == Z_STREAM_END ? "" : "+") + " bytes, expected " + std::to_string(expected) + " for " +
                         std::to_string(img.width) + "x" + std::to_string(img.height) + " pixels");

  img.pixels.resize(stride * static_cast<size_t>(img.height));
  const size_t bpp = static_cast<size_t>(img.channels);
  const std::vector<uint8_t> zeros(stride, 0);
  for (int64_t y = 0; y < img.height; ++y) {
    const auto* in = reinterpret_cast<const uint8_t*>(raw.data()) + static_cast<size_t>(y) * (stride + 1);
    uint8_t* row = img.pixels.data() + static_cast<size_t>(y) * stride;
    const uint8_t* up = y == 0 ? zeros.data() : row - stride;
    const int filter = in[0];
    ++in;
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= bpp ? row[x - bpp] : 0, c = x >= bpp ? up[x - bpp] : 0, u = up[x];
      switch (filter) {
        case 0: row[x] = in[x]; break;
        case 1: row[x] = static_cast<uint8_t>(in[x] + a); break;
        case 2: row[x] = static_cast<uint8_t>(in[x] + u); break;
        case 3: row[x] = static_cast<uint8_t>(in[x] + ((a + u) >> 1)); break;
        case 4: row[x] = static_cast<uint8_t>(in[x] + paeth(a, u, c)); break;
        default:
          return Status::Error(path + ": PNG row " + std::to_string(y) + " has filter " + std::to_string(filter) +
                               "; expected 0 to 4");
      }
    }
  }
  return img;
}

}  // namespace saddlescope::trainer
