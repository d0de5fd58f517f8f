#include "saddlescope/store/sha256.h"

#include <openssl/evp.h>

#include <utility>
#include <vector>

#include "saddlescope/store/files.h"

namespace saddlescope::store {

// Failures of EVP_* on SHA-256 (which OpenSSL always provides) mean a broken libcrypto or no memory:
// internal errors, not bad input.
Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  SADDLESCOPE_CHECK(ctx_ != nullptr);
  SADDLESCOPE_CHECK(EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) == 1);
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

Sha256::Sha256(Sha256&& other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  std::swap(ctx_, other.ctx_);
  return *this;
}

void Sha256::update(const void* data, size_t size) {
  SADDLESCOPE_CHECK(EVP_DigestUpdate(ctx_, data, size) == 1);
}

std::string Sha256::hex_digest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  SADDLESCOPE_CHECK(EVP_DigestFinal_ex(ctx_, digest, &length) == 1 && length == 32);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.hex_digest();
}

Result<std::string> sha256_file(const std::string& path) {
  auto file = InputFile::open(path);
  if (!file) return file.status();
  Sha256 h;
  std::vector<char> buf(1 << 20);
  for (;;) {
    auto got = file->read_some(buf.data(), buf.size());
    if (!got) return got.status();
    if (*got == 0) break;
    h.update(buf.data(), *got);
  }
  return h.hex_digest();
}

}  // namespace saddlescope::store
