// Running the saddlescope binary from end-to-end tests: exit status and everything it printed.
// REQUIRES: the test target defines SADDLESCOPE_BIN (tests/CMakeLists.txt does for app_tests).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace saddlescope::testing {

struct Output {
  int code;
  std::string text;  // stdout and stderr together
};

// `timeout_s` > 0: the command is killed after that many seconds (exit status 124), so that a test of
// an input that could make the tool hang (a FIFO, /dev/zero) fails instead of hanging.
inline Output run(const std::string& args, int timeout_s = 0) {
  std::string limit = timeout_s > 0 ? "timeout " + std::to_string(timeout_s) + " " : "";
  std::string cmd = limit + std::string(SADDLESCOPE_BIN) + " " + args + " 2>&1";
  std::FILE* p = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

// Expects `args` to fail with exit status 1 and exactly the line "saddlescope: <message>".
inline void expect_error(const std::string& args, const std::string& message, int timeout_s = 0) {
  Output o = run(args, timeout_s);
  EXPECT_EQ(o.code, 1) << args << "\n" << o.text;
  EXPECT_EQ(o.text, "saddlescope: " + message + "\n") << args;
}

}  // namespace saddlescope::testing
