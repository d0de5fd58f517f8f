#include "saddlescope/base/remove_tree.h"

#include <ftw.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace saddlescope {
namespace {

thread_local std::string failed_entry;
thread_local int failed_errno = 0;

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  if (std::remove(path) == 0) return 0;
  failed_entry = path;
  failed_errno = errno;
  return 1;  // stop the walk
}

}  // namespace

Status remove_tree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return Status::Error(path + ": cannot remove: " + std::strerror(errno));
  }
  // Depth first (children before their directory), physical (links removed, not followed).
  if (nftw(path.c_str(), remove_entry, 32, FTW_DEPTH | FTW_PHYS) != 0)
    return Status::Error(failed_entry + ": cannot remove: " + std::strerror(failed_errno));
  return Status::Ok();
}

}  // namespace saddlescope
