#include "saddlescope/trainer/stop_signals.h"

#include <csignal>
#include <cstdio>

#include <signal.h>
#include <unistd.h>

namespace saddlescope::trainer {
namespace {

volatile std::sig_atomic_t g_requested = 0;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];

extern "C" void on_stop(int sig) {
  if (g_requested != 0 && sig == SIGINT) {
    // Second Ctrl-C: stop now, with the conventional status.
    ::signal(SIGINT, SIG_DFL);
    ::raise(SIGINT);
    return;
  }
  if (g_requested == 0) {
    g_requested = sig;
    const char msg[] = "\nsaddlescope: stopping at the next step boundary (Ctrl-C again to stop at once)\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
  }
}

}  // namespace

StopSignals::StopSignals() {
  g_requested = 0;
  struct sigaction sa = {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &g_previous[i]);
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
}

int StopSignals::requested() { return g_requested; }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
  }
  return "signal";
}

}  // namespace saddlescope::trainer
