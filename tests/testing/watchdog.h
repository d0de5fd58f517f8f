// A test that could hang on a regression (reading a FIFO or /dev/zero) is killed by SIGALRM, which fails
// it, instead of hanging the suite: hold a Watchdog for the test's scope.
#pragma once

#include <unistd.h>

namespace saddlescope::testing {

class Watchdog {
 public:
  explicit Watchdog(unsigned seconds) { alarm(seconds); }
  ~Watchdog() { alarm(0); }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
};

}  // namespace saddlescope::testing
