// Running a helper program (npm, tar) without a shell: arguments are passed as they are.
#pragma once

#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope {

// Runs argv[0] (looked up in PATH) with `argv` in directory `cwd` ("" for the current one) and waits.
// Ok when it exits 0; otherwise an error with the command, its exit status and the last line it printed
// on stderr. Its stdout is discarded.
Status run_process(const std::vector<std::string>& argv, const std::string& cwd = "");
// The same, with `input` as its stdin (`nvidia-cuda-mps-control` takes its commands there).
Status run_process_with_input(const std::vector<std::string>& argv, const std::string& input);
// The same, returning what it printed on stdout.
Result<std::string> run_process_output(const std::vector<std::string>& argv, const std::string& cwd = "");

}  // namespace saddlescope
