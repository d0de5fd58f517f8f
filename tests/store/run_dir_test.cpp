#include "saddlescope/store/run_dir.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "saddlescope/store/files.h"
#include "temp_dir.h"

namespace saddlescope::store {
namespace {

nlohmann::json minimal_manifest(const std::string& id) {
  return {{"format", kManifestFormat}, {"format_version", kManifestVersion}, {"run_id", id},
          {"status", kRunning}};
}

TEST(RunId, ValidAndInvalid) {
  EXPECT_TRUE(validate_run_id("prednet-cuda-cudnn-s3-1a2b3c4d").ok());
  EXPECT_TRUE(validate_run_id("a.b_c").ok());
  for (const char* bad : {"", ".", "..", "a/b", "../x", "a b", "x\\y"}) {
    Status s = validate_run_id(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("run id"), std::string::npos);
  }
  EXPECT_FALSE(validate_run_id(std::string(129, 'a')).ok());
}

TEST(RunId, StableHashOfTheConfig) {
  std::string a = make_run_id("ae-cpu", R"({"lr":0.001})");
  EXPECT_EQ(a, make_run_id("ae-cpu", R"({"lr":0.001})"));
  EXPECT_NE(a, make_run_id("ae-cpu", R"({"lr":0.002})"));
  EXPECT_EQ(a.size(), std::string("ae-cpu-").size() + 8);
  EXPECT_TRUE(validate_run_id(a).ok());
}

TEST(RunDir, CreateRefusesAnExistingRunUnlessReplacing) {
  testing::TempDir dir;
  auto first = create_run_dir(dir.path(), "r1", false);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(std::filesystem::is_directory(*first));
  write_file_atomic(*first + "/old.txt", "x");
  auto again = create_run_dir(dir.path(), "r1", false);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("exists"), std::string::npos);
  EXPECT_NE(again.status().message().find("--force"), std::string::npos);
  auto replaced = create_run_dir(dir.path(), "r1", true);
  ASSERT_TRUE(replaced.ok());
  EXPECT_FALSE(std::filesystem::exists(*replaced + "/old.txt"));
  EXPECT_FALSE(create_run_dir(dir.path(), "../escape", false).ok());
}

TEST(Manifest, WritesAtomicallyAndReadsBack) {
  testing::TempDir dir;
  ASSERT_TRUE(write_manifest(dir.path(), minimal_manifest("r1")).ok());
  auto m = read_manifest(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)["run_id"], "r1");
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename(), "manifest.json") << "no temporary file left behind";
}

TEST(Manifest, RefusesForeignOrNewerFiles) {
  testing::TempDir dir;
  std::string path = dir.file("manifest.json");
  auto expect = [&](const std::string& text, const std::string& what) {
    write_file_atomic(path, text);
    auto m = read_manifest(dir.path());
    ASSERT_FALSE(m.ok()) << text;
    EXPECT_NE(m.status().message().find(path + ": " + what), std::string::npos) << m.status().message();
  };
  expect("{not json", "not a JSON object");
  expect("[1,2]", "not a JSON object");
  expect(R"({"format":"something-else","format_version":1})", "not a saddlescope run manifest");
  expect(R"({"format":"saddlescope.run","format_version":2})", "format_version is 2, this saddlescope reads only 1");
  expect(R"({"format":"saddlescope.run"})", "format_version is null");
  auto missing = read_manifest(dir.file("nowhere"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace saddlescope::store
