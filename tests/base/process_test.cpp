#include "saddlescope/base/process.h"

#include <gtest/gtest.h>

namespace saddlescope {
namespace {

TEST(RunProcess, SuccessIsOk) { EXPECT_TRUE(run_process({"true"}).ok()); }

TEST(RunProcess, FailureNamesCommandStatusAndLastStderrLine) {
  Status s = run_process({"sh", "-c", "echo first >&2; echo boom >&2; exit 3"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exited with status 3"), std::string::npos) << s.message();
  // The last line of stderr, not the first (the command itself is quoted before it).
  EXPECT_EQ(s.message().substr(s.message().size() - 6), ": boom") << s.message();
}

TEST(RunProcess, MissingProgramIsAnError) {
  Status s = run_process({"saddlescope-no-such-program"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("saddlescope-no-such-program"), std::string::npos) << s.message();
}

TEST(RunProcess, RunsInTheGivenDirectory) {
  EXPECT_TRUE(run_process({"sh", "-c", "test \"$(pwd)\" = /"}, "/").ok());
}

}  // namespace
}  // namespace saddlescope
