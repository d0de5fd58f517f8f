// Helpers of the store merge tests: runs of other hosts, a run's metrics rewritten, and a directory
// tree's state (every path, type, size and modification time) to show that a merge wrote nothing.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "run_fixture.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/merge.h"

namespace saddlescope::testing {

// A completed run as make_manifest writes it, run on `host` (its fingerprint names the host).
inline store::RunManifest run_on(const std::string& id, const std::string& host, int64_t seed = 0) {
  store::RunManifest m = make_manifest(id, store::RunStatus::kCompleted, seed);
  m.fingerprint["host"] = host;
  return m;
}

// Rewrites <run_dir>/metrics.csv with `rows` (through TableWriter, as the trainer writes it).
inline void rewrite_metrics(const std::string& run_dir, const std::vector<store::MetricsRow>& rows) {
  auto w = store::TableWriter<store::MetricsRow>::create(run_dir, store::kMetrics);
  ASSERT_TRUE(w.ok()) << w.status().message();
  for (const auto& r : rows) w->append(r);
  ASSERT_TRUE(w->flush().ok());
}

// path -> "<size> <mtime ns>" of every file, "dir" of every directory below `dir` (without following
// links; a directory's own times change with its entries, which are listed), less the merge's lock
// file, which stays once made (as the catalogue's does); empty when `dir` does not exist.
inline std::map<std::string, std::string> tree_state(const std::string& dir) {
  std::map<std::string, std::string> state;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return state;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    lstat(it->path().c_str(), &st);
    if (it->path().filename() == ".merge.lock") continue;
    state[it->path().string()] = S_ISDIR(st.st_mode) ? "dir"
                                                     : std::to_string(st.st_size) + " " +
                                                           std::to_string(st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
  }
  return state;
}

// The names in <study>/runs/ that readers see (no dot names), sorted.
inline std::vector<std::string> run_names(const std::string& study) {
  std::vector<std::string> names;
  for (const auto& d : store::list_run_dirs(study)) names.push_back(std::filesystem::path(d).filename().string());
  return names;
}

}  // namespace saddlescope::testing
