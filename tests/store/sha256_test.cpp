#include "saddlescope/store/sha256.h"

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace saddlescope::store {
namespace {

// FIPS 180-4 / NIST example vectors.
TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalEqualsOneShotAcrossBlockBoundaries) {
  std::string msg;
  for (int i = 0; i < 300; ++i) msg += static_cast<char>(i * 7);
  for (size_t cut : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 128u, 299u}) {
    Sha256 h;
    h.update(msg.data(), cut);
    h.update(msg.data() + cut, msg.size() - cut);
    EXPECT_EQ(h.hex_digest(), sha256_hex(msg)) << "cut at " << cut;
  }
}

TEST(Sha256, FileDigestAndMissingFile) {
  testing::TempDir dir;
  auto d = sha256_file(dir.write("abc.txt", "abc"));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(*d, sha256_hex("abc"));
  auto missing = sha256_file(dir.file("nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope: cannot open"), std::string::npos);
}

}  // namespace
}  // namespace saddlescope::store
