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

#include "fault_hooks.h"

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
  // The first failure wins; the descriptor is closed and the temporary removed whatever failed.
  Status st = injected_fsync_failure(path);
  if (st.ok() && ::fsync(fd) != 0) st = Status::Error(path + ": flush failed: " + std::strerror(errno));
  if (::close(fd) != 0 && st.ok()) st = Status::Error(path + ": flush failed: " + std::strerror(errno));
  if (st.ok()) st = injected_rename_failure(path);
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0)
    st = Status::Error(path + ": rename failed: " + std::strerror(errno));
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
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

Status injected_fsync_failure(const std::string& path) {
  static std::atomic<long> seen{0};
  if (hook_due("SADDLESCOPE_FAIL_FSYNC", &seen, path))
    return Status::Error(path + ": flush failed: " + std::strerror(EIO) + " (injected by SADDLESCOPE_FAIL_FSYNC)");
  return Status::Ok();
}

Status injected_rename_failure(const std::string& path) {
  static std::atomic<long> seen{0};
  if (hook_due("SADDLESCOPE_FAIL_RENAME", &seen, path))
    return Status::Error(path + ": rename failed: " + std::strerror(EXDEV) + " (injected by SADDLESCOPE_FAIL_RENAME)");
  return Status::Ok();
}

namespace {

std::string why() { return std::strerror(errno); }

bool is_regular(const struct stat& st) { return S_ISREG(st.st_mode); }

}  // namespace

Result<InputFile> InputFile::open(const std::string& path, uint64_t max_bytes, std::string_view limit) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::Error(path + ": cannot open for reading: " + why());
  if (!is_regular(st)) return Status::Error(path + ": not a regular file");
  // O_NONBLOCK: should a FIFO replace the file between stat and open, open must not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Status::Error(path + ": cannot open for reading: " + why());
  InputFile file(fd, path, 0);
  if (::fstat(fd, &st) != 0) return Status::Error(path + ": cannot open for reading: " + why());
  if (!is_regular(st)) return Status::Error(path + ": not a regular file");
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  file.size_ = static_cast<uint64_t>(st.st_size);
  if (file.size_ > max_bytes)
    return Status::Error(path + ": " + std::to_string(file.size_) + " bytes, more than the " +
                         std::to_string(max_bytes) + " accepted" +
                         (limit.empty() ? std::string() : " (" + std::string(limit) + ")"));
  return file;
}

InputFile::InputFile(InputFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), size_(other.size_) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    size_ = other.size_;
  }
  return *this;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<size_t> InputFile::read_some(void* out, size_t n) {
  for (;;) {
    ssize_t got = ::read(fd_, out, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return Status::Error(path_ + ": read error: " + why());
  }
}

Status InputFile::read(void* out, size_t n) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    auto got = read_some(p, n);
    if (!got) return got.status();
    if (*got == 0) return Status::Error(path_ + ": changed while being read (it ended early)");
    p += *got;
    n -= *got;
  }
  return Status::Ok();
}

Status InputFile::expect_end() {
  char byte;
  auto got = read_some(&byte, 1);
  if (!got) return got.status();
  if (*got != 0) return Status::Error(path_ + ": changed while being read (it grew)");
  return Status::Ok();
}

Status check_regular_file(const std::string& path, uint64_t max_bytes, std::string_view limit) {
  auto file = InputFile::open(path, max_bytes, limit);
  return file ? Status::Ok() : file.status();
}

Result<std::string> read_file(const std::string& path, uint64_t max_bytes, std::string_view limit) {
  auto file = InputFile::open(path, max_bytes, limit);
  if (!file) return file.status();
  std::string bytes(file->size(), '\0');
  SADDLESCOPE_RETURN_IF_ERROR(file->read(bytes.data(), bytes.size()));
  SADDLESCOPE_RETURN_IF_ERROR(file->expect_end());
  return bytes;
}

}  // namespace saddlescope::store
