#include "saddlescope/base/progress.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

namespace saddlescope {
namespace {

TEST(FormatDuration, MinutesHoursAndUnknown) {
  EXPECT_EQ(format_duration(0), "0:00");
  EXPECT_EQ(format_duration(125), "2:05");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(NAN), "?");
  EXPECT_EQ(format_duration(-1), "?");
}

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
  return s;
}

TEST(Progress, PlainLinesWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Progress p("train", 10, "steps", f, /*plain_every_s=*/3600);
  p.update(5, "loss 1");  // not yet due: nothing printed
  p.finish(10, "loss 0.5");
  std::string out = read_all(f);
  std::fclose(f);
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;  // no bar redraws in a file
  EXPECT_NE(out.find("train 10/10 steps"), std::string::npos) << out;
  EXPECT_NE(out.find("loss 0.5\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("loss 1"), std::string::npos) << out;
}

}  // namespace
}  // namespace saddlescope
