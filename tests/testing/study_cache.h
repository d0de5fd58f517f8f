// A study that an end-to-end suite shares between its tests, made once per saddlescope binary.
//
// ctest runs every test in a process of its own, so a suite's SetUpTestSuite runs once per test: a study
// that takes half a minute to train would be trained again for each of a dozen tests. The first process
// that needs it makes it in a staging directory beside the binary and renames it into place, holding a
// lock that makes a concurrent test (ctest -j) wait rather than make it twice; every test then works on a
// copy of its own, timestamps kept (the report compares a manifest's time with the analysis's).
// REQUIRES: the test target defines SADDLESCOPE_BIN (tests/CMakeLists.txt does for app_tests).
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "saddlescope/base/remove_tree.h"

namespace saddlescope::testing {

// The made study's path: `make(dir)` writes it into `dir` and returns whether it succeeded. `recipe`
// names what make does (e.g. "report-v1", no path separator): change it when make changes. A study made by another build of
// the binary is not reused.
inline std::string cached_study(const std::string& recipe, const std::function<bool(const std::string&)>& make) {
  namespace fs = std::filesystem;
  struct stat st {};
  if (stat(SADDLESCOPE_BIN, &st) != 0) return "";
  const fs::path cache = fs::path(SADDLESCOPE_BIN).parent_path() / "test-cache";
  const std::string stamp = std::to_string(st.st_size) + "-" + std::to_string(st.st_mtim.tv_sec) + "." +
                            std::to_string(st.st_mtim.tv_nsec);
  const fs::path ready = cache / (recipe + "-" + stamp);
  if (fs::is_directory(ready / "made")) return ready / "made";
  std::error_code ec;
  fs::create_directories(cache, ec);
  const int lock = open((cache / (recipe + ".lock")).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) return "";
  struct Unlock {
    int fd;
    ~Unlock() { close(fd); }  // closing releases the lock
  } unlock{lock};
  if (fs::is_directory(ready / "made")) return ready / "made";  // made while this one waited
  const fs::path staging = cache / (".staging-" + recipe + "-" + std::to_string(getpid()));
  (void)remove_tree(staging.string());
  fs::create_directories(staging / "made", ec);
  if (!make((staging / "made").string())) {
    (void)remove_tree(staging.string());
    return "";
  }
  if (std::rename(staging.c_str(), ready.c_str()) != 0) (void)remove_tree(staging.string());
  for (const auto& e : fs::directory_iterator(cache, ec))  // studies of earlier builds
    if (e.path() != ready && e.path().filename().string().rfind(recipe + "-", 0) == 0) (void)remove_tree(e.path().string());
  return fs::is_directory(ready / "made") ? (ready / "made").string() : "";
}

// Copies the directory tree `from` to `to` (which must not exist), each file keeping its modification time.
inline bool copy_tree(const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::copy(from, to, fs::copy_options::recursive, ec);
  if (ec) return false;
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path dst = fs::path(to) / fs::relative(it->path(), from);
    fs::last_write_time(dst, fs::last_write_time(it->path()), ec);
    if (ec) return false;
  }
  return !ec;
}

}  // namespace saddlescope::testing
