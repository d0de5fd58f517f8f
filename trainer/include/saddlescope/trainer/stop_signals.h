// SIGINT, SIGTERM and SIGHUP while a run trains: the first asks the loop to stop at the next step
// boundary (it then writes a checkpoint and the status `interrupted`); a second SIGINT stops the
// process at once, as Ctrl-C does elsewhere. The previous handlers come back when this is destroyed.
#pragma once

namespace saddlescope::trainer {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal that asked to stop, or 0.
  static int requested();
};

// "SIGINT", "SIGTERM", "SIGHUP" (or "signal N").
const char* signal_name(int sig);

}  // namespace saddlescope::trainer
