#include "saddlescope/store/npy.h"

#include <gtest/gtest.h>

#include <cstring>

#include "saddlescope/store/sha256.h"
#include "temp_dir.h"

namespace saddlescope::store {
namespace {

// A .npy file as NumPy writes it (version 1.0), with `dict` as the header and `data` after it.
std::string npy_bytes(const std::string& dict, const std::string& data, int version = 1) {
  std::string header = dict;
  size_t prefix = version == 1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  size_t n = header.size();
  for (size_t i = 0; i < (version == 1 ? 2u : 4u); ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.begin(), s.size());
  return s;
}

class NpyTest : public ::testing::Test {
 protected:
  // Expects reading `bytes` to fail with a message containing the file name and `what`.
  void expect_error(const std::string& bytes, const std::string& what) {
    std::string path = dir_.write("x.npy", bytes);
    auto r = read_npy(path);
    ASSERT_FALSE(r.ok()) << "expected an error containing: " << what;
    EXPECT_NE(r.status().message().find(path + ": "), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << "one line";
  }
  testing::TempDir dir_;
};

TEST_F(NpyTest, ReadsWhatNumPyWrites) {
  std::string path = dir_.write("a.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                                   floats({1, 2, 3, 4, 5, 6})));
  auto r = read_npy(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dtype, Dtype::kFloat32);
  EXPECT_EQ(r->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r->data<float>()[5], 6.0f);
}

TEST_F(NpyTest, ReadsVersion2HeadersAndDoubleQuotes) {
  std::string path = dir_.write("b.npy", npy_bytes("{\"descr\": \"|u1\", \"fortran_order\": False, \"shape\": (3,)}",
                                                   "\x01\x02\x03", 2));
  auto r = read_npy(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dtype, Dtype::kUInt8);
  EXPECT_EQ(r->numel(), 3);
}

TEST_F(NpyTest, RoundTripsEveryDtypeAndShape) {
  std::vector<double> d = {0.1, -2.5, 1e-300, 3.0};
  std::vector<float> f = {0.1f, -2.5f, 1e-30f, 3.0f};
  std::vector<uint8_t> u = {0, 1, 254, 255};
  struct Case { Dtype dt; const void* p; std::vector<int64_t> shape; };
  for (const Case& c : {Case{Dtype::kFloat64, d.data(), {4}}, Case{Dtype::kFloat32, f.data(), {2, 2}},
                        Case{Dtype::kUInt8, u.data(), {1, 2, 2}}, Case{Dtype::kFloat32, f.data(), {}},
                        Case{Dtype::kFloat64, d.data(), {0, 3}}}) {
    std::string path = dir_.file("rt.npy");
    ASSERT_TRUE(write_npy(path, c.dt, c.shape, c.p).ok());
    auto r = read_npy(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->dtype, c.dt);
    EXPECT_EQ(r->shape, c.shape);
    ASSERT_EQ(r->bytes.size(), static_cast<size_t>(r->numel() * dtype_size(c.dt)));
    // (memcmp of an empty array would pass its null data(): undefined, as UBSan says)
    if (!r->bytes.empty()) EXPECT_EQ(std::memcmp(r->bytes.data(), c.p, r->bytes.size()), 0);
  }
}

TEST_F(NpyTest, HeaderIsAlignedTo64Bytes) {
  std::string path = dir_.file("al.npy");
  float x = 1;
  ASSERT_TRUE(write_npy(path, Dtype::kFloat32, {1}, &x).ok());
  auto r = read_npy(path);
  ASSERT_TRUE(r.ok());
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  EXPECT_EQ((static_cast<int64_t>(in.tellg()) - 4) % 64, 0);
}

TEST_F(NpyTest, RefusesBadFiles) {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  expect_error("", "empty file");
  expect_error("PK\x03\x04 not numpy at all", "bad magic");
  expect_error(npy_bytes(ok_dict, floats({1, 2}), 4), "unsupported .npy format version 4");
  std::string big = npy_bytes(ok_dict, floats({1, 2}));
  big[8] = '\xff';
  big[9] = '\x7f';
  expect_error(big, "exceeds the file size");
  expect_error(npy_bytes("{'descr': '<f4', 'shape': (2,), }", floats({1, 2})), "header lacks");
  expect_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }", floats({1, 2})),
               "malformed header");
  expect_error(npy_bytes("{'descr': '<f4', 'fortran_order': maybe, 'shape': (2,), }", floats({1, 2})),
               "fortran_order must be True or False");
  expect_error(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", floats({1, 2})),
               "unsupported dtype '<i4'");
  expect_error(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", floats({1, 2})),
               "unsupported dtype '>f4'");
  expect_error(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1), }", floats({1, 2})),
               "Fortran-order");
  expect_error(npy_bytes(ok_dict, floats({1})), "truncated: shape needs 8 data bytes, file has 4");
  expect_error(npy_bytes(ok_dict, floats({1, 2, 3})), "4 trailing bytes");
}

TEST_F(NpyTest, HeaderCannotClaimMoreThanTheFileHolds) {
  // A shape of 10^15 float64 elements in a 100-byte file: refused from the file's size, before anything
  // is allocated for the data (an allocation of 8 PB would throw, or be killed, instead).
  expect_error(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000000), }", floats({1})),
               "truncated: shape needs 8000000000000000 data bytes, file has 4");
}

TEST_F(NpyTest, DigestIsOfTheBytesRead) {
  std::string path = dir_.write("d.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                                   floats({1, 2})));
  std::string digest;
  ASSERT_TRUE(read_npy(path, &digest).ok());
  EXPECT_EQ(digest, *sha256_file(path));
}

TEST_F(NpyTest, MissingFileIsAnError) {
  auto r = read_npy(dir_.file("absent.npy"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("absent.npy: cannot open"), std::string::npos);
}

}  // namespace
}  // namespace saddlescope::store
