#include "saddlescope/store/csv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "saddlescope/store/files.h"
#include "temp_dir.h"

namespace saddlescope::store {
namespace {

TEST(FormatDouble, RoundTripsEveryBit) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i) {
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, 8);
    if (!std::isfinite(v)) continue;
    std::string s = format_double(v);
    double back = std::strtod(s.c_str(), nullptr);
    ASSERT_EQ(std::memcmp(&v, &back, 8), 0) << s;
  }
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(NAN), "nan");
  EXPECT_EQ(format_double(-INFINITY), "-inf");
}

TEST(CsvWriter, WritesHeaderAndRows) {
  testing::TempDir dir;
  std::string path = dir.file("m.csv");
  auto w = CsvWriter::create(path, {"step", "loss", "name"});
  ASSERT_TRUE(w.ok()) << w.status().message();
  w->add(int64_t{0}).add(0.5).add(std::string("a"));
  w->end_row();
  w->add(int64_t{1}).add(1e-05).add(std::string("b"));
  w->end_row();
  ASSERT_TRUE(w->flush().ok());
  EXPECT_EQ(*read_file(path), "step,loss,name\n0,0.5,a\n1,1e-05,b\n");
}

TEST(CsvWriter, UnwritablePathNamesIt) {
  auto w = CsvWriter::create("/nonexistent-dir/m.csv", {"a"});
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("/nonexistent-dir/m.csv: cannot create"), std::string::npos);
}

}  // namespace
}  // namespace saddlescope::store
