#include "saddlescope/store/check.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "catalog_schema.h"
#include "saddlescope/base/remove_tree.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/run_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::store {
namespace {

// A reader's message without the "<run_dir>/<file>: " or "<run_dir>: " its reader put first
// (describe() names the run and file).
std::string relative(const std::string& message, const std::string& run_dir, const std::string& file) {
  for (const std::string& prefix : {run_dir + "/" + file + ": ", run_dir + ": "})
    if (message.rfind(prefix, 0) == 0) return message.substr(prefix.size());
  return message;
}

// Temporaries below `dir`, relative to it, sorted.
std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!is_temporary_name(it->path().filename().string())) continue;
    found.push_back(fs::relative(it->path(), dir).string());
    it.disable_recursion_pending();
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string stale_reason(const RunManifest& m) {
  std::string hint = "; stale (--repair marks it interrupted)";
  if (!m.process) return "status running without a writing process" + hint;
  if (m.process->host == this_host())
    return fmt::format("status running, but no process holds its lock (pid {} on this host is gone){}", m.process->pid,
                       hint);
  return fmt::format("status running, but the last heartbeat of pid {} on {} was {:.0f} s ago{}", m.process->pid,
                     m.process->host, unix_now() - m.process->heartbeat_unix, hint);
}

// The problems of one readable run directory's files, as its manifest describes them.
void check_files(const RunDir& run, const std::string& id, std::vector<StudyProblem>* out) {
  const RunManifest& m = run.manifest();
  auto add = [&](const std::string& file, const std::string& message) {
    out->push_back({id, file, relative(message, run.path(), file)});
  };
  std::set<std::string> known = {kSnapshotsEntry, kCheckpointEntry};
  for_each_table([&](const auto& table, auto reader) {
    known.insert(table.file);
    if (!run.has(table.file)) return;
    auto rows = (run.*reader)();
    if (!rows) add(table.file, rows.status().message());
  });
  for (const auto& [file, version] : m.files) {
    if (!known.count(file)) {
      add(file, "listed in manifest.json, but not a file this saddlescope knows (written by a newer one?)");
      continue;
    }
    int want = file == kSnapshotsEntry ? kSnapshotsVersion : file == kCheckpointEntry ? kCheckpointVersion : version;
    if (version != want) add(file, fmt::format("schema version {}, this saddlescope reads version {}", version, want));
  }
  if (m.checkpoint_step && !fs::is_directory(checkpoint_dir(run.path(), *m.checkpoint_step)))
    add(kCheckpointEntry, fmt::format("checkpoint_step is {}, but {} is missing", *m.checkpoint_step,
                                      fs::relative(checkpoint_dir(run.path(), *m.checkpoint_step), run.path()).string()));
  if (m.status != RunStatus::kCompleted) return;
  if (!m.final_loss) add("manifest.json", "status completed, but no final_loss");
  if (!m.evaluation) add("manifest.json", "status completed, but no evaluation");
  std::string final_snapshot = snapshot_dir(run.path(), m.steps_completed);
  if (!run.has(kSnapshotsEntry) || !fs::is_directory(final_snapshot))
    add(kSnapshotsEntry, "status completed, but no final snapshot (" +
                             fs::relative(final_snapshot, run.path()).string() + ")");
}

// Checks one run directory: appends its state to `runs` and its problems to `problems`.
void check_run(const std::string& dir, std::vector<RunCheck>* runs, std::vector<StudyProblem>* problems) {
  std::string id = fs::path(dir).filename().string();
  if (Status valid = validate_run_id(id); !valid.ok()) problems->push_back({id, ".", valid.message()});
  auto run = RunDir::open(dir);
  if (!run) {
    runs->push_back({id, "unreadable"});
    problems->push_back({id, "manifest.json", relative(run.status().message(), dir, "manifest.json")});
    return;  // nothing says whether a writer is alive: its temporaries are left alone
  }
  RunStatus state = run->state();
  runs->push_back({id, status_name(state)});
  if (run->id() != id)
    problems->push_back({id, "manifest.json", "run_id is '" + run->id() + "', not the directory's name"});
  if (state == RunStatus::kStale) problems->push_back({id, "manifest.json", stale_reason(run->manifest())});
  check_files(*run, id, problems);
  if (state == RunStatus::kRunning) return;  // its temporaries are its writer's
  for (const auto& t : temporaries(dir))
    problems->push_back({id, t, "a temporary left by a killed writer (--repair removes it)"});
}

void check_catalogue(const std::string& study_dir, std::vector<StudyProblem>* problems) {
  auto drift = catalog_drift(study_dir);
  std::string hint = "; `saddlescope store index` (or check --repair) ";
  if (!drift) {
    problems->push_back({"", kCatalogFile, relative(drift.status().message(), study_dir, kCatalogFile)});
  } else if (!drift->whole.empty()) {
    problems->push_back({"", kCatalogFile, drift->whole + hint + "rebuilds it"});
  } else {
    for (const auto& id : drift->runs)
      problems->push_back({id, kCatalogFile, "the catalogue's rows of this run are out of date" + hint + "updates them"});
  }
  if (catalog_being_written(study_dir)) return;  // a rebuild's temporary is in use
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(study_dir, ec))
    if (e.path().filename().string().rfind(std::string(kCatalogFile) + ".tmp.", 0) == 0)
      problems->push_back({"", e.path().filename().string(), "a temporary left by a killed rebuild (--repair removes it)"});
}

}  // namespace

std::map<std::string, int> StudyCheck::counts() const {
  std::map<std::string, int> c;
  for (const auto& r : runs) ++c[r.state];
  return c;
}

std::string describe(const StudyProblem& p) {
  return (p.run_id.empty() ? "" : p.run_id + "/") + p.file + ": " + p.message;
}

Status require_study(const std::string& study_dir) {
  std::error_code ec;
  if (!fs::is_directory(fs::path(study_dir) / "runs", ec))
    return Status::Error(study_dir + ": not a study directory (no runs/ directory)");
  return Status::Ok();
}

Result<StudyCheck> check_study(const std::string& study_dir) {
  SADDLESCOPE_RETURN_IF_ERROR(require_study(study_dir));
  StudyCheck check;
  for (const auto& dir : list_run_dirs(study_dir)) check_run(dir, &check.runs, &check.problems);
  check_catalogue(study_dir, &check.problems);
  std::stable_sort(check.problems.begin(), check.problems.end(), [](const StudyProblem& a, const StudyProblem& b) {
    return std::make_pair(a.run_id.empty(), a.run_id) < std::make_pair(b.run_id.empty(), b.run_id);
  });
  return check;
}

Result<RepairReport> repair_study(const std::string& study_dir) {
  auto check = check_study(study_dir);
  if (!check) return check.status();
  RepairReport report;
  for (const RunCheck& r : check->runs) {
    std::string dir = (fs::path(study_dir) / "runs" / r.run_id).string();
    if (r.state == "running" || r.state == "unreadable" || (r.state != "stale" && temporaries(dir).empty())) continue;
    auto lock = RunLock::acquire(study_dir, r.run_id);
    if (!lock) {
      report.actions.push_back(r.run_id + ": left alone: " + lock.status().message());
      continue;
    }
    auto m = read_manifest(dir);  // again, under the lock
    if (m && m->status == RunStatus::kRunning && r.state == "stale") {
      m->status = RunStatus::kInterrupted;
      m->stopped_by = "stale";
      m->process.reset();
      m->timings.finished = utc_now();
      SADDLESCOPE_RETURN_IF_ERROR(write_manifest(dir, *m));
      report.actions.push_back(r.run_id + ": marked interrupted (stopped_by stale: it was running, its process is gone)");
    }
    for (const auto& t : temporaries(dir)) {
      SADDLESCOPE_RETURN_IF_ERROR(remove_tree((fs::path(dir) / t).string()));
      report.actions.push_back(r.run_id + ": removed " + t);
    }
  }
  auto drift = catalog_drift(study_dir);
  if (!drift) return drift.status();
  // The study's own problems other than the catalogue are a killed rebuild's temporaries: a rebuild
  // removes them.
  bool leftovers = std::any_of(check->problems.begin(), check->problems.end(), [](const StudyProblem& p) {
    return p.run_id.empty() && p.file != kCatalogFile;
  });
  if (!drift->whole.empty() || leftovers) {
    auto n = rebuild_catalog(study_dir);
    if (!n) return n.status();
    report.actions.push_back(fmt::format("{}: rebuilt ({} runs)", kCatalogFile, *n));
    return report;
  }
  for (const auto& id : drift->runs) {
    SADDLESCOPE_RETURN_IF_ERROR(upsert_run(study_dir, (fs::path(study_dir) / "runs" / id).string()));
    report.actions.push_back(fmt::format("{}: updated the rows of {}", kCatalogFile, id));
  }
  return report;
}

}  // namespace saddlescope::store
