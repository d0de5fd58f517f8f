// SHA-256 (FIPS 180-4), used to check downloaded data and to derive stable run ids.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  // Returns the digest as 64 lowercase hex characters. The object must not be updated afterwards.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes
};

std::string sha256_hex(std::string_view bytes);
// Digest of a file's contents; an error names the file when it cannot be read.
Result<std::string> sha256_file(const std::string& path);

}  // namespace saddlescope::store
