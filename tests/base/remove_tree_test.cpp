#include "saddlescope/base/remove_tree.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace saddlescope {
namespace {

TEST(RemoveTree, RemovesNestedTreesButNotLinkTargets) {
  fs::path root = fs::temp_directory_path() / ("saddlescope-rt-" + std::to_string(getpid()));
  fs::path outside = root.string() + "-outside";
  fs::create_directories(root / "a" / "b");
  fs::create_directories(outside);
  std::ofstream(root / "a" / "b" / "f.txt") << "x";
  std::ofstream(outside / "keep.txt") << "x";
  fs::create_directory_symlink(outside, root / "link");
  ASSERT_TRUE(remove_tree(root.string()).ok());
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::exists(outside / "keep.txt")) << "a symbolic link is removed, not followed";
  EXPECT_TRUE(remove_tree(outside.string()).ok());
  EXPECT_TRUE(remove_tree(root.string()).ok()) << "a missing path is ok";
}

TEST(RemoveTree, FailureNamesTheEntry) {
  // Entries of /proc cannot be removed, even by root (CI runs as root, so permissions would not do).
  Status s = remove_tree("/proc/self/fd");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("/proc/self/fd/", 0), 0u) << s.message();
  EXPECT_NE(s.message().find(": cannot remove: "), std::string::npos) << s.message();
}

}  // namespace
}  // namespace saddlescope
