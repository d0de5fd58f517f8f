#include "stage_copy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "fault_hooks.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/sha256.h"

namespace saddlescope::store {
namespace {

std::string why() { return std::strerror(errno); }

// A file descriptor closed on destruction.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

Status write_all(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Status::Error(path + ": write failed: " + why());
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

// Copies `src` (opened without following a link) to the new file `dst`, checking that it is still the
// file that was scanned.
Status copy_checked(const std::string& src, const std::string& dst, const ScannedFile& f) {
  // O_NONBLOCK: a FIFO put in the file's place since the scan must not make open wait for a writer.
  Fd in(::open(src.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (in.fd < 0) return Status::Error(src + ": cannot open for reading: " + why());
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) return Status::Error(src + ": cannot stat: " + why());
  if (!S_ISREG(st.st_mode)) return Status::Error(src + ": not a regular file any more");
  ::fcntl(in.fd, F_SETFL, ::fcntl(in.fd, F_GETFL) & ~O_NONBLOCK);
  SADDLESCOPE_RETURN_IF_ERROR(injected_write_failure(dst));
  Fd out(::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (out.fd < 0) return Status::Error(dst + ": cannot create: " + why());
  Sha256 digest;
  std::vector<char> buf(1 << 20);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = ::read(in.fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Error(src + ": read error: " + why());
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (total > f.size) break;  // grew: refused below
    digest.update(buf.data(), static_cast<size_t>(n));
    SADDLESCOPE_RETURN_IF_ERROR(write_all(out.fd, buf.data(), static_cast<size_t>(n), dst));
  }
  if (total != f.size || digest.hex_digest() != f.sha256)
    return Status::Error(src + ": changed since it was checked; nothing was merged (merge again)");
  SADDLESCOPE_RETURN_IF_ERROR(injected_fsync_failure(dst));
  if (::fsync(out.fd) != 0) return Status::Error(dst + ": flush failed: " + why());
  return Status::Ok();
}

}  // namespace

Status sync_directory(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.fd < 0 || ::fsync(fd.fd) != 0) return Status::Error(dir + ": flush failed: " + why());
  return Status::Ok();
}

Status stage_run(const ScannedRun& run, const std::string& dest, const RunManifest& manifest) {
  SADDLESCOPE_RETURN_IF_ERROR(injected_write_failure(dest));
  if (::mkdir(dest.c_str(), 0755) != 0) return Status::Error(dest + ": cannot create: " + why());
  for (const auto& d : run.dirs)  // parents first
    if (::mkdir((dest + "/" + d).c_str(), 0755) != 0) return Status::Error(dest + "/" + d + ": cannot create: " + why());
  for (const auto& f : run.files) SADDLESCOPE_RETURN_IF_ERROR(copy_checked(run.path + "/" + f.rel, dest + "/" + f.rel, f));
  SADDLESCOPE_RETURN_IF_ERROR(write_manifest(dest, manifest));
  std::vector<std::string> dirs = run.dirs;
  std::reverse(dirs.begin(), dirs.end());  // children before parents
  for (const auto& d : dirs) SADDLESCOPE_RETURN_IF_ERROR(sync_directory(dest + "/" + d));
  return sync_directory(dest);
}

}  // namespace saddlescope::store
