#include "saddlescope/store/catalog.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "catalog_rows.h"
#include "catalog_schema.h"
#include "fault_hooks.h"
#include "file_lock.h"
#include "saddlescope/base/version.h"
#include "saddlescope/store/run_dir.h"
#include "sqlite_db.h"

namespace fs = std::filesystem;

namespace saddlescope::store {
namespace {

std::string catalog_path(const std::string& study_dir) { return (fs::path(study_dir) / kCatalogFile).string(); }

// The writers' exclusive lock: flock on <study>/.catalog.lock. A side file rather than SQLite's own
// locking because rebuild_catalog replaces the database file by rename: a writer that had opened the
// old file would otherwise commit into a file nobody reads any more, and its rows would be lost.
Result<FileLock> lock_catalogue(const std::string& study_dir) {
  std::string path = (fs::path(study_dir) / kCatalogLockFile).string();
  return FileLock::acquire(path, kCatalogLockWaitSeconds,
                           path + ": another process has been updating the catalogue for more than " +
                               std::to_string(int(kCatalogLockWaitSeconds)) + " s; try again later");
}

// What an existing catalogue file is: current, or to be rebuilt (older schema, not readable as a
// database at all) and why. A newer or foreign catalogue is an error naming the file and version.
struct Found {
  bool current = false;
  std::string why_rebuild;
};

// "damaged (SQLite: <message>)" when the call on `db` that just failed found the file damaged, else "".
// Such a catalogue is rebuilt, not reported as an error: it holds nothing the run directories do not.
std::string damage_of(const Db& db) {
  std::string msg = db.damage();
  return msg.empty() ? msg : "damaged (SQLite: " + msg + ")";
}

// `error`, just returned by a call on `db`, as a catalogue to rebuild when the file is damaged.
Result<Found> damaged(const Db& db, const Status& error) {
  std::string why = damage_of(db);
  if (why.empty()) return error;
  return Found{false, why};
}

Result<Found> inspect(const Db& db) {
  auto has_meta = db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  if (!has_meta) return Found{false, "not readable as SQLite (" + has_meta.status().message() + ")"};
  auto row = has_meta->step();
  if (!row) return Found{false, "not readable as SQLite (" + row.status().message() + ")"};
  if (has_meta->int64(0) == 0) return Found{false, "no meta table (schema version 1, or empty)"};
  auto meta = db.prepare("SELECT key, value FROM meta WHERE key IN ('format', 'version')");
  if (!meta) return damaged(db, meta.status());
  std::string format, version;
  Status read = meta->each_row([&] { (meta->text(0) == "format" ? format : version) = meta->text(1); });
  if (!read.ok()) return damaged(db, read);
  if (format != kCatalogFormat)
    return Status::Error(db.path() + ": not a saddlescope catalogue (meta format is '" + format + "', expected '" +
                         kCatalogFormat + "')");
  char* end = nullptr;
  long v = std::strtol(version.c_str(), &end, 10);
  std::string hint = "; delete it and run `saddlescope store index` to rebuild it with this saddlescope";
  if (version.empty() || *end != '\0')
    return Status::Error(db.path() + ": meta version is '" + version + "', not an integer" + hint);
  if (v > kCatalogSchemaVersion)
    return Status::Error(db.path() + ": catalogue schema version " + version + ", this saddlescope reads version " +
                         std::to_string(kCatalogSchemaVersion) + " (written by a newer saddlescope: use that one" +
                         hint + ")");
  if (v < kCatalogSchemaVersion)
    return Found{false, "schema version " + version + ", this saddlescope writes " +
                            std::to_string(kCatalogSchemaVersion)};
  return Found{true, ""};
}

// Opens an existing catalogue to read it and checks its version; `found` says whether it is current.
// Read-write (when permitted) although nothing is written: a writer killed mid-transaction leaves a hot
// journal, which only a connection that may write can roll back — a read-only one fails instead.
Result<Db> open_for_reading(const std::string& study_dir, Found* found) {
  std::string path = catalog_path(study_dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::Error(path + ": no catalogue; `saddlescope store index` builds it");
  auto db = Db::open(path, /*create=*/false);
  if (!db) return db.status();
  auto f = inspect(*db);
  if (!f) return f.status();
  *found = *f;
  return db;
}

Status fsync_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error(path + ": cannot open: " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : Status::Error(path + ": cannot flush: " + std::strerror(errno));
}

Status write_meta(const Db& db) {
  auto meta = db.prepare("INSERT INTO meta VALUES (?, ?)");
  if (!meta) return meta.status();
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"format", kCatalogFormat},
                                   {"version", std::to_string(kCatalogSchemaVersion)},
                                   {"written_by", toolkit_version()}})
    SADDLESCOPE_RETURN_IF_ERROR(meta->bind(1, key).bind(2, value).run());
  return Status::Ok();
}

// REQUIRES: the caller holds the catalogue's lock (lock_catalogue).
Result<int> rebuild_locked(const std::string& study_dir) {
  std::string path = catalog_path(study_dir);
  std::error_code ec;
  if (fs::exists(path, ec)) {
    auto old = Db::open(path, /*create=*/false);
    if (old) {
      auto found = inspect(*old);
      if (!found) return found.status();  // a newer saddlescope's, or not ours: refuse
    }
  }
  // Temporaries of rebuilds killed midway: nobody else writes them while we hold the lock.
  for (const auto& e : fs::directory_iterator(study_dir, ec))
    if (e.path().filename().string().rfind(std::string(kCatalogFile) + ".tmp.", 0) == 0) fs::remove(e.path(), ec);

  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int runs = 0;
  Status st = [&]() -> Status {
    auto db = Db::open(tmp, /*create=*/true);
    if (!db) return db.status();
    // No journal and no syncing while the file is private; it is synced once, before the rename.
    SADDLESCOPE_RETURN_IF_ERROR(db->exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF"));
    SADDLESCOPE_RETURN_IF_ERROR(db->exec(catalogue_schema_sql()));
    SADDLESCOPE_RETURN_IF_ERROR(db->exec("BEGIN"));
    SADDLESCOPE_RETURN_IF_ERROR(write_meta(*db));
    for (const auto& dir : list_run_dirs(study_dir)) {
      auto n = index_run(*db, dir);
      if (!n) return n.status();
    }
    SADDLESCOPE_RETURN_IF_ERROR(db->exec("COMMIT"));
    {
      auto count = db->prepare("SELECT count(*) FROM runs");
      if (!count) return count.status();
      SADDLESCOPE_RETURN_IF_ERROR(count->each_row([&] { runs = static_cast<int>(count->int64(0)); }));
    }
    return db->close();
  }();
  if (st.ok()) st = injected_fsync_failure(path);
  if (st.ok()) st = fsync_file(tmp);
  // A journal left by an upsert killed midway belongs to the file being replaced: were it left,
  // SQLite would "roll it back" into the new file. Removed first, so that no reader can pair them.
  if (st.ok()) fs::remove(path + "-journal", ec);
  if (st.ok()) st = injected_rename_failure(path);
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0)
    st = Status::Error(path + ": cannot replace: " + std::strerror(errno));
  if (!st.ok()) {
    fs::remove(tmp, ec);
    return st;
  }
  return runs;
}

// <study>/runs/<name>, or an error when `run_dir` is elsewhere.
Result<std::string> run_dir_of_study(const std::string& study_dir, const std::string& run_dir) {
  fs::path p = fs::path(run_dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // a trailing '/'
  std::error_code ec;
  fs::path runs = fs::path(study_dir) / "runs";
  if (!fs::equivalent(p.parent_path(), runs, ec))
    return Status::Error(run_dir + ": not a run directory of study " + study_dir + " (expected " + runs.string() +
                         "/<run-id>)");
  return (runs / p.filename()).string();
}

}  // namespace

std::vector<std::string> list_run_dirs(const std::string& study_dir) {
  std::vector<std::string> dirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(study_dir) / "runs", ec))
    if (e.path().filename().string()[0] != '.' && e.is_directory(ec)) dirs.push_back(e.path().string());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

Status upsert_run(const std::string& study_dir, const std::string& run_dir) {
  auto dir = run_dir_of_study(study_dir, run_dir);
  if (!dir) return dir.status();
  auto lock = lock_catalogue(study_dir);
  if (!lock) return lock.status();
  std::string path = catalog_path(study_dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) return rebuild_locked(study_dir).status();
  auto db = Db::open(path, /*create=*/false);
  if (!db) return rebuild_locked(study_dir).status();
  auto found = inspect(*db);
  if (!found) return found.status();
  if (!found->current) {
    SADDLESCOPE_RETURN_IF_ERROR(db->close());
    return rebuild_locked(study_dir).status();
  }
  // IMMEDIATE: take the write lock now, waiting (busy timeout) for SQL readers to finish.
  SADDLESCOPE_RETURN_IF_ERROR(db->exec("BEGIN IMMEDIATE"));
  auto rebuild = [&]() -> Status {
    (void)db->exec("ROLLBACK");
    SADDLESCOPE_RETURN_IF_ERROR(db->close());
    return rebuild_locked(study_dir).status();
  };
  std::vector<Source> written;
  auto n = index_run(*db, *dir, &written);
  if (!n) {
    if (!damage_of(*db).empty()) return rebuild();
    (void)db->exec("ROLLBACK");
    return n.status();
  }
  // A damaged file can pass inspect() and take the writes, yet read back other rows (fuzz_catalog
  // found one: a b-tree page out of range). Reading the run's sources back costs one index lookup;
  // when they are not what was written, the file is rebuilt from the run directories. Damage in
  // pages this upsert never reads is left for the readers to find (catalog_drift): finding it here
  // would mean reading the whole file at every run's end.
  auto recorded = recorded_sources(*db, fs::path(*dir).filename().string());
  if (!recorded || *recorded != written) return rebuild();
  Status commit = db->exec("COMMIT");
  if (!commit.ok()) return damage_of(*db).empty() ? commit : rebuild();
  return db->close();
}

bool catalog_being_written(const std::string& study_dir) {
  return FileLock::held((fs::path(study_dir) / kCatalogLockFile).string());
}

Result<int> rebuild_catalog(const std::string& study_dir) {
  auto lock = lock_catalogue(study_dir);
  if (!lock) return lock.status();
  return rebuild_locked(study_dir);
}

Result<std::vector<CatalogProblem>> catalog_problems(const std::string& study_dir) {
  Found found;
  auto db = open_for_reading(study_dir, &found);
  if (!db) return db.status();
  std::string rebuild = "; `saddlescope store index` rebuilds it";
  if (!found.current) return Status::Error(db->path() + ": " + found.why_rebuild + rebuild);
  std::vector<CatalogProblem> problems;
  auto st = db->prepare("SELECT run_id, file, error FROM problems ORDER BY run_id, file");
  Status read = st ? st->each_row([&] { problems.push_back({st->text(0), st->text(1), st->text(2)}); }) : st.status();
  if (read.ok()) return problems;
  std::string damage = damage_of(*db);
  return damage.empty() ? read : Status::Error(db->path() + ": " + damage + rebuild);
}

namespace {

// The drift of the runs on disk from catalogue `db`, read and current.
Result<CatalogDrift> compare(const std::string& study_dir, const Db& db) {
  CatalogDrift drift;
  std::set<std::string> on_disk;
  for (const auto& dir : list_run_dirs(study_dir)) {
    std::string id = fs::path(dir).filename().string();
    on_disk.insert(id);
    auto run = RunDir::open(dir);
    if (run && run->state() == RunStatus::kRunning) continue;
    auto recorded = recorded_sources(db, id);
    if (!recorded) return recorded.status();
    if (*recorded != run_sources(dir, run ? &run->manifest() : nullptr)) drift.runs.push_back(id);
  }
  auto indexed = db.prepare("SELECT run_id FROM sources UNION SELECT run_id FROM runs ORDER BY 1");
  if (!indexed) return indexed.status();
  SADDLESCOPE_RETURN_IF_ERROR(indexed->each_row([&] {
    if (!on_disk.count(indexed->text(0))) drift.runs.push_back(indexed->text(0));  // its directory is gone
  }));
  return drift;
}

}  // namespace

Result<CatalogDrift> catalog_drift(const std::string& study_dir) {
  std::error_code ec;
  if (!fs::exists(catalog_path(study_dir), ec)) return CatalogDrift{"missing", {}};
  Found found;
  auto db = open_for_reading(study_dir, &found);
  if (!db) return db.status();
  if (!found.current) return CatalogDrift{found.why_rebuild, {}};
  auto drift = compare(study_dir, *db);
  std::string damage = drift ? "" : damage_of(*db);
  if (!damage.empty()) return CatalogDrift{damage, {}};
  return drift;
}

}  // namespace saddlescope::store
