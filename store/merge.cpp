#include "saddlescope/store/merge.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "fault_hooks.h"
#include "file_lock.h"
#include "run_scan.h"
#include "saddlescope/base/memory.h"
#include "saddlescope/base/remove_tree.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/check.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/sha256.h"
#include "stage_copy.h"

namespace fs = std::filesystem;

namespace saddlescope::store {
namespace {

constexpr const char* kMergeLockFile = ".merge.lock";
constexpr const char* kStaging = ".merge.tmp";  // in <out>/runs/: a writer's temporary, skipped by readers

std::string runs_of(const std::string& study) { return study + "/runs"; }

// One merge into a study at a time: <out>/.merge.lock, held for the whole merge.
Result<FileLock> lock_merge(const std::string& out) {
  return FileLock::acquire(out + "/" + kMergeLockFile, 0,
                           out + ": another `saddlescope store merge` into it is under way; wait for it to end");
}

// A run to copy: the scan of its source and the id it is stored under.
struct Planned {
  ScannedRun run;
  std::string id;
  std::string source_study;  // absolute
};

// Decides, run by run, what becomes of each input's runs, against OUT's runs and the runs planned
// before them. Reads OUT; writes nothing.
class Planner {
 public:
  Planner(std::string out, bool out_exists, uint64_t max_file_bytes)
      : out_(std::move(out)), out_exists_(out_exists), max_(max_file_bytes) {}

  Status add_input(const std::string& study, MergeInputReport* report) {
    std::string runs = runs_of(study);
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(runs, ec)) names.push_back(e.path().filename().string());
    if (ec) return Status::Error(runs + ": cannot list: " + ec.message());
    std::sort(names.begin(), names.end());
    std::string source = fs::absolute(study).lexically_normal().string();
    while (source.size() > 1 && source.back() == '/') source.pop_back();
    for (const auto& name : names) {
      if (name[0] == '.') continue;  // run locks, writers' temporaries
      std::string dir = runs + "/" + name;
      struct stat st {};
      if (::lstat(dir.c_str(), &st) != 0) return Status::Error(shown(dir) + ": cannot stat: " + std::strerror(errno));
      if (S_ISLNK(st.st_mode))
        return Status::Error(shown(dir) + ": a symbolic link (merge neither copies nor follows links)");
      if (!S_ISDIR(st.st_mode)) return Status::Error(shown(dir) + ": not a run directory (not a directory)");
      auto run = scan_run(dir, max_);
      if (!run) return run.status();
      SADDLESCOPE_RETURN_IF_ERROR(place(std::move(*run), source, report));
    }
    return Status::Ok();
  }

  const std::deque<Planned>& planned() const { return planned_; }

 private:
  Status place(ScannedRun run, const std::string& source, MergeInputReport* report) {
    const std::string id = run.manifest.run_id;
    auto slot = lookup(id);
    if (!slot) return slot.status();
    if (!*slot) {
      plan(std::move(run), id, source);
      ++report->added;
      return Status::Ok();
    }
    const ScannedRun* same_env = *slot;
    if (same_env->fingerprint_digest != run.fingerprint_digest) {
      std::string alt = merged_run_id(id, run.manifest.fingerprint);
      auto other = lookup(alt);
      if (!other) return other.status();
      if (!*other) {
        plan(std::move(run), alt, source);
        report->renamed.emplace_back(id, alt);
        return Status::Ok();
      }
      if ((*other)->fingerprint_digest != run.fingerprint_digest)
        return Status::Error(run.path + ": its id and " + alt + " are both taken by runs of other environments (" +
                             same_env->path + ", " + (*other)->path + ")");
      same_env = *other;
    }
    auto diff = run_difference(*same_env, run);
    if (!diff) return diff.status();
    if (!diff->empty())
      return Status::Error(same_env->path + " and " + run.path + ": the same run (id and environment) with " +
                           "different results: " + *diff + "; nothing was merged");
    ++report->deduplicated;
    return Status::Ok();
  }

  void plan(ScannedRun run, const std::string& id, const std::string& source) {
    planned_ids_[id] = &planned_.emplace_back(Planned{std::move(run), id, source}).run;
  }

  // The run stored under `id`, planned or in OUT; nullptr when there is none.
  Result<const ScannedRun*> lookup(const std::string& id) {
    if (auto it = planned_ids_.find(id); it != planned_ids_.end()) return it->second;
    if (auto it = existing_.find(id); it != existing_.end()) return &it->second;
    std::string dir = runs_of(out_) + "/" + id;
    struct stat st {};
    if (!out_exists_ || ::lstat(dir.c_str(), &st) != 0) return static_cast<const ScannedRun*>(nullptr);
    auto run = scan_run(dir, kAnySize);
    if (!run) return run.status();
    return &existing_.emplace(id, std::move(*run)).first->second;
  }

  std::string out_;
  bool out_exists_;
  uint64_t max_;
  std::map<std::string, ScannedRun> existing_;  // OUT's runs that were looked up, by id
  std::deque<Planned> planned_;                 // a deque: planned_ids_ points into it
  std::map<std::string, const ScannedRun*> planned_ids_;
};

bool same_directory(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// Whether `path` is inside <study>/runs/ (both resolved as far as they exist).
bool inside_runs(const std::string& path, const std::string& study) {
  std::error_code ec1, ec2;
  fs::path p = fs::weakly_canonical(path, ec1), runs = fs::weakly_canonical(fs::path(study) / "runs", ec2);
  if (ec1 || ec2) return false;  // not resolvable: the merge's own checks will say what is wrong
  return std::mismatch(runs.begin(), runs.end(), p.begin(), p.end()).first == runs.end();
}

Status check_inputs(const std::string& out, const std::vector<std::string>& inputs) {
  if (inputs.empty()) return Status::Error("store merge: no study to merge");
  for (const auto& in : inputs) {
    SADDLESCOPE_RETURN_IF_ERROR(require_study(in));
    struct stat st {};
    if (::lstat(runs_of(in).c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      return Status::Error(runs_of(in) + ": a symbolic link (merge neither copies nor follows links)");
    if (same_directory(in, out) || inside_runs(in, out) || inside_runs(out, in))
      return Status::Error(in + ": is " + out + " (or holds it, or is held in it): a study is not merged into itself");
  }
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) return Status::Error(out + ": not a directory");
  struct stat st {};
  if (::lstat(runs_of(out).c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    return Status::Error(runs_of(out) + ": not a directory (merge writes runs there and follows no link)");
  return Status::Ok();
}

// Free space where `out` is (or will be): an error when the runs to copy do not fit.
Status check_space(const std::string& out, const std::deque<Planned>& planned) {
  uint64_t need = 0;
  for (const auto& p : planned) need += p.run.bytes + kMaxManifestBytes / 256;  // a manifest's room, roughly
  fs::path at = fs::absolute(out);
  std::error_code ec;
  while (!fs::exists(at, ec) && at.has_parent_path() && at != at.parent_path()) at = at.parent_path();
  struct statvfs vfs {};
  if (::statvfs(at.c_str(), &vfs) != 0) return Status::Ok();  // nothing known: the copy will say
  uint64_t free = uint64_t(vfs.f_bavail) * vfs.f_frsize;
  if (need > free)
    return Status::Error(out + ": the runs to merge take " + format_bytes(double(need)) + ", its file system has " +
                         format_bytes(double(free)) + " free; nothing was merged");
  return Status::Ok();
}

// Copies every planned run under <out>/runs/.merge.tmp/, renames each into place under its run lock.
// Returns how far it got: an error before the first rename leaves OUT's runs as they were.
Status copy_and_publish(const std::string& out, const std::deque<Planned>& planned) {
  std::string runs = runs_of(out), staging = runs + "/" + kStaging;
  SADDLESCOPE_RETURN_IF_ERROR(remove_tree(staging));  // left by a killed merge (we hold the merge lock)
  if (::mkdir(staging.c_str(), 0755) != 0) return Status::Error(staging + ": cannot create: " + std::strerror(errno));
  struct Cleanup {
    std::string dir;
    ~Cleanup() { (void)remove_tree(dir); }
  } cleanup{staging};
  for (const auto& p : planned) {
    RunManifest m = p.run.manifest;
    m.run_id = p.id;
    nlohmann::json& from = m.extra["merged_from"];
    if (!from.is_array()) from = nlohmann::json::array();
    from.push_back({{"study", p.source_study}, {"run_id", p.run.manifest.run_id}});
    SADDLESCOPE_RETURN_IF_ERROR(stage_run(p.run, staging + "/" + p.id, m));
  }
  std::vector<RunLock> locks;
  for (const auto& p : planned) {
    auto lock = RunLock::acquire(out, p.id);
    if (!lock) return lock.status();
    locks.push_back(std::move(*lock));
    if (file_exists(runs + "/" + p.id))
      return Status::Error(runs + "/" + p.id + ": appeared during the merge; nothing was merged (merge again)");
  }
  size_t done = 0;
  for (const auto& p : planned) {
    std::string final_dir = runs + "/" + p.id;
    Status st = injected_write_failure(final_dir);
    if (st.ok()) st = injected_rename_failure(final_dir);
    if (st.ok() && std::rename((staging + "/" + p.id).c_str(), final_dir.c_str()) != 0)
      st = Status::Error(final_dir + ": cannot rename into place: " + std::strerror(errno));
    if (!st.ok())
      return done == 0 ? st
                       : Status::Error(st.message() + fmt::format(" ({} of {} runs merged, each complete; merge "
                                                                  "again to add the rest)", done, planned.size()));
    ++done;
  }
  return sync_directory(runs);
}

Status update_catalogue(const std::string& out, const std::deque<Planned>& planned) {
  auto drift = catalog_drift(out);
  Status st = drift ? Status::Ok() : drift.status();
  if (st.ok() && !drift->whole.empty()) st = rebuild_catalog(out).status();
  for (auto it = planned.begin(); st.ok() && drift->whole.empty() && it != planned.end(); ++it)
    st = upsert_run(out, runs_of(out) + "/" + it->id);
  if (st.ok()) return st;
  return Status::Error("the runs are merged, but " + out + "/catalog.sqlite is not up to date (" + st.message() +
                       "); `saddlescope store index " + out + "` rebuilds it");
}

}  // namespace

std::string merged_run_id(const std::string& id, const nlohmann::json& fingerprint) {
  SADDLESCOPE_CHECK(validate_run_id(id).ok());
  return id.substr(0, 119) + "." + sha256_hex(fingerprint.dump()).substr(0, 8);
}

Result<std::vector<MergeInputReport>> merge_studies(const std::string& out, const std::vector<std::string>& inputs,
                                                    const MergeOptions& options) {
  SADDLESCOPE_RETURN_IF_ERROR(check_inputs(out, inputs));
  std::error_code ec;
  bool out_exists = fs::exists(out, ec);
  std::optional<FileLock> lock;
  auto take_lock = [&]() -> Status {
    auto l = lock_merge(out);
    if (!l) return l.status();
    lock.emplace(std::move(*l));
    return Status::Ok();
  };
  if (out_exists) {
    SADDLESCOPE_RETURN_IF_ERROR(take_lock());
    if (fs::exists(out + "/" + kCatalogFile, ec)) {
      auto drift = catalog_drift(out);  // a catalogue this saddlescope cannot update: say so before merging
      if (!drift) return drift.status();
    }
  }
  Planner planner(out, out_exists, options.max_file_bytes);
  std::vector<MergeInputReport> reports;
  for (const auto& in : inputs) {
    reports.push_back({in, 0, 0, {}});
    SADDLESCOPE_RETURN_IF_ERROR(planner.add_input(in, &reports.back()));
  }
  if (planner.planned().empty()) return reports;
  SADDLESCOPE_RETURN_IF_ERROR(check_space(out, planner.planned()));

  if (!out_exists) {
    fs::create_directories(out, ec);
    if (ec) return Status::Error(out + ": cannot create: " + ec.message());
    SADDLESCOPE_RETURN_IF_ERROR(take_lock());
  }
  bool made_runs = ::mkdir(runs_of(out).c_str(), 0755) == 0;
  Status st = copy_and_publish(out, planner.planned());
  if (!st.ok()) {
    if (made_runs) ::rmdir(runs_of(out).c_str());  // only if still empty: nothing was renamed into it
    if (!out_exists) {
      ::unlink((out + "/" + kMergeLockFile).c_str());
      ::rmdir(out.c_str());
    }
    return st;
  }
  SADDLESCOPE_RETURN_IF_ERROR(update_catalogue(out, planner.planned()));
  return reports;
}

}  // namespace saddlescope::store
