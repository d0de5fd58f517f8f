#include "saddlescope/store/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "saddlescope/store/npy.h"
#include "saddlescope/store/sha256.h"
#include "temp_dir.h"
#include "watchdog.h"

namespace fs = std::filesystem;

namespace saddlescope::store {
namespace {

// The message of `r`'s error, or "ok".
template <class R>
std::string error_of(const R& r) {
  return r.ok() ? "ok" : r.status().message();
}

// A directory, a FIFO without a writer (reading it would block), /dev/zero (reading it would never end)
// and a symbolic link to /dev/zero: every reader refuses each before reading.
TEST(Files, EveryReaderRefusesWhatIsNotARegularFile) {
  testing::Watchdog watchdog(60);  // reading the FIFO or /dev/zero would hang
  testing::TempDir dir;
  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
  fs::create_directory(dir.file("dir"));
  fs::create_symlink("/dev/zero", dir.file("zero-link"));
  for (const std::string& path : {dir.file("fifo"), dir.file("dir"), std::string("/dev/zero"), dir.file("zero-link")}) {
    const std::string expected = path + ": not a regular file";
    EXPECT_EQ(check_regular_file(path).message(), expected);
    EXPECT_EQ(error_of(read_file(path)), expected);
    EXPECT_EQ(error_of(InputFile::open(path)), expected);
    EXPECT_EQ(error_of(read_npy(path)), expected);
    EXPECT_EQ(error_of(sha256_file(path)), expected);
  }
}

TEST(Files, SizeCeilingIsCheckedBeforeReading) {
  testing::TempDir dir;
  std::string path = dir.write("ten", "0123456789");
  EXPECT_EQ(check_regular_file(path, 9).message(), path + ": 10 bytes, more than the 9 accepted");
  EXPECT_EQ(error_of(read_file(path, 9, "a test's limit")),
            path + ": 10 bytes, more than the 9 accepted (a test's limit)");
  auto exact = read_file(path, 10);
  ASSERT_TRUE(exact.ok()) << exact.status().message();
  EXPECT_EQ(*exact, "0123456789");
}

TEST(Files, ReadsRegularFilesAndLinksToThem) {
  testing::TempDir dir;
  std::string path = dir.write("f", std::string("a\0b", 3));
  fs::create_symlink(path, dir.file("link"));
  for (const std::string& p : {path, dir.file("link")}) {
    auto bytes = read_file(p);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    EXPECT_EQ(*bytes, std::string("a\0b", 3));
    EXPECT_TRUE(check_regular_file(p).ok());
  }
  EXPECT_EQ(*read_file(dir.write("empty", "")), "");
}

TEST(Files, MissingFileSaysWhy) {
  testing::TempDir dir;
  EXPECT_EQ(error_of(read_file(dir.file("absent"))),
            dir.file("absent") + ": cannot open for reading: No such file or directory");
}

TEST(Files, InputFileReadsInPiecesAndNoticesTheEnd) {
  testing::TempDir dir;
  auto file = InputFile::open(dir.write("f", "abcdef"));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->size(), 6u);
  char buf[4] = {};
  ASSERT_TRUE(file->read(buf, 4).ok());
  EXPECT_EQ(std::string(buf, 4), "abcd");
  EXPECT_FALSE(file->expect_end().ok()) << "two bytes are left";
  EXPECT_EQ(file->read(buf, 4).message(), dir.file("f") + ": changed while being read (it ended early)");
}

}  // namespace
}  // namespace saddlescope::store
