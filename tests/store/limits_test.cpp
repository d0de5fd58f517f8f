// Resource limits of the store's readers (issue 18): a file that claims or holds absurd sizes is a
// one-line error before anything of that size is allocated. The large files are sparse (made with
// truncate: a 1 GB line of zero bytes costs no disk), so the tests take milliseconds; under
// scripts/sanitize.sh an allocation of the claimed size would be an ASan report, not a slow pass.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "saddlescope/store/csv.h"
#include "saddlescope/store/json_input.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/schema.h"
#include "temp_dir.h"

namespace saddlescope::store {
namespace {

// <path> holding `prefix`, then zero bytes up to `size` bytes in all (a hole: nothing written).
void sparse_file(const std::string& path, const std::string& prefix, off_t size) {
  std::ofstream(path, std::ios::binary) << prefix;
  ASSERT_EQ(::truncate(path.c_str(), size), 0);
}

constexpr off_t kGiB = off_t{1} << 30;

TEST(Limits, NpyHeaderClaimingTenToTheTwelveElements) {
  testing::TempDir dir;
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }";
  std::string header = dict + std::string((64 - (10 + dict.size() + 1) % 64) % 64, ' ') + "\n";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  auto r = read_npy(dir.write("big.npy", bytes));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), dir.file("big.npy") + ": truncated: shape needs 4000000000000 data bytes, file has 0");
}

TEST(Limits, CsvLineOfOneGigabyteIsRefusedAtItsFirstMebibyte) {
  testing::TempDir dir;
  std::string header = "step,loss,batch_grad_norm,lr,wall_s\n";
  sparse_file(dir.file("metrics.csv"), header + "0,1,1,0.001,0\n", kGiB);
  auto rows = read_table(dir.path(), kMetrics);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().message(),
            dir.file("metrics.csv") + ":3: line longer than 1048576 bytes: not a CSV table of the run store");
  auto any = read_csv(dir.file("metrics.csv"));
  ASSERT_FALSE(any.ok());
  EXPECT_EQ(any.status().message(), rows.status().message());
  // The header line too.
  sparse_file(dir.file("h.csv"), "", kGiB);
  auto h = read_csv_text(dir.file("h.csv"));
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().message(), dir.file("h.csv") + ":1: line longer than 1048576 bytes: not a CSV table of the run store");
}

TEST(Limits, CsvLinesUpToTheLimitStillRead) {
  testing::TempDir dir;
  std::string field(kMaxCsvLineBytes - 2, 'x');
  auto t = read_csv_text(dir.write("a.csv", "a,b\n" + field + ",y\n"));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->rows.at(0).at(0), field);
  // A torn last line is still ignored when asked, and read otherwise.
  auto torn = read_csv_text(dir.write("t.csv", "a,b\n1,2\n3,"), /*ignore_torn_last_line=*/true);
  ASSERT_TRUE(torn.ok());
  EXPECT_EQ(torn->rows.size(), 1u);
  auto whole = read_csv_text(dir.file("t.csv"));
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->rows.size(), 2u);
  EXPECT_FALSE(read_csv_text(dir.write("e.csv", "")).ok());
  EXPECT_FALSE(read_csv_text(dir.write("n.csv", "\n1\n")).ok());
}

TEST(Limits, JsonNestedAMillionDeepIsRefusedBeforeParsing) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.file("run"));
  std::string deep(1000000, '[');
  dir.write("run/manifest.json", deep + std::string(1000000, ']'));
  auto m = read_manifest(dir.file("run"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), dir.file("run/manifest.json") + ": JSON nested deeper than 64 levels (at byte 64)");
  // Objects and brackets inside strings count as they should.
  EXPECT_TRUE(parse_json("{\"a\": \"[[[[{{{{\\\"\", \"b\": [[1]]}", "x").ok());
  std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(parse_json(at_limit, "x").ok());
  EXPECT_FALSE(parse_json("[" + at_limit + "]", "x").ok());
  EXPECT_EQ(parse_json("{", "x").status().message(), "x: not valid JSON");
}

TEST(Limits, ManifestLargerThanSixteenMebibytesIsRefusedUnread) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.file("run"));
  sparse_file(dir.file("run/manifest.json"), "{", kGiB);
  auto m = read_manifest(dir.file("run"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("manifest.json: 1073741824 bytes, more than the 16777216 accepted"),
            std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace saddlescope::store
