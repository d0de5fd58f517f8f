#include "saddlescope/base/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

extern char** environ;

namespace saddlescope {

namespace {

// Runs argv; its stdout into `out` when not null (else discarded); its stdin `input` when not null
// (else the caller's).
Status run(const std::vector<std::string>& argv, const std::string& cwd, std::string* out, const std::string* input) {
  SADDLESCOPE_CHECK(!argv.empty());
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;

  char err_path[] = "/tmp/saddlescope-stderr-XXXXXX";
  int err_fd = mkstemp(err_path);
  if (err_fd < 0) return Status::Error("cannot create a temporary file to run '" + command + "'");

  char out_path[] = "/tmp/saddlescope-stdout-XXXXXX";
  int out_fd = out ? mkstemp(out_path) : -1;
  if (out && out_fd < 0) {
    close(err_fd);
    std::remove(err_path);
    return Status::Error("cannot create a temporary file to run '" + command + "'");
  }
  char in_path[] = "/tmp/saddlescope-stdin-XXXXXX";
  int in_fd = input ? mkstemp(in_path) : -1;
  if (input && (in_fd < 0 || write(in_fd, input->data(), input->size()) != static_cast<ssize_t>(input->size()))) {
    for (int fd : {err_fd, out_fd, in_fd})
      if (fd >= 0) close(fd);
    std::remove(err_path);
    if (out) std::remove(out_path);
    if (in_fd >= 0) std::remove(in_path);
    return Status::Error("cannot create a temporary file to run '" + command + "'");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (input) posix_spawn_file_actions_addopen(&actions, 0, in_path, O_RDONLY, 0);
  if (out) posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  else posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // posix_spawn has no portable chdir action before glibc 2.29's addchdir_np, which Debian 12 has.
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(err_fd);
  if (out) close(out_fd);
  if (input) close(in_fd);
  Status result;
  if (rc != 0) {
    result = Status::Error("cannot run '" + command + "': " + std::strerror(rc));
  } else {
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
      std::ifstream in(err_path);
      std::string line, last;
      while (std::getline(in, line))
        if (!line.empty()) last = line;
      std::string how = WIFEXITED(wstatus) ? "exited with status " + std::to_string(WEXITSTATUS(wstatus))
                                           : "was killed by signal " + std::to_string(WTERMSIG(wstatus));
      result = Status::Error("'" + command + "' " + how + (last.empty() ? "" : ": " + last));
    }
  }
  std::remove(err_path);
  if (input) std::remove(in_path);
  if (out) {
    std::ifstream in(out_path, std::ios::binary);
    *out = std::string(std::istreambuf_iterator<char>(in), {});
    std::remove(out_path);
  }
  return result;
}

}  // namespace

Status run_process(const std::vector<std::string>& argv, const std::string& cwd) {
  return run(argv, cwd, nullptr, nullptr);
}

Status run_process_with_input(const std::vector<std::string>& argv, const std::string& input) {
  return run(argv, "", nullptr, &input);
}

Result<std::string> run_process_output(const std::vector<std::string>& argv, const std::string& cwd) {
  std::string out;
  SADDLESCOPE_RETURN_IF_ERROR(run(argv, cwd, &out, nullptr));
  return out;
}

}  // namespace saddlescope
