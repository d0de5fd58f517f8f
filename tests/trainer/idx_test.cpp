#include "saddlescope/trainer/idx.h"

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace saddlescope::trainer {
namespace {

// An IDX file: magic 0,0,type,ndims, big-endian dims, then `data` (or `n_data` bytes of 7s).
std::string idx(std::vector<uint32_t> dims, size_t n_data, uint8_t type = 0x08) {
  std::string s = {'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int sh = 24; sh >= 0; sh -= 8) s += static_cast<char>((d >> sh) & 0xff);
  return s + std::string(n_data, '\x07');
}

class IdxTest : public ::testing::Test {
 protected:
  void expect_error(const std::string& bytes, const std::string& what) {
    std::string path = dir_.write("f-idx", bytes);
    auto r = read_idx(path);
    ASSERT_FALSE(r.ok()) << "expected: " << what;
    EXPECT_EQ(r.status().message().rfind(path + ": ", 0), 0u) << r.status().message();
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
  }
  testing::TempDir dir_;
};

TEST_F(IdxTest, ReadsImagesAndLabels) {
  std::string images = dir_.write("img", idx({3, 2, 2}, 12));
  std::string labels = dir_.write("lab", idx({3}, 3));
  auto r = read_idx_images(images, labels);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->images.dims, (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(r->images.data.size(), 12u);
  EXPECT_EQ(r->labels.data[2], 7);
}

// A header claiming 10^12 elements in a file of 16 bytes is refused from the file's size, before
// anything is allocated for the data (under scripts/sanitize.sh an allocation that size is an ASan report).
TEST_F(IdxTest, HeaderClaimingTenToTheTwelveElementsIsRefusedUnallocated) {
  expect_error(idx({1000000, 1000000}, 4), "truncated: the header's dimensions need more data bytes than the 4 present");
  expect_error(idx({1000000, 1000000, 1000000, 1000000}, 0), "truncated");
}

TEST_F(IdxTest, RefusesEveryMalformedFile) {
  expect_error("", "empty file");
  expect_error(std::string("\0\0", 2), "truncated IDX header");
  expect_error(idx({4}, 4).replace(0, 1, "\x01"), "bad magic");
  expect_error(idx({4}, 16, 0x0D), "element type 0x0d is not supported");
  expect_error(idx({}, 0), "zero dimensions");
  std::string oversized = idx({2}, 2);
  oversized[3] = 100;  // claims 100 dimensions: a 404-byte header in a 10-byte file
  expect_error(oversized, "declares 100 dimensions (404 header bytes) but the file has only 10 bytes");
  expect_error(idx({10, 28, 28}, 10 * 28 * 28 - 1), "truncated");
  expect_error(idx({2, 2}, 5), "1 trailing bytes");
  expect_error(idx({0xffffffff, 0xffffffff, 0xffffffff}, 4), "truncated");  // no overflow
}

TEST_F(IdxTest, MissingFileIsNamed) {
  auto r = read_idx(dir_.file("absent"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("absent: cannot open"), std::string::npos);
}

TEST_F(IdxTest, NonRegularFilesAreRefusedBeforeReading) {
  auto r = read_idx("/dev/zero");  // reading it would never end
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "/dev/zero: not a regular file");
  auto d = read_idx(dir_.path());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), dir_.path() + ": not a regular file");
}

TEST_F(IdxTest, ImagesAndLabelsMustAgree) {
  std::string images = dir_.write("img", idx({3, 2, 2}, 12));
  auto mismatch = read_idx_images(images, dir_.write("lab4", idx({4}, 4)));
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("4 labels but"), std::string::npos) << mismatch.status().message();
  EXPECT_NE(mismatch.status().message().find("has 3 images"), std::string::npos);

  auto flat = read_idx_images(dir_.write("flat", idx({12}, 12)), dir_.write("lab3", idx({3}, 3)));
  ASSERT_FALSE(flat.ok());
  EXPECT_NE(flat.status().message().find("expected 3 dimensions"), std::string::npos);

  std::string bad_label = idx({3}, 3);
  bad_label.back() = 10;
  auto labels = read_idx_images(images, dir_.write("lab", bad_label));
  ASSERT_FALSE(labels.ok());
  EXPECT_NE(labels.status().message().find("label 10 at index 2"), std::string::npos);

  auto empty = read_idx_images(dir_.write("e", idx({0, 2, 2}, 0)), dir_.write("el", idx({0}, 0)));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("holds no images"), std::string::npos);
}

}  // namespace
}  // namespace saddlescope::trainer
