#include "saddlescope/store/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace saddlescope::store {

Status write_file_atomic(const std::string& path, std::string_view content) {
  SADDLESCOPE_RETURN_IF_ERROR(injected_write_failure(path));
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error(path + ": cannot create: " + std::strerror(errno));
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status::Error(path + ": write failed: " + why);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status::Error(path + ": flush failed: " + why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status::Error(path + ": rename failed: " + why);
  }
  return Status::Ok();
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

namespace {

// Whether the test hook in `var` ("SUBSTRING" or "SUBSTRING:N") is due at this write to `path`: the
// N-th (default first) write to a path containing SUBSTRING, and every later one.
bool hook_due(const char* var, std::atomic<long>* seen, const std::string& path) {
  const char* spec = std::getenv(var);
  if (!spec || !*spec) return false;
  std::string s = spec;
  size_t colon = s.rfind(':');
  long nth = 1;
  if (colon != std::string::npos) {
    nth = std::strtol(s.c_str() + colon + 1, nullptr, 10);
    s.resize(colon);
  }
  return path.find(s) != std::string::npos && ++*seen >= nth;
}

}  // namespace

Status injected_write_failure(const std::string& path) {
  static std::atomic<long> failures{0}, kills{0};
  if (hook_due("SADDLESCOPE_KILL_AT_WRITE", &kills, path)) ::raise(SIGKILL);
  if (hook_due("SADDLESCOPE_FAIL_WRITE", &failures, path))
    return Status::Error(path + ": write failed: " + std::strerror(ENOSPC) + " (injected by SADDLESCOPE_FAIL_WRITE)");
  return Status::Ok();
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(path + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::Error(path + ": read error");
  return ss.str();
}

}  // namespace saddlescope::store
