// SHA-256 (FIPS 180-4), used to check downloaded data, to verify the MNIST cache and record the digests
// of the data a run read, and to derive stable run ids. Computed by the system's libcrypto (OpenSSL's
// EVP interface), which uses the CPU's SHA extensions where there are any: docs/benchmarks.md has the
// throughput against the hand-written implementation it replaced.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "saddlescope/base/status.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of this header

namespace saddlescope::store {

// An incremental digest: update() any number of times, then hex_digest() once. Move-only.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&& other) noexcept;
  Sha256& operator=(Sha256&& other) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  // Returns the digest as 64 lowercase hex characters. The object must not be updated afterwards.
  std::string hex_digest();

 private:
  evp_md_ctx_st* ctx_;
};

std::string sha256_hex(std::string_view bytes);
// Digest of a file's contents; an error names the file when it cannot be read or is not a regular file
// (store/files.h).
Result<std::string> sha256_file(const std::string& path);

}  // namespace saddlescope::store
